defmodule ExZarr.ShapeTest do
  use ExUnit.Case, async: true

  alias ExZarr.Shape

  doctest ExZarr.Shape

  test "ravel and unravel are inverse over a shape, in C order" do
    shape = {3, 1, 4, 2}

    for i <- 0..(Shape.product(shape) - 1) do
      assert Shape.ravel(Shape.unravel(i, shape), shape) == i
    end

    assert Enum.map(0..3, &Shape.unravel(&1, {2, 2})) == [{0, 0}, {0, 1}, {1, 0}, {1, 1}]
  end

  test "strides, zeros, zero?, sub, mul and reverse; empty shapes" do
    assert Shape.strides({2, 3, 4}) == {12, 4, 1}
    assert Shape.strides({}) == {}
    assert Shape.product({}) == 1
    assert Shape.zeros(3) == {0, 0, 0}
    assert Shape.zero?({0, 0}) and not Shape.zero?({0, 1})
    assert Shape.sub({5, 7}, {2, 3}) == {3, 4}
    assert Shape.mul({5, 7}, {2, 3}) == {10, 21}
    assert Shape.reverse({1, 2, 3}) == {3, 2, 1}
  end
end
