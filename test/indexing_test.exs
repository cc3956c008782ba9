defmodule ExZarr.IndexingTest do
  use ExUnit.Case, async: true
  doctest ExZarr.Indexing

  import Bitwise

  alias ExZarr.Indexing
  alias ExZarr.Test.Prop

  test "defaults select the whole array" do
    assert {:ok, %{start: {0, 0}, stop: {3, 4}, shape: {3, 4}}} = Indexing.selection({3, 4}, [])
  end

  test "invalid selections are errors" do
    assert {:error, {:out_of_bounds, _}} = Indexing.selection({3}, start: {2}, stop: {1})
    assert {:error, {:invalid_start, {-1}, ndim: 1}} = Indexing.selection({3}, start: {-1})
    assert {:error, {:invalid_stop, {1, 1}, ndim: 1}} = Indexing.selection({3}, stop: {1, 1})
    assert {:error, {:invalid_start, [0], ndim: 1}} = Indexing.selection({3}, start: [0])
  end

  test "0-d arrays have one chunk and one element" do
    assert {:ok, sel} = Indexing.selection({}, [])
    assert [%{chunk: {}, chunk_start: {}, out_start: {}, count: {}}] = Indexing.plan(sel, {})
    assert Enum.to_list(Indexing.chunk_coords({}, {})) == [{}]
  end

  test "empty selections and empty arrays touch no chunk" do
    {:ok, sel} = Indexing.selection({10, 10}, start: {3, 3}, stop: {3, 8})
    assert Indexing.plan(sel, {4, 4}) == []
    assert Enum.to_list(Indexing.chunk_coords({0, 5}, {2, 2})) == []
  end

  test "valid_chunk? checks the grid" do
    assert Indexing.valid_chunk?({10, 10}, {4, 4}, {2, 2})
    refute Indexing.valid_chunk?({10, 10}, {4, 4}, {3, 0})
    refute Indexing.valid_chunk?({10, 10}, {4, 4}, {0})
  end

  # Every element of the selection is covered exactly once, by the chunk that holds it,
  # at the right offset within that chunk and within the output.
  test "plan covers each selected element exactly once (property)" do
    gen =
      :proper_types.bind(
        :proper_types.integer(1, 3),
        fn ndim ->
          :proper_types.bind(
            {Prop.tuple_of(ndim, 1, 9), Prop.tuple_of(ndim, 1, 5), Prop.tuple_of(ndim, 0, 100),
             Prop.tuple_of(ndim, 0, 100)},
            fn {shape, chunks, a, b} ->
              start = zip(shape, a, fn s, x -> rem(x, s + 1) end)
              stop = zip(shape, b, fn s, x -> rem(x, s + 1) end)
              {shape, chunks, zip(start, stop, &min/2), zip(start, stop, &max/2)}
            end,
            false
          )
        end,
        false
      )

    Prop.check(gen, fn {shape, chunks, start, stop} ->
      {:ok, sel} = Indexing.selection(shape, start: start, stop: stop)
      parts = Indexing.plan(sel, chunks)

      mapped =
        for part <- parts, local <- box(part.count) do
          out = zip(part.out_start, local, &+/2)
          global = zip(sel.start, out, &+/2)
          in_chunk = zip(part.chunk_start, local, &+/2)
          expected = zip(part.chunk, chunks, &*/2) |> zip(in_chunk, &+/2)

          {out,
           global == expected and Enum.all?(zip_list(in_chunk, chunks), fn {i, c} -> i < c end)}
        end

      outs = Enum.map(mapped, &elem(&1, 0))

      Enum.all?(mapped, &elem(&1, 1)) and Enum.sort(outs) == Enum.sort(box(sel.shape)) and
        length(Enum.uniq(outs)) == length(outs)
    end)
  end

  # resize_boxes/3: the delete boxes hold exactly the old grid's chunks outside the new grid,
  # the clear boxes exactly the kept chunks that a shrunk dimension cuts through, each once;
  # box_coords/1 and in_boxes?/2 agree with the boxes.
  test "resize_boxes splits the old grid as a brute force does (property)" do
    gen =
      :proper_types.bind(
        :proper_types.integer(0, 3),
        fn ndim ->
          {Prop.tuple_of(ndim, 0, 9), Prop.tuple_of(ndim, 0, 9), Prop.tuple_of(ndim, 1, 4)}
        end,
        false
      )

    Prop.check(gen, fn {old, new, chunks} ->
      %{clear: clear, delete: delete} = Indexing.resize_boxes(old, new, chunks)
      old_grid = Indexing.chunk_coords(old, chunks) |> Enum.to_list()

      cut? = fn coords ->
        Enum.any?(0..(tuple_size(old) - 1)//1, fn d ->
          elem(new, d) < elem(old, d) and rem(elem(new, d), elem(chunks, d)) != 0 and
            elem(coords, d) == div(elem(new, d), elem(chunks, d))
        end)
      end

      {kept, outside} = Enum.split_with(old_grid, &Indexing.valid_chunk?(new, chunks, &1))
      listed = fn boxes -> Enum.flat_map(boxes, &Enum.to_list(Indexing.box_coords(&1))) end

      Enum.sort(listed.(delete)) == Enum.sort(outside) and
        Enum.sort(listed.(clear)) == Enum.sort(Enum.filter(kept, cut?)) and
        Indexing.box_size(delete) == length(outside) and
        Enum.all?(old_grid, fn c ->
          Indexing.in_boxes?(c, delete) == c in outside and
            Indexing.in_boxes?(c, clear) == (c in kept and cut?.(c))
        end)
    end)
  end

  test "box_coords of an empty box does no work, however large the box" do
    assert Enum.to_list(Indexing.box_coords({{0, 0, 0}, {1 <<< 40, 1 <<< 40, 0}})) == []
    assert Indexing.box_size({{0, 0}, {1 <<< 62, 1 <<< 62}}) == 1 <<< 124
  end

  # contiguous/3 answers {:ok, first, n} exactly when the box's linear indices are first..first+n-1.
  test "contiguous finds the boxes that are one run of elements (property)" do
    gen =
      :proper_types.bind(
        :proper_types.integer(1, 3),
        fn ndim ->
          :proper_types.bind(
            {Prop.tuple_of(ndim, 1, 4), Prop.tuple_of(ndim, 0, 100), Prop.tuple_of(ndim, 0, 100)},
            fn {shape, a, b} ->
              start = zip(shape, a, fn s, x -> rem(x, s) end)
              count = zip(zip(shape, start, &-/2), b, fn room, x -> 1 + rem(x, room) end)
              {shape, start, count}
            end,
            false
          )
        end,
        false
      )

    Prop.check(gen, fn {shape, start, count} ->
      strides =
        shape |> Tuple.to_list() |> Enum.reverse() |> Enum.scan(1, &(&1 * &2)) |> Enum.reverse()

      strides = tl(strides) ++ [1]

      linear =
        for local <- box(count) do
          zip_list(zip(start, local, &+/2), List.to_tuple(strides))
          |> Enum.map(fn {i, s} -> i * s end)
          |> Enum.sum()
        end

      first = Enum.min(linear)
      run? = Enum.sort(linear) == Enum.to_list(first..(first + length(linear) - 1))

      case Indexing.contiguous(shape, start, count) do
        {:ok, ^first, n} -> run? and n == length(linear)
        {:ok, _, _} -> false
        :error -> not run?
      end
    end)
  end

  defp box(shape) do
    shape
    |> Tuple.to_list()
    |> Enum.reduce([[]], fn n, acc -> for prefix <- acc, i <- 0..(n - 1)//1, do: prefix ++ [i] end)
    |> Enum.map(&List.to_tuple/1)
  end

  defp zip_list(a, b), do: Enum.zip(Tuple.to_list(a), Tuple.to_list(b))
  defp zip(a, b, f), do: zip_list(a, b) |> Enum.map(fn {x, y} -> f.(x, y) end) |> List.to_tuple()
end
