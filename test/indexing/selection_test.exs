defmodule ExZarr.Indexing.SelectionTest do
  use ExUnit.Case, async: true
  doctest ExZarr.Indexing.Selection

  alias ExZarr.Indexing.Selection
  alias ExZarr.Test.Prop

  # -- a naive reference: the global coordinates of every output element, in output order --

  defp ref_axis(i, size) when is_integer(i), do: [if(i < 0, do: i + size, else: i)]
  defp ref_axis(:all, size), do: Enum.to_list(0..(size - 1)//1)

  defp ref_axis(%Range{first: f, last: l, step: s}, size) do
    f = if f < 0, do: f + size, else: f
    l = if l < 0, do: l + size, else: l
    Enum.to_list(f..l//s)
  end

  defp ref_axis([b | _] = mask, _size) when is_boolean(b),
    do: for({true, i} <- Enum.with_index(mask), do: i)

  defp ref_axis(list, size) when is_list(list), do: Enum.flat_map(list, &ref_axis(&1, size))

  defp product(lists) do
    Enum.reduce(Enum.reverse(lists), [[]], fn l, acc ->
      for i <- l, rest <- acc, do: [i | rest]
    end)
  end

  defp ref_orthogonal(shape, entries) do
    entries
    |> Enum.with_index()
    |> Enum.map(fn {e, k} -> ref_axis(e, elem(shape, k)) end)
    |> product()
  end

  # -- what a plan says: output element -> global coordinates, after the order ---------------

  defp box(count),
    do: count |> Tuple.to_list() |> Enum.map(&Enum.to_list(0..(&1 - 1)//1)) |> product()

  defp positions(start, n) when is_integer(start), do: Enum.to_list(start..(start + n - 1)//1)
  defp positions(list, _n), do: for(<<i::64-little <- list>>, do: i)

  defp unravel(i, shape) do
    shape
    |> Tuple.to_list()
    |> Enum.reverse()
    |> Enum.reduce({[], i}, fn n, {acc, rest} -> {[rem(rest, n) | acc], div(rest, n)} end)
    |> elem(0)
  end

  # [{out_coords, chunk_coords, local_coords}] of every element of every part.
  defp elements(parts, chunks) do
    for part <- parts, i <- box(part.count) do
      local =
        case part.chunk_start do
          {:flat, list} ->
            unravel(
              Enum.at(positions(list, 0), hd(i)),
              ExZarr.Indexing.chunk_shape(chunks, part.chunk)
            )

          start ->
            Enum.zip_with([Tuple.to_list(start), Tuple.to_list(part.count), i], fn [s, n, j] ->
              Enum.at(positions(s, n), j)
            end)
        end

      {Enum.zip_with(Tuple.to_list(part.out_start), i, &+/2), Tuple.to_list(part.chunk), local}
    end
  end

  # (a chunk's origin from ExZarr.Indexing, checked against the spec's wording in
  # test/indexing/grid_test.exs)
  defp global(chunk, local, chunks),
    do:
      Enum.zip_with(
        Tuple.to_list(ExZarr.Indexing.chunk_origin(chunks, List.to_tuple(chunk))),
        local,
        &+/2
      )

  defp ordered(map, shape, nil), do: for(o <- box(shape), do: Map.fetch!(map, o))

  defp ordered(map, shape, {:orthogonal, read, _write}) do
    reads = Enum.zip_with(Tuple.to_list(read), Tuple.to_list(shape), &positions(&1, &2))
    for o <- box(shape), do: Map.fetch!(map, Enum.zip_with(reads, o, &Enum.at/2))
  end

  defp ordered(map, {n}, {:points, order}) do
    order = positions(order, n)
    back = order |> Enum.with_index() |> Map.new()
    for i <- 0..(n - 1)//1, do: Map.fetch!(map, [Map.fetch!(back, i)])
  end

  defp plan_globals(sel, chunks) do
    {parts, order} = Selection.plan(sel, chunks)
    elems = elements(parts, chunks)
    map = Map.new(elems, fn {o, c, l} -> {o, global(c, l, chunks)} end)

    valid? =
      length(Enum.uniq_by(parts, & &1.chunk)) == length(parts) and
        map_size(map) == length(elems) and
        Enum.all?(elems, fn {_, c, l} ->
          full = ExZarr.Indexing.chunk_shape(chunks, List.to_tuple(c))
          Enum.zip(l, Tuple.to_list(full)) |> Enum.all?(fn {x, c} -> x >= 0 and x < c end)
        end)

    {valid?, ordered(map, sel.shape, order), parts, order}
  end

  # -- generators ---------------------------------------------------------------------------

  defp rand_entry(size) do
    case :rand.uniform(6) do
      1 -> :rand.uniform(2 * size) - 1 - size
      2 -> :all
      3 -> rand_range(size)
      4 -> for _ <- 1..:rand.uniform(5)//1, do: :rand.uniform(2 * size) - 1 - size
      5 -> for _ <- 1..size, do: :rand.uniform(2) == 1
      6 -> Enum.to_list(0..(size - 1)//:rand.uniform(3))
    end
  end

  defp rand_range(size) do
    a = :rand.uniform(size) - 1
    b = a + :rand.uniform(size - a) - 1
    a = if :rand.uniform(2) == 1, do: a - size, else: a
    b = if :rand.uniform(2) == 1, do: b - size, else: b
    a..b//:rand.uniform(4)
  end

  defp rand_case(seed) do
    :rand.seed(:exsss, {seed, seed * 7 + 1, 3})
    ndim = :rand.uniform(3)
    shape = List.to_tuple(for _ <- 1..ndim, do: :rand.uniform(9))
    chunks = List.to_tuple(for _ <- 1..ndim, do: :rand.uniform(4))
    {shape, chunks}
  end

  # As rand_case/1, the grid rectilinear half the time.
  defp rand_grid_case(seed) do
    {shape, _} = rand_case(seed)
    {shape, ExZarr.Test.Grids.random(shape)}
  end

  defp seeds, do: :proper_types.integer(1, 1_000_000_000)

  # -- properties ---------------------------------------------------------------------------

  test "orthogonal plans select what the reference selects, each chunk once (property)" do
    Prop.check(
      seeds(),
      fn seed ->
        {shape, chunks} = rand_grid_case(seed)
        entries = for k <- 0..(tuple_size(shape) - 1), do: rand_entry(elem(shape, k))
        {:ok, sel} = Selection.orthogonal(shape, List.to_tuple(entries))
        {valid?, got, _parts, _order} = plan_globals(sel, chunks)
        valid? and got == ref_orthogonal(shape, entries)
      end,
      300
    )
  end

  test "the write order is the inverse of the read order (property)" do
    Prop.check(seeds(), fn seed ->
      :rand.seed(:exsss, {seed, 1, 2})
      size = :rand.uniform(9)
      list = for _ <- 1..:rand.uniform(8), do: :rand.uniform(size) - 1
      {:ok, sel} = Selection.orthogonal({size}, {list})

      case Selection.plan(sel, {2}) do
        {_, nil} ->
          list == Enum.sort(list)

        {_, {:orthogonal, {read}, {write}}} ->
          n = length(list)
          r = positions(read, n)
          w = positions(write, n)
          Enum.map(r, &Enum.at(w, &1)) == Enum.to_list(0..(n - 1))
      end
    end)
  end

  test "stepped boxes select every step-th element (property)" do
    Prop.check(
      seeds(),
      fn seed ->
        {shape, chunks} = rand_grid_case(seed)
        start = Tuple.to_list(shape) |> Enum.map(&(:rand.uniform(&1 + 1) - 1))

        stop =
          Enum.zip_with(start, Tuple.to_list(shape), fn a, s ->
            a + :rand.uniform(s - a + 1) - 1
          end)

        step = Enum.map(start, fn _ -> :rand.uniform(4) end)

        {:ok, sel} =
          Selection.slice(shape,
            start: List.to_tuple(start),
            stop: List.to_tuple(stop),
            step: List.to_tuple(step)
          )

        expected =
          Enum.zip_with([start, stop, step], fn [a, b, s] -> Enum.to_list(a..(b - 1)//s) end)
          |> product()

        {valid?, got, _, _} = plan_globals(sel, chunks)
        valid? and got == expected
      end,
      300
    )
  end

  test "point plans select the points in order, grouped by chunk (property)" do
    Prop.check(
      seeds(),
      fn seed ->
        {shape, chunks} = rand_grid_case(seed)

        points =
          for _ <- 0..:rand.uniform(12)//1,
              do:
                shape
                |> Tuple.to_list()
                |> Enum.map(&(:rand.uniform(2 * &1) - 1 - &1))
                |> List.to_tuple()

        {:ok, sel} = Selection.coordinates(shape, points)
        {valid?, got, _, _} = plan_globals(sel, chunks)

        expected =
          for p <- points,
              do:
                Enum.zip_with(
                  Tuple.to_list(p),
                  Tuple.to_list(shape),
                  &if(&1 < 0, do: &1 + &2, else: &1)
                )

        valid? and got == expected
      end,
      300
    )
  end

  test "mask plans select the non-zero bytes in C order (property)" do
    Prop.check(seeds(), fn seed ->
      {shape, chunks} = rand_grid_case(seed)
      n = ExZarr.Shape.product(shape)
      mask = for _ <- 1..n, into: <<>>, do: <<Enum.random([0, 0, 1, 255])>>
      {:ok, sel} = Selection.mask(shape, mask)
      {valid?, got, _, _} = plan_globals(sel, chunks)

      expected =
        for {b, i} <- Enum.with_index(:binary.bin_to_list(mask)), b != 0, do: unravel(i, shape)

      valid? and got == expected
    end)
  end

  # Blocks select exactly the elements of the chunks in their ranges, over either grid.
  test "block selections select the elements of their chunks (property)" do
    Prop.check(
      seeds(),
      fn seed ->
        {shape, chunks} = rand_grid_case(seed)
        grid = ExZarr.Indexing.grid_shape(shape, chunks)

        ranges =
          for k <- 0..(tuple_size(shape) - 1) do
            n = elem(grid, k)
            a = :rand.uniform(n) - 1
            a..(a + :rand.uniform(n - a) - 1)//1
          end

        {:ok, sel} = Selection.blocks(shape, chunks, List.to_tuple(ranges))
        {valid?, got, _, _} = plan_globals(sel, chunks)

        expected =
          box(shape)
          |> Enum.filter(fn index ->
            {c, _} = ExZarr.Test.Grids.locate(chunks, shape, List.to_tuple(index))
            Enum.zip(Tuple.to_list(c), ranges) |> Enum.all?(fn {ci, r} -> ci in r end)
          end)

        valid? and got == expected
      end,
      300
    )
  end

  # A shard's reader plans its part over the inner chunks: the same elements, each inner chunk
  # filling a box of the part's output.
  test "subplans over inner chunks cover their part exactly (property)" do
    Prop.check(
      seeds(),
      fn seed ->
        {shape, inner} = rand_case(seed)

        # shards of a regular grid, or of a rectilinear one with edges of whole inner chunks
        chunks =
          if :rand.uniform(2) == 1 do
            inner |> Tuple.to_list() |> Enum.map(&(&1 * :rand.uniform(3))) |> List.to_tuple()
          else
            shape
            |> Tuple.to_list()
            |> Enum.zip(Tuple.to_list(inner))
            |> Enum.map(fn {n, c} ->
              for _ <- 0..div(n, c)//1, do: c * :rand.uniform(3)
            end)
            |> List.to_tuple()
          end

        sel =
          if :rand.uniform(2) == 1 do
            entries = for k <- 0..(tuple_size(shape) - 1), do: rand_entry(elem(shape, k))
            {:ok, sel} = Selection.orthogonal(shape, List.to_tuple(entries))
            sel
          else
            points =
              for _ <- 0..:rand.uniform(12)//1,
                  do:
                    shape
                    |> Tuple.to_list()
                    |> Enum.map(&(:rand.uniform(&1) - 1))
                    |> List.to_tuple()

            {:ok, sel} = Selection.coordinates(shape, points)
            sel
          end

        {parts, _} = Selection.plan(sel, chunks, [inner])

        Enum.all?(parts, fn part ->
          whole = elements([part], chunks) |> Enum.map(fn {o, _c, l} -> {o, l} end) |> Enum.sort()
          shard = ExZarr.Indexing.chunk_shape(chunks, part.chunk)
          subs = Selection.subplan(part.chunk_start, part.out_start, part.count, shard, [inner])

          got =
            elements(subs, inner)
            |> Enum.map(fn {o, c, l} -> {o, global(c, l, inner)} end)
            |> Enum.sort()

          got == whole
        end)
      end,
      300
    )
  end

  # -- errors -------------------------------------------------------------------------------

  test "bad selections name the axis and the value" do
    assert {:error, {:index_out_of_range, axis: 1, index: -6, size: 5}} =
             Selection.orthogonal({4, 5}, {0, -6})

    assert {:error, {:index_out_of_range, axis: 0, index: 9, size: 4}} =
             Selection.orthogonal({4, 5}, {0..9, :all})

    assert {:error, {:invalid_step, axis: 0, step: -1, range: _}} =
             Selection.orthogonal({4, 5}, {3..0, :all})

    assert {:error, {:wrong_mask_length, axis: 1, length: 2, size: 5}} =
             Selection.orthogonal({4, 5}, {:all, [true, false]})

    assert {:error, {:index_out_of_range, axis: 1, index: 7, size: 5}} =
             Selection.orthogonal({4, 5}, {:all, [1, 7]})

    assert {:error, {:invalid_selection, axis: 1, entry: "x"}} =
             Selection.orthogonal({4, 5}, {:all, "x"})

    assert {:error, {:invalid_selection, axis: 0, entry: :a}} =
             Selection.orthogonal({4, 5}, {[1, :a], :all})

    assert {:error, {:wrong_selection_rank, got: 1, ndim: 2}} = Selection.orthogonal({4, 5}, {0})
    assert {:error, {:invalid_step, axis: 1, step: 0}} = Selection.slice({4, 5}, step: {1, 0})
    assert {:error, {:invalid_step, {1}, ndim: 2}} = Selection.slice({4, 5}, step: {1})
    assert {:error, {:out_of_bounds, _}} = Selection.slice({4, 5}, start: {5, 0})

    assert {:error, {:wrong_mask_size, expected: 20, got: 3}} =
             Selection.mask({4, 5}, <<1, 2, 3>>)

    assert {:error, {:wrong_point_rank, point: 1, got: {1}, ndim: 2}} =
             Selection.coordinates({4, 5}, [{0, 0}, {1}])

    assert {:error, {:invalid_point, point: 0, got: [1, 2]}} =
             Selection.coordinates({4, 5}, [[1, 2]])

    # (the native pass refuses the point; the error names it as the Elixir pass does)
    for {bad, axis} <- [{{0, -6}, 1}, {{2 ** 70, 0}, 0}] do
      assert {:error, {:index_out_of_range, point: 2, axis: ^axis, index: _, size: _}} =
               Selection.coordinates({4, 5}, [{0, 0}, {3, -5}, bad])
    end

    for bad <- [{1.0, 0}, {0, :a}] do
      assert {:error, {:invalid_point, point: 2, got: ^bad}} =
               Selection.coordinates({4, 5}, [{0, 0}, {3, -5}, bad])
    end

    assert {:error, {:invalid_points, [{0, 0} | :tail]}} =
             Selection.coordinates({4, 5}, [{0, 0} | :tail])

    assert {:error, {:invalid_step, axis: 0, step: 2}} =
             Selection.blocks({4, 5}, {2, 2}, {0..1//2, 0})

    assert {:error, {:index_out_of_range, axis: 1, index: 3, size: 3}} =
             Selection.blocks({4, 5}, {2, 2}, {0, 3})
  end

  test "inner_boxes gives subplan's parts with their inner chunks' linear indices" do
    # a shard {8, 6} of inner chunks {4, 3} (grid {2, 2}), in an array {16, 12}
    ravel = fn {r, c} -> r * 2 + c end

    expected = fn start, out, count ->
      for p <- Selection.subplan(start, out, count, {8, 6}, [{4, 3}]),
          do: {ravel.(p.chunk), {p.chunk_start, p.out_start, p.count}}
    end

    points = [{9, 1}, {3, 5}, {8, 0}, {0, 0}, {15, 11}, {12, 7}, {7, 2}]
    {:ok, sel} = Selection.coordinates({16, 12}, points)
    {parts, _order} = Selection.plan(sel, {8, 6}, [{4, 3}])

    for %{chunk_start: start, out_start: out, count: count} <- parts do
      boxes = Selection.inner_boxes(start, out, count, {8, 6}, [{4, 3}])
      assert boxes == expected.(start, out, count)
      assert boxes != []
    end

    assert Selection.inner_boxes({1, 2}, {5, 0}, {6, 3}, {8, 6}, [{4, 3}]) ==
             expected.({1, 2}, {5, 0}, {6, 3})

    # points not grouped by these levels: runs of consecutive points, as subplan gives them
    flat = {:flat, <<47::64-little, 0::64-little, 46::64-little>>}
    assert Selection.inner_boxes(flat, {2}, {3}, {8, 6}, [{4, 3}]) == expected.(flat, {2}, {3})
  end

  test "an empty range or list selects nothing and touches no chunk" do
    {:ok, sel} = Selection.orthogonal({4, 5}, {2..1//1, []})
    assert Selection.selection_shape(sel) == {0, 0}
    assert Selection.plan(sel, {2, 2}) == {[], nil}
    {:ok, sel} = Selection.coordinates({4, 5}, [])
    assert Selection.plan(sel, {2, 2}) == {[], nil}
  end

  test "integer entries drop their axis; 0-d arrays take the empty tuple" do
    {:ok, sel} = Selection.orthogonal({4, 5, 6}, {1, :all, [0, 2]})
    assert Selection.selection_shape(sel) == {5, 2}
    assert sel.shape == {1, 5, 2}
    {:ok, sel} = Selection.orthogonal({}, {})
    assert Selection.selection_shape(sel) == {}
    assert {[%{chunk: {}}], nil} = Selection.plan(sel, {})
  end

  test "runs of a chunk stay boxes" do
    {:ok, sel} = Selection.orthogonal({10, 10}, {[2, 3, 4], 1})
    assert {[%{chunk_start: {2, 1}, count: {3, 1}}], nil} = Selection.plan(sel, {5, 5})
    assert Selection.part_count(sel, {5, 5}) == 1
  end
end
