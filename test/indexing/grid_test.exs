defmodule ExZarr.Indexing.GridTest do
  # ExZarr.Indexing over regular and rectilinear grids, against the naive reference of
  # ExZarr.Test.Grids (the spec's cumulative-sum wording).
  use ExUnit.Case, async: true
  doctest ExZarr.ChunkGrid

  import Bitwise

  alias ExZarr.{ChunkGrid, Indexing}
  alias ExZarr.Test.{Grids, Prop}

  defp seeds, do: :proper_types.integer(1, 1_000_000_000)

  # A random shape (0 to 3 dimensions, empty dimensions included) and grid for it.
  defp rand_case(seed) do
    :rand.seed(:exsss, {seed, seed * 3 + 1, 11})
    ndim = :rand.uniform(4) - 1
    shape = List.to_tuple(for _ <- 1..ndim//1, do: :rand.uniform(10) - 1)
    {shape, Grids.random(shape)}
  end

  defp add(a, b), do: ExZarr.Shape.add(a, b)

  test "an element's chunk and position in it are the spec's (property)" do
    Prop.check(
      seeds(),
      fn seed ->
        {shape, grid} = rand_case(seed)
        compiled = ChunkGrid.compile(grid)

        Enum.all?(Grids.indices(shape), fn index ->
          {chunk, local} = Indexing.locate(grid, index)

          {chunk, local} == Grids.locate(grid, shape, index) and
            Indexing.locate(compiled, index) == {chunk, local} and
            add(Indexing.chunk_origin(grid, chunk), local) == index and
            Indexing.valid_chunk?(shape, grid, chunk)
        end)
      end,
      300
    )
  end

  # The grid is exactly the chunks holding elements; each chunk's extent counts its elements
  # and lies within its full shape.
  test "chunk_coords, grid_shape and chunk_extent agree with the elements (property)" do
    Prop.check(
      seeds(),
      fn seed ->
        {shape, grid} = rand_case(seed)
        held = Grids.indices(shape) |> Enum.map(&elem(Indexing.locate(grid, &1), 0))
        coords = Enum.to_list(Indexing.chunk_coords(shape, grid))
        counts = Enum.frequencies(held)

        coords == Enum.uniq(Enum.sort(held)) and
          length(coords) == ExZarr.Shape.product(Indexing.grid_shape(shape, grid)) and
          Enum.all?(coords, fn c ->
            extent = Indexing.chunk_extent(shape, grid, c)
            full = Indexing.chunk_shape(grid, c)

            ExZarr.Shape.product(extent) == Map.fetch!(counts, c) and
              Enum.all?(Enum.zip(Tuple.to_list(extent), Tuple.to_list(full)), fn {e, f} ->
                e <= f
              end)
          end)
      end,
      300
    )
  end

  # Every element of a box is covered once, by the part of the chunk holding it, at the
  # position the reference gives; part_count counts the parts.
  test "plan covers each selected element once, in its chunk (property)" do
    Prop.check(
      seeds(),
      fn seed ->
        {shape, grid} = rand_case(seed)
        {start, stop} = Grids.random_box(shape)
        {:ok, sel} = Indexing.selection(shape, start: start, stop: stop)
        parts = Indexing.plan(sel, grid)

        covered =
          for part <- parts, local <- Grids.indices(part.count) do
            out = add(part.out_start, local)
            {out, {part.chunk, add(part.chunk_start, local)}}
          end

        Indexing.part_count(sel, grid) == length(parts) and
          Enum.sort(Enum.map(covered, &elem(&1, 0))) == Grids.indices(sel.shape) and
          Enum.all?(covered, fn {out, where} ->
            Grids.locate(grid, shape, add(sel.start, out)) == where
          end)
      end,
      300
    )
  end

  # resize_boxes/3 against a brute force: delete holds the old chunks outside the new grid,
  # clear the kept chunks a shrunk axis cuts through (new length inside the chunk).
  test "resize_boxes splits either grid as a brute force does (property)" do
    Prop.check(
      seeds(),
      fn seed ->
        {old, grid} = rand_case(seed)
        sums = Enum.map(Grids.edges(grid, old), &Enum.sum/1)

        new =
          Enum.zip_with([Tuple.to_list(grid), sums], fn
            [m, _] when is_integer(m) -> :rand.uniform(10) - 1
            [_, sum] -> :rand.uniform(sum + 1) - 1
          end)
          |> List.to_tuple()

        %{clear: clear, delete: delete} = Indexing.resize_boxes(old, new, grid)
        old_grid = Enum.to_list(Indexing.chunk_coords(old, grid))
        edges = Grids.edges(grid, old)

        cut? = fn c ->
          Enum.any?(0..(tuple_size(old) - 1)//1, fn d ->
            e = Enum.at(edges, d)
            first = e |> Enum.take(elem(c, d)) |> Enum.sum()
            n = elem(new, d)
            n < elem(old, d) and n > first and n < first + Enum.at(e, elem(c, d))
          end)
        end

        {kept, outside} = Enum.split_with(old_grid, &Indexing.valid_chunk?(new, grid, &1))
        listed = fn boxes -> Enum.flat_map(boxes, &Enum.to_list(Indexing.box_coords(&1))) end

        Enum.sort(listed.(delete)) == Enum.sort(outside) and
          Enum.sort(listed.(clear)) == Enum.sort(Enum.filter(kept, cut?))
      end,
      300
    )
  end

  # Any JSON in chunk_shapes gives a grid that check/2 accepts, or {:error, {:invalid_metadata, _}}.
  test "from_json never crashes on malformed chunk_shapes (property)" do
    leaf = :proper_types.oneof([:proper_types.integer(-2, 6), :proper_types.float(), "x", nil])
    run = :proper_types.oneof([leaf, :proper_types.list(leaf)])
    axis = :proper_types.oneof([leaf, :proper_types.list(run)])

    gen =
      {:proper_types.list(axis), :proper_types.list(:proper_types.integer(0, 12)),
       :proper_types.oneof(["inline", "other"])}

    Prop.check(
      gen,
      fn {axes, shape, kind} ->
        case ChunkGrid.from_json(%{"kind" => kind, "chunk_shapes" => axes}, shape) do
          {:ok, grid} -> ChunkGrid.check(grid, List.to_tuple(shape)) == :ok
          {:error, {:invalid_metadata, why}} -> is_binary(why)
        end
      end,
      500
    )
  end

  describe "ChunkGrid" do
    test "check/2 names what is wrong" do
      assert ChunkGrid.check({[2, 0], 3}, {2, 3}) ==
               {:error, "the edges of axis 0 must be positive integers, got [2, 0]"}

      assert {:error, "axis 1 must be" <> _} = ChunkGrid.check({[2], []}, {2, 3})
      assert {:error, "axis 0 must be" <> _} = ChunkGrid.check({:a}, {2})

      assert {:error, "the chunk length of axis 0 must be positive, got 0"} =
               ChunkGrid.check({0}, {2})

      assert {:error, "expected a tuple of 1" <> _} = ChunkGrid.check({[2], 2}, {2})

      assert {:error, "the grid lists 1000001 chunks" <> _} =
               ChunkGrid.check({List.duplicate(1, 1_000_001)}, {1})

      assert {:error, "the grid lists 1000002 chunks" <> _} =
               ChunkGrid.check({List.duplicate(1, 500_001), List.duplicate(1, 500_001)}, {1, 1})

      assert {:error, "an edge of axis 0" <> _} = ChunkGrid.check({[1 <<< 63]}, {1})
      assert :ok = ChunkGrid.check({[2, 2, 9]}, {3})
    end

    test "runs of equal edges are written as [value, count], in order" do
      grid = {4, [1, 2, 3], [4, 4], [1, 1, 1, 3], [4, 4, 4]}

      assert %{"name" => "rectilinear", "configuration" => config} = ChunkGrid.to_json(grid)

      assert config == %{
               "kind" => "inline",
               "chunk_shapes" => [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [[4, 3]]]
             }

      assert ChunkGrid.from_json(config, [6, 6, 6, 6, 6]) == {:ok, grid}
    end

    test "the spec's example expands as the spec says" do
      config = %{
        "kind" => "inline",
        "chunk_shapes" => [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]
      }

      assert ChunkGrid.from_json(config, [6, 6, 6, 6, 6]) ==
               {:ok, {4, [1, 2, 3], [4, 4], [1, 1, 1, 3], [4, 4, 4]}}
    end

    test "a rectilinear grid of integers only is the regular grid" do
      assert ChunkGrid.from_json(%{"kind" => "inline", "chunk_shapes" => [4, 5]}, [9, 9]) ==
               {:ok, {4, 5}}

      assert ChunkGrid.to_json({4, 5}) ==
               %{"name" => "regular", "configuration" => %{"chunk_shape" => [4, 5]}}
    end

    test "a hostile run count is refused before anything is built" do
      config = %{"kind" => "inline", "chunk_shapes" => [[[1, 1 <<< 60]]]}

      assert {:error, {:invalid_metadata, "rectilinear chunk_shapes: the grid lists" <> _}} =
               ChunkGrid.from_json(config, [10])

      # in all axes together
      config = %{"kind" => "inline", "chunk_shapes" => [[[1, 600_000]], [[1, 600_000]]]}

      assert {:error,
              {:invalid_metadata,
               "rectilinear chunk_shapes: the grid lists 1200000 chunks, more than 1000000"}} =
               ChunkGrid.from_json(config, [10, 10])
    end
  end
end
