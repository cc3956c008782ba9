defmodule ExZarr.Codec.ItemsTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codec.Items
  alias ExZarr.Shape

  doctest Items

  # Every index of `shape` in C order.
  defp indices(shape) do
    shape
    |> Tuple.to_list()
    |> Enum.reduce([[]], fn n, acc -> for idx <- acc, i <- 0..(n - 1)//1, do: idx ++ [i] end)
    |> Enum.map(&List.to_tuple/1)
  end

  defp items(shape, tag),
    do: indices(shape) |> Enum.map(&"#{tag}#{inspect(&1)}") |> List.to_tuple()

  defp add(a, b),
    do: a |> Tuple.to_list() |> Enum.zip(Tuple.to_list(b)) |> Enum.map(fn {x, y} -> x + y end)

  # What assemble/3 must give, element by element.
  defp model(shape, base, pieces) do
    for idx <- indices(shape) do
      hit =
        Enum.find_value(pieces, fn {src, src_shape, src_start, start, count} ->
          rel =
            idx
            |> Tuple.to_list()
            |> Enum.zip(Tuple.to_list(start))
            |> Enum.map(fn {i, s} -> i - s end)

          if Enum.all?(Enum.zip(rel, Tuple.to_list(count)), fn {r, c} -> r >= 0 and r < c end) do
            at = add(List.to_tuple(rel), src_start) |> List.to_tuple()

            case src do
              {:fill, fill} -> {:ok, fill}
              src -> {:ok, elem(src, Shape.ravel(at, src_shape))}
            end
          end
        end)

      case {hit, base} do
        {{:ok, item}, _} -> item
        {nil, {:fill, fill}} -> fill
        {nil, base} -> elem(base, Shape.ravel(idx, shape))
      end
    end
  end

  test "fill? is true only when every item is the fill value" do
    assert Items.fill?({"", ""}, "")
    assert Items.fill?([], "x")
    refute Items.fill?({"", "a"}, "")
    refute Items.fill?(["a"], "")
  end

  test "fortran_to_c reorders items of any shape, and is undone on the reversed shape" do
    for shape <- [{}, {1}, {5}, {2, 3}, {3, 1, 2}, {2, 2, 2, 2}] do
      c_order = items(shape, "c")
      # The Fortran-order tuple of `shape` is the C-order tuple of the reversed shape.
      reversed = shape |> Tuple.to_list() |> Enum.reverse() |> List.to_tuple()

      fortran =
        indices(reversed)
        |> Enum.map(fn idx ->
          c_idx = idx |> Tuple.to_list() |> Enum.reverse() |> List.to_tuple()
          elem(c_order, Shape.ravel(c_idx, shape))
        end)
        |> List.to_tuple()

      assert Items.fortran_to_c(fortran, shape) == Tuple.to_list(c_order)
      assert Items.fortran_to_c(c_order, reversed) == Tuple.to_list(fortran)
    end
  end

  test "assemble agrees with an element-by-element model, on boxes of chunk grids" do
    shape = {4, 6}
    src = items({2, 3}, "s")

    cases = [
      [],
      [{src, {2, 3}, {0, 0}, {0, 0}, {2, 3}}],
      [{src, {2, 3}, {1, 1}, {2, 3}, {1, 2}}, {src, {2, 3}, {0, 0}, {0, 0}, {1, 3}}],
      [{{:fill, "f"}, {2, 3}, {0, 0}, {2, 0}, {2, 3}}, {src, {2, 3}, {0, 1}, {2, 3}, {2, 2}}]
    ]

    for pieces <- cases, base <- [{:fill, "-"}, items(shape, "b")] do
      assert Items.assemble(shape, base, pieces) == model(shape, base, pieces),
             inspect({pieces, base})
    end
  end

  test "a shape with an empty axis has no items, however long the other axes are" do
    for shape <- [{4_294_967_296, 0, 8}, {0, 4_294_967_296}, {3, 0}] do
      assert Items.assemble(shape, {:fill, ""}, []) == []
    end
  end

  test "string arrays with an empty axis beside a huge one read and write nothing, at once" do
    {:ok, a} =
      ExZarr.create(
        storage: :memory,
        dtype: :string,
        shape: {4_294_967_296, 0, 8},
        chunks: {1, 1, 1}
      )

    assert ExZarr.Array.get_slice(a) == {:ok, []}
    assert ExZarr.Array.set_slice(a, []) == :ok
  end

  test "a zero-dimensional array has one item" do
    assert Items.assemble({}, {:fill, "-"}, []) == ["-"]
    assert Items.assemble({}, {:fill, "-"}, [{{"x"}, {}, {}, {}, {}}]) == ["x"]
  end
end
