defmodule ExZarr.InfoTest do
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Info, Storage}

  doctest ExZarr.Info

  @moduletag :tmp_dir

  # The bytes of every file below a folder.
  defp du(dir) do
    dir
    |> Path.join("**")
    |> Path.wildcard(match_dot: true)
    |> Enum.filter(&File.regular?/1)
    |> Enum.map(&File.stat!(&1).size)
    |> Enum.sum()
  end

  test "an array's facts: layout, codecs, and the stored picture measured on disk", %{
    tmp_dir: dir
  } do
    path = Path.join(dir, "a.zarr")

    {:ok, a} =
      ExZarr.create(
        path: path,
        shape: {100, 80},
        chunks: {10, 20},
        dtype: :int32,
        compressor: %{id: "zstd", level: 5},
        fill_value: -1,
        dimension_names: ["y", "x"],
        attributes: %{"units" => "K"}
      )

    # rows 0..24 touch chunk rows 0, 1, 2 of 10, in 4 chunk columns: 12 chunks
    data = for i <- 0..(25 * 80 - 1), into: <<>>, do: <<rem(i, 7)::32-little>>
    :ok = Array.set_slice(a, data, start: {0, 0}, stop: {25, 80})

    assert {:ok, info} = ExZarr.info(a)

    assert %{
             node_type: :array,
             zarr_format: 3,
             name: "/",
             shape: {100, 80},
             chunks: {10, 20},
             shards: nil,
             dtype: :int32,
             fill_value: -1,
             dimension_names: ["y", "x"],
             attributes: %{"units" => "K"},
             chunk_key_encoding: %{name: "default", separator: "/"},
             chunks_initialized: 12,
             chunks_total: 40,
             bytes: 32_000
           } = info

    assert info.store == "file://" <> path

    assert [%{"name" => "bytes"}, %{"name" => "zstd", "configuration" => %{"level" => 5}}] =
             info.codecs

    assert info.bytes_stored == du(path)
    assert info.compression_ratio == 32_000 / du(path)
    assert ExZarr.info(path) == {:ok, info}
    assert ExZarr.info(path: "file://" <> path) == {:ok, info}
  end

  test "keys outside the chunk grid and foreign files are not counted as chunks", %{
    tmp_dir: dir
  } do
    {:ok, a} = ExZarr.create(path: dir, shape: {4}, chunks: {2}, dtype: :uint8, compressor: nil)
    :ok = Array.set_slice(a, <<1, 2, 3, 4>>)
    {:ok, before} = ExZarr.info(a)
    assert before.chunks_initialized == 2

    for key <- ["c/2", "c/3/1", "c/x", "notes.txt", "0"],
        do: :ok = Storage.put(a.storage, key, "zz")

    {:ok, info} = ExZarr.info(a)
    assert info.chunks_initialized == 2
    assert info.bytes_stored == before.bytes_stored
  end

  test "sharded arrays: chunks are the inner chunks, the grid is of shards" do
    {:ok, a} = ExZarr.create(shape: {64, 64}, chunks: {8, 8}, shards: {32, 32}, dtype: :uint16)

    :ok = Array.set_slice(a, :binary.copy(<<1, 0>>, 32 * 64), stop: {32, 64})
    {:ok, info} = ExZarr.info(a)

    assert %{chunks: {8, 8}, shards: {32, 32}, chunks_initialized: 2, chunks_total: 4} = info
    assert [%{"name" => "sharding_indexed"}] = info.codecs
    {:ok, stored} = Storage.list(a.storage)
    sizes = for key <- stored, do: elem(Storage.get(a.storage, key), 1) |> byte_size()
    assert info.bytes_stored == Enum.sum(sizes)
    assert Info.format(info) =~ ~r/Shard shape +: \{32, 32\}\nChunk shape +: \{8, 8\}/
    assert Info.format(info) =~ "Chunks initialized : 2 of 4 shards"
  end

  test "a v2 array in a group, a NaN fill value, and the JSON form", %{tmp_dir: dir} do
    {:ok, g} = ExZarr.create_group(path: dir, zarr_format: 2, attributes: %{"title" => "t"})

    {:ok, a} =
      ExZarr.Group.create_array(g, "sub/b",
        shape: {10},
        chunks: {5},
        dtype: :float64,
        fill_value: :nan
      )

    {:ok, info} = ExZarr.info(a)
    assert %{zarr_format: 2, name: "/sub/b", fill_value: :nan, chunks_initialized: 0} = info
    assert info.store == "file://" <> dir <> "/sub/b"
    assert info.bytes_stored == du(Path.join(dir, "sub/b"))

    {:ok, json} = ExZarr.JSON.decode(Info.to_json(info))

    assert %{
             "node_type" => "array",
             "fill_value" => "NaN",
             "shape" => [10],
             "dtype" => "float64",
             "shards" => nil,
             "chunk_key_encoding" => %{"name" => "v2", "separator" => "."}
           } = Map.update!(json, "shards", fn :null -> nil end)

    assert Info.format(info) =~ "Fill value         : NaN\n"

    {:ok, ginfo} = ExZarr.info(path: dir)

    assert %{
             node_type: :group,
             zarr_format: 2,
             name: "/",
             attributes: %{"title" => "t"},
             consolidated: false,
             members: 1,
             arrays: 0,
             groups: 1
           } = ginfo

    assert Info.format(ginfo) =~ "No. groups   : 1\n"

    assert %{"node_type" => "group", "members" => 1} =
             elem(ExZarr.JSON.decode(Info.to_json(ginfo)), 1)
  end

  test "variable-length arrays have no uncompressed size" do
    {:ok, a} = ExZarr.create(shape: {3}, dtype: :string)
    :ok = Array.set_slice(a, ["a", "bb", "ccc"])
    {:ok, info} = ExZarr.info(a)
    assert %{bytes: nil, compression_ratio: nil, chunks_initialized: 1} = info
    assert Info.format(info) =~ "No. bytes          : unknown (variable-length items)"
  end

  test "on a store that cannot list, the stored picture is unknown, not an error" do
    {:ok, store} = Storage.new(ExZarr.Test.PlainStore, listable: false)
    {:ok, a} = ExZarr.create(storage: store, shape: {4}, chunks: {2}, dtype: :uint8)
    :ok = Array.set_slice(a, <<1, 2, 3, 4>>)
    {:ok, info} = ExZarr.info(a)
    assert %{chunks_initialized: nil, bytes_stored: nil, compression_ratio: nil, bytes: 4} = info
    assert Info.format(info) =~ "Chunks initialized : unknown (the store cannot list)"
    assert Storage.describe(store) == "plainstore"
  end

  test "bad arguments are errors" do
    assert ExZarr.info(42) == {:error, {:invalid_options, 42}} or
             match?({:error, _}, ExZarr.info(42))

    assert {:error, :not_found} = ExZarr.info(storage: :memory)
    assert Info.info(:nope) == {:error, {:invalid_argument, [ExZarr.Array, ExZarr.Group], :nope}}
  end

  test "an array inspects as one line that says what it is", %{tmp_dir: dir} do
    {:ok, a} =
      ExZarr.create(
        path: dir,
        shape: {1000, 800},
        chunks: {100, 100},
        dtype: :float32,
        compressor: %{id: "zstd", level: 3}
      )

    assert inspect(a) ==
             "#ExZarr.Array<float32 {1000, 800} chunks {100, 100} zstd v3 file://#{dir}>"

    {:ok, s} =
      ExZarr.create(shape: {64}, chunks: {8}, shards: {32}, dtype: :uint8, compressor: nil)

    assert inspect(s) == "#ExZarr.Array<uint8 {64} chunks {8} shards {32} bytes v3 memory>"

    {:ok, g} = ExZarr.create_group(path: Path.join(dir, "g"), zarr_format: 2)

    {:ok, v2} =
      ExZarr.Group.create_array(g, "x/y",
        shape: {4},
        dtype: :int16,
        compressor: %{id: "zlib"},
        filters: [%{id: "delta", dtype: "<i2"}]
      )

    assert inspect(v2) ==
             "#ExZarr.Array<int16 {4} chunks {4} numcodecs.delta+numcodecs.zlib v2 file://#{dir}/g/x/y>"

    # inside other terms too, and never the struct's insides
    refute inspect([a]) =~ "pipeline"
  end
end
