defmodule ExZarr.Array.RectilinearTest do
  # Arrays on a rectilinear chunk grid (zarr-extensions), through the public API: every read
  # and write path against a model of the data, the stored chunks at their full edge sizes,
  # the metadata as the spec writes it, and clear errors where a grid cannot serve.
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Indexing, Storage}
  alias ExZarr.Test.{CountingStore, Grids, Interop, Prop}

  Code.require_file("../sharding/counting_store.exs", __DIR__)

  defp i32(list), do: for(x <- list, into: <<>>, do: <<x::32-little>>)
  defp from_i32(bin), do: for(<<x::signed-32-little <- bin>>, do: x)

  defp create(opts) do
    defaults = [storage: :memory, dtype: :int32, compressor: nil, fill_value: -1]
    {:ok, a} = ExZarr.create(Keyword.merge(defaults, opts))
    a
  end

  # An array on `grid`, half the time as a grid of shards whose inner chunks divide every edge.
  defp create_maybe_sharded(shape, grid) do
    if :rand.uniform(2) == 1 do
      create(shape: shape, chunks: grid)
    else
      inner =
        grid
        |> Tuple.to_list()
        |> Enum.map(fn axis -> axis |> List.wrap() |> Enum.reduce(&Integer.gcd/2) end)
        |> List.to_tuple()

      create(shape: shape, shards: grid, chunks: inner)
    end
  end

  # The model: a map from index to value, read out in C order over a box.
  defp model_box(model, start, stop) do
    shape = ExZarr.Shape.sub(stop, start)
    for i <- Grids.indices(shape), do: Map.get(model, ExZarr.Shape.add(start, i), -1)
  end

  defp stored(a) do
    {:ok, keys} = Storage.list(a.storage)
    keys |> Enum.reject(&(&1 == "zarr.json")) |> Enum.sort()
  end

  # Random box writes, then random box reads and the whole array, against the model; every
  # stored chunk is a chunk of the grid, stored at its full shape (no compressor).
  test "box writes and reads match a model on random grids (property)" do
    Prop.check(
      :proper_types.integer(1, 1_000_000_000),
      fn seed ->
        :rand.seed(:exsss, {seed, 5, 7})
        ndim = :rand.uniform(3)
        shape = List.to_tuple(for _ <- 1..ndim, do: :rand.uniform(9))
        grid = Grids.random(shape)
        a = create_maybe_sharded(shape, grid)

        model =
          Enum.reduce(1..3, %{}, fn _, model ->
            {start, stop} = Grids.random_box(shape)
            box = Grids.indices(ExZarr.Shape.sub(stop, start))
            values = for _ <- box, do: :rand.uniform(1000)
            :ok = Array.set_slice(a, i32(values), start: start, stop: stop)

            Enum.zip(box, values)
            |> Enum.reduce(model, fn {i, v}, m -> Map.put(m, ExZarr.Shape.add(start, i), v) end)
          end)

        {start, stop} = Grids.random_box(shape)
        {:ok, part} = Array.get_slice(a, start: start, stop: stop)
        zero = ExZarr.Shape.zeros(ndim)

        sizes_ok =
          Enum.all?(stored(a), fn key ->
            {:ok, coords} = ExZarr.Metadata.chunk_coords(a.metadata, key)
            {:ok, bin} = Storage.get(a.storage, key)
            {:ok, decoded} = Array.read_chunk(a, coords)
            size = 4 * ExZarr.Shape.product(Indexing.chunk_shape(grid, coords))
            # (a shard holds its index and the inner chunks not all fill)
            sharded? = ExZarr.Codec.Pipeline.supports_partial_decode?(a.pipeline)

            Indexing.valid_chunk?(shape, grid, coords) and byte_size(decoded) == size and
              (sharded? or byte_size(bin) == size)
          end)

        from_i32(part) == model_box(model, start, stop) and
          from_i32(Array.get_slice!(a)) == model_box(model, zero, shape) and sizes_ok
      end,
      60
    )
  end

  test "whole chunks read and write at their own shapes" do
    a = create(shape: {10, 7}, chunks: {[3, 4, 5], 3})
    :ok = Array.set_slice(a, i32(Enum.to_list(0..69)))

    assert {:ok, chunk} = Array.read_chunk(a, {1, 2})
    # rows 3..6, column 6 and two columns of padding past the edge
    assert from_i32(chunk) == [27, -1, -1, 34, -1, -1, 41, -1, -1, 48, -1, -1]
    assert {:ok, last} = Array.read_chunk(a, {2, 0})
    assert byte_size(last) == 5 * 3 * 4

    assert :ok = Array.write_chunk(a, {0, 1}, i32(Enum.to_list(100..108)))
    assert {:ok, rows} = Array.get_slice(a, start: {0, 3}, stop: {3, 6})
    assert from_i32(rows) == Enum.to_list(100..108)

    assert {:error, {:wrong_data_size, _}} = Array.write_chunk(a, {1, 0}, i32(Enum.to_list(1..9)))
    # the third row chunk holds rows 7..9 of 10: chunk 3 does not exist
    assert Array.read_chunk(a, {3, 0}) == {:error, {:invalid_chunk_coords, {3, 0}}}
  end

  test "chunk_stream gives every chunk at its shape; blocks, steps and orthogonal selections read" do
    a = create(shape: {10, 7}, chunks: {[3, 4, 5], 3})
    :ok = Array.set_slice(a, i32(Enum.to_list(0..69)))

    sizes = a |> Array.chunk_stream() |> Enum.map(fn {c, bin} -> {c, div(byte_size(bin), 4)} end)

    assert sizes == [
             {{0, 0}, 9},
             {{0, 1}, 9},
             {{0, 2}, 9},
             {{1, 0}, 12},
             {{1, 1}, 12},
             {{1, 2}, 12},
             {{2, 0}, 15},
             {{2, 1}, 15},
             {{2, 2}, 15}
           ]

    assert {:ok, block} = Array.get_blocks(a, {1, 2})
    assert from_i32(block) == [27, 34, 41, 48]

    assert {:ok, stepped} = Array.get_slice(a, start: {1, 0}, stop: {10, 7}, step: {4, 3})
    assert from_i32(stepped) == [7, 10, 13, 35, 38, 41, 63, 66, 69]

    assert {:ok, picked} = Array.get_orthogonal(a, {[9, 2, 3], 6})
    assert from_i32(picked) == [69, 20, 27]

    :ok = Array.set_orthogonal(a, {[2, 3], [0, 6]}, i32([1, 2, 3, 4]))

    assert from_i32(Array.get_orthogonal!(a, {2..3, :all})) ==
             [1, 15, 16, 17, 18, 19, 2, 3, 22, 23, 24, 25, 26, 4]
  end

  test "point and mask selections read and write in the caller's order" do
    a = create(shape: {10, 4}, chunks: {[3, 7], [1, 3]})
    :ok = Array.set_slice(a, i32(Enum.to_list(0..39)))

    points = [{9, 3}, {0, 0}, {4, 1}, {2, 3}, {9, 0}]
    assert {:ok, got} = Array.get_coordinates(a, points)
    assert from_i32(got) == [39, 0, 17, 11, 36]

    :ok = Array.set_coordinates(a, [{3, 2}, {0, 1}], i32([-5, -6]))
    assert from_i32(Array.get_slice!(a, start: {0, 0}, stop: {1, 4})) == [0, -6, 2, 3]
    assert from_i32(Array.get_slice!(a, start: {3, 0}, stop: {4, 4})) == [12, 13, -5, 15]

    mask = for i <- 0..39, into: <<>>, do: <<if(rem(i, 13) == 0, do: 1, else: 0)>>
    assert from_i32(Array.get_mask!(a, mask)) == [0, 13, 26, 39]
  end

  test "the metadata is written as the spec shows and reads back" do
    dir = Interop.tmp_dir!("rectilinear")
    on_exit(fn -> File.rm_rf!(dir) end)
    path = Path.join(dir, "a.zarr")

    {:ok, a} =
      ExZarr.create(
        path: path,
        storage: :filesystem,
        shape: {6, 6, 6},
        chunks: {4, [1, 1, 1, 3], [4, 4, 4]},
        dtype: :uint8
      )

    text = path |> Path.join("zarr.json") |> File.read!()
    {:ok, json} = ExZarr.JSON.decode(text)
    # the keys in the spec's order
    assert text =~ ~r/"kind": "inline",\s*"chunk_shapes"/

    assert json["chunk_grid"] == %{
             "name" => "rectilinear",
             "configuration" => %{
               "kind" => "inline",
               "chunk_shapes" => [4, [[1, 3], 3], [[4, 3]]]
             }
           }

    :ok = Array.set_slice(a, :binary.list_to_bin(Enum.map(0..215, &rem(&1, 256))))
    {:ok, b} = ExZarr.open(path: path)
    assert b.metadata.chunks == {4, [1, 1, 1, 3], [4, 4, 4]}
    assert Array.get_slice(b) == Array.get_slice(a)
    assert File.exists?(Path.join(path, "c/1/3/1"))
    refute File.exists?(Path.join(path, "c/1/3/2"))
  end

  test "a rectilinear grid of shards: inner chunks, their stream, points" do
    a = create(shape: {10, 6}, shards: {[4, 2, 6], 6}, chunks: {2, 3}, compressor: %{id: "zstd"})
    assert inspect(a) =~ "chunks {2, 3} shards {[4, 2, 6], 6}"
    :ok = Array.set_slice(a, i32(Enum.to_list(0..59)))

    assert {:ok, inner} = Array.read_chunk(a, {4, 1}, level: :inner)
    assert from_i32(inner) == [51, 52, 53, 57, 58, 59]
    assert {:ok, shard} = Array.read_chunk(a, {2, 0})
    assert from_i32(shard) == Enum.to_list(36..59) ++ List.duplicate(-1, 12)

    stream = Array.chunk_stream(a, level: :inner) |> Map.new()
    assert map_size(stream) == 10
    assert from_i32(stream[{2, 0}]) == [24, 25, 26, 30, 31, 32]

    assert {:ok, got} = Array.get_coordinates(a, [{9, 5}, {0, 0}, {5, 2}, {4, 4}, {5, 0}])
    assert from_i32(got) == [59, 0, 32, 28, 30]
    assert stored(a) == ["c/0/0", "c/1/0", "c/2/0"]
  end

  test "each shard shape has one pipeline, so shard indexes stay cached" do
    {:ok, mem} = Storage.new(:memory, owner: self())
    {:ok, store} = Storage.new(CountingStore, inner: mem)
    a = create(storage: store, shape: {12}, shards: {[4, 2, 6]}, chunks: {2})
    assert Map.keys(a.shape_pipelines) == [{2}, {4}]
    :ok = Array.set_slice(a, i32(Enum.to_list(0..11)))
    CountingStore.reads(store)

    for shard_start <- [0, 4] do
      assert {:ok, _} = Array.get_slice(a, start: {shard_start}, stop: {shard_start + 1})
      assert [{_, {:suffix, _}, _}, {_, _, 8}] = CountingStore.reads(store)
      assert {:ok, got} = Array.get_slice(a, start: {shard_start + 1}, stop: {shard_start + 2})
      assert from_i32(got) == [shard_start + 1]
      assert [{_, _, 8}] = CountingStore.reads(store)
    end
  end

  describe "resize and append" do
    test "shrinking clears the cut chunk; growing stays within the edges" do
      a = create(shape: {10}, chunks: {[3, 4, 5]})
      :ok = Array.set_slice(a, i32(Enum.to_list(0..9)))

      assert {:ok, a} = Array.resize(a, {5})
      assert stored(a) == ["c/0", "c/1"]
      assert {:ok, a} = Array.resize(a, {12})
      assert from_i32(Array.get_slice!(a)) == [0, 1, 2, 3, 4] ++ List.duplicate(-1, 7)

      assert Array.resize(a, {13}) ==
               {:error,
                {:shape_beyond_chunk_grid, {13},
                 "the edges [3, 4, 5] of axis 0 sum to 12, less than its length 13"}}

      assert {:ok, %{metadata: %{shape: {12}}}} = ExZarr.open(storage: a.storage)
    end

    test "appending along a list axis fills its chunks, and stops at the last edge" do
      a = create(shape: {2, 2}, chunks: {[2, 3, 4], 2})
      :ok = Array.set_slice(a, i32([1, 2, 3, 4]))

      assert {:ok, a} = Array.append(a, i32([5, 6, 7, 8, 9, 10]), 0)
      assert a.metadata.shape == {5, 2}
      assert {:ok, a} = Array.append(a, i32([11, 12]), 0)
      assert from_i32(Array.get_slice!(a)) == Enum.to_list(1..12)
      assert {:ok, chunk} = Array.read_chunk(a, {2, 0})
      assert from_i32(chunk) == [11, 12, -1, -1, -1, -1, -1, -1]

      assert {:error, {:shape_beyond_chunk_grid, {10, 2}, _}} =
               Array.append(a, i32(Enum.to_list(1..8)), 0)

      assert {:ok, %{metadata: %{shape: {6, 2}}}} = ExZarr.open(storage: a.storage)
    end

    test "appending along a regular axis of a rectilinear grid" do
      a = create(shape: {3, 2}, chunks: {[1, 2], 2})
      :ok = Array.set_slice(a, i32([1, 2, 3, 4, 5, 6]))
      assert {:ok, a} = Array.append(a, i32([7, 8, 9]), 1)
      assert from_i32(Array.get_slice!(a)) == [1, 2, 7, 3, 4, 8, 5, 6, 9]
    end
  end

  describe "creating" do
    test "lists of edges need v3 and must cover the shape" do
      assert ExZarr.create(storage: :memory, shape: {10}, chunks: {[3, 7]}, zarr_format: 2) ==
               {:error,
                {:invalid_option, :chunks,
                 {{[3, 7]}, "lists of chunk edges (a rectilinear grid) need zarr_format: 3"}}}

      assert {:error, {:invalid_option, :chunks, {{[3, 4]}, "the edges [3, 4] of axis 0" <> _}}} =
               ExZarr.create(storage: :memory, shape: {10}, chunks: {[3, 4]})

      assert {:error, {:invalid_option, :chunks, {{[3, -7]}, _}}} =
               ExZarr.create(storage: :memory, shape: {10}, chunks: {[3, -7]})

      assert {:error, {:invalid_option, :chunks, {{[3, 7], []}, _}}} =
               ExZarr.create(storage: :memory, shape: {10, 2}, chunks: {[3, 7], []})

      assert {:error,
              {:invalid_option, :shards, {{10}, "the inner chunks of shards are regular" <> _}}} =
               ExZarr.create(storage: :memory, shape: {10}, chunks: {[3, 7]}, shards: {10})

      assert {:error, {:invalid_option, :shards, {{[4, 6]}, "every shard edge must be" <> _}}} =
               ExZarr.create(storage: :memory, shape: {10}, chunks: {4}, shards: {[4, 6]})

      assert {:error, {:invalid_option, :shards, {{[4, 4]}, "the edges [4, 4] of axis 0" <> _}}} =
               ExZarr.create(storage: :memory, shape: {10}, chunks: {4}, shards: {[4, 4]})
    end

    test "codecs see each chunk's own shape" do
      a = create(shape: {5, 3}, chunks: {[2, 3], 3}, order: "F", compressor: %{id: "zstd"})
      :ok = Array.set_slice(a, i32(Enum.to_list(1..15)))
      assert from_i32(Array.get_slice!(a)) == Enum.to_list(1..15)
      assert from_i32(Array.read_chunk(a, {1, 0}) |> elem(1)) == Enum.to_list(7..15)
    end
  end

  test "info, inspect, validate and jobs work over the grid" do
    a = create(shape: {10, 4}, chunks: {[3, 3, 4], 2})
    :ok = Array.set_slice(a, i32(Enum.to_list(0..39)))

    assert {:ok, info} = ExZarr.Info.info(a)
    assert info.chunks == {[3, 3, 4], 2}
    assert info.chunks_total == 6
    assert info.chunks_initialized == 6
    assert inspect(a) =~ "chunks {[3, 3, 4], 2}"

    :ok = Storage.put(a.storage, "c/3/0", <<0>>)

    assert {:ok, %{chunks: 6, problems: [%{key: "c/3/0", problem: :outside_chunk_grid}]}} =
             ExZarr.Validate.run(a)

    sum = fn data, _box -> Enum.sum(from_i32(data)) end

    assert ExZarr.Jobs.reduce_blocks(a, sum, &+/2, block: {1, 1}) == {:ok, Enum.sum(0..39)}
    assert {:ok, b} = ExZarr.Jobs.copy(a, [storage: :memory], [])
    assert b.metadata.chunks == {[3, 3, 4], 2}
    assert Array.get_slice(b) == Array.get_slice(a)
  end
end
