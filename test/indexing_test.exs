defmodule ExZarr.IndexingTest do
  use ExUnit.Case, async: true
  doctest ExZarr.Indexing

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
