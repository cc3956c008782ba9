defmodule ExZarr.Storage.RangeTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Range

  doctest Range

  @value "0123456789"

  test "resolve clamps every range to the value, as zarr-python's stores do" do
    assert Range.resolve(nil, 10) == {0, 10}
    assert Range.resolve({2, 3}, 10) == {2, 3}
    assert Range.resolve({8, 5}, 10) == {8, 2}
    assert Range.resolve({10, 1}, 10) == {10, 0}
    assert Range.resolve({:suffix, 3}, 10) == {7, 3}
    assert Range.resolve({:suffix, 30}, 10) == {0, 10}
    assert Range.resolve({:suffix, 0}, 10) == {10, 0}
    assert Range.resolve({0, 4}, 0) == {0, 0}
  end

  test "slice agrees with resolve for every range of a small value" do
    for offset <- 0..12, length <- 0..12 do
      {o, l} = Range.resolve({offset, length}, byte_size(@value))
      assert Range.slice(@value, {offset, length}) == binary_part(@value, o, l)
      assert o + l <= byte_size(@value)
    end

    for n <- 0..12 do
      expected = binary_part(@value, max(10 - n, 0), min(n, 10))
      assert Range.slice(@value, {:suffix, n}) == expected
    end
  end

  test "a list of ranges gives the list of their parts; nil is the whole value" do
    assert Range.slice(@value, [{0, 2}, {:suffix, 2}, nil]) == ["01", "89", @value]
    assert Range.slice(@value, nil) == @value
    assert Range.slice(@value, []) == []
  end
end
