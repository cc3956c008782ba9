defmodule ExZarr.Sharding.InteropTest do
  @moduledoc """
  Sharded arrays exchanged with zarr-python 3 and tensorstore's zarr3 driver, both ways:
  each case writes the same data (a full write, then a partial overwrite) with ExZarr,
  zarr-python and tensorstore into arrays with the same metadata, then every library reads
  the others' arrays and the data is compared exactly. For deterministic inner chains the
  shards ExZarr writes are compared byte for byte with zarr-python's.
  """
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Native, Shape}
  alias ExZarr.Test.Python

  @moduletag :tmp_dir
  @moduletag timeout: 180_000

  # Runs a list of {lib, op, path, raw_file, selection} commands in one Python process.
  @script """
  import sys, json
  import numpy as np
  import zarr
  import tensorstore as ts

  def open_array(lib, path):
      if lib == "zarr":
          a = zarr.open_array(path, mode="r+")
          return a, a.shape, np.dtype(a.dtype)
      a = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}).result()
      return a, a.shape, np.dtype(a.dtype.numpy_dtype)

  for lib, op, path, raw, sel in json.loads(sys.argv[1]):
      a, shape, dtype = open_array(lib, path)
      start, stop = sel if sel else ([0] * len(shape), list(shape))
      slc = tuple(slice(b, e) for b, e in zip(start, stop))
      box = tuple(e - b for b, e in zip(start, stop))
      le = dtype.newbyteorder("<")
      if op == "write":
          data = np.fromfile(raw, dtype=le).reshape(box)
          if lib == "zarr":
              a[slc] = data
          else:
              a[slc].write(data).result()
      else:
          got = a[slc] if lib == "zarr" else a[slc].read().result()
          np.ascontiguousarray(np.asarray(got), dtype=le).tofile(raw)
  print("OK")
  """

  @bytes_le %{"name" => "bytes", "configuration" => %{"endian" => "little"}}

  @cases [
    %{
      name: "bytes+zstd, index at the end, int32 with edge shards",
      shape: {37, 29},
      shards: {16, 12},
      dtype: :int32,
      config: %{
        "chunk_shape" => [4, 6],
        "codecs" => [@bytes_le, %{"name" => "zstd", "configuration" => %{"level" => 3}}],
        "index_location" => "end"
      },
      part: {{5, 3}, {21, 20}},
      exact: false
    },
    %{
      name: "transpose+bytes+blosc, index at the start, uint16 3-d",
      shape: {20, 15, 7},
      shards: {8, 10, 7},
      dtype: :uint16,
      config: %{
        "chunk_shape" => [4, 5, 7],
        "codecs" => [
          %{"name" => "transpose", "configuration" => %{"order" => [2, 1, 0]}},
          @bytes_le,
          %{
            "name" => "blosc",
            "configuration" => %{
              "cname" => "lz4",
              "clevel" => 5,
              "shuffle" => "shuffle",
              "typesize" => 2,
              "blocksize" => 0
            }
          }
        ],
        "index_location" => "start"
      },
      part: {{3, 0, 2}, {11, 15, 5}},
      exact: false
    },
    %{
      name: "bytes+crc32c, float64, index at the end",
      shape: {45},
      shards: {16},
      dtype: :float64,
      config: %{"chunk_shape" => [4], "codecs" => [@bytes_le, %{"name" => "crc32c"}]},
      part: {{6}, {31}},
      exact: true
    },
    %{
      name: "bytes only, index at the start, uint8",
      shape: {24, 40},
      shards: {12, 16},
      dtype: :uint8,
      config: %{
        "chunk_shape" => [3, 4],
        "codecs" => [%{"name" => "bytes"}],
        "index_location" => "start"
      },
      part: {{2, 5}, {13, 30}},
      exact: true
    },
    %{
      name: "nested sharding",
      shape: {30, 30},
      shards: {20, 20},
      dtype: :uint8,
      config: %{
        "chunk_shape" => [10, 10],
        "codecs" => [
          %{
            "name" => "sharding_indexed",
            "configuration" => %{
              "chunk_shape" => [5, 5],
              "codecs" => [%{"name" => "bytes"}, %{"name" => "crc32c"}],
              "index_codecs" => [@bytes_le, %{"name" => "crc32c"}],
              "index_location" => "end"
            }
          }
        ],
        "index_location" => "end"
      },
      part: {{4, 4}, {26, 17}},
      exact: true
    }
  ]

  for c <- @cases do
    @case c
    test "interop: #{c.name}", %{tmp_dir: dir} do
      run_case(@case, dir)
    end
  end

  test "interop: arrays zarr-python and tensorstore create themselves", %{tmp_dir: dir} do
    script = """
    import sys, json
    import numpy as np, zarr, tensorstore as ts
    dir = sys.argv[1]
    data = (np.arange(50 * 36, dtype="<u2") * 7).reshape(50, 36)
    data[0:5, 0:6] = 0
    z = zarr.create_array(dir + "/zarr", shape=(50, 36), chunks=(5, 6), shards=(20, 12),
                          dtype="uint16", compressors=zarr.codecs.ZstdCodec(level=1))
    z[:] = data
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": dir + "/ts"},
                 "create": True, "dtype": "uint16",
                 "metadata": {"shape": [50, 36], "chunk_grid": {"name": "regular",
                     "configuration": {"chunk_shape": [20, 12]}},
                   "codecs": [{"name": "sharding_indexed", "configuration": {
                     "chunk_shape": [5, 6], "index_location": "start",
                     "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                {"name": "zstd", "configuration": {"level": 1}}],
                     "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                      {"name": "crc32c"}]}}]}}).result()
    t.write(data).result()
    data.tofile(dir + "/data.bin")
    print("OK")
    """

    assert Python.run!(script, [dir]) =~ "OK"
    expected = File.read!(Path.join(dir, "data.bin"))

    for name <- ["zarr", "ts"] do
      {:ok, a} = ExZarr.open(path: Path.join(dir, name))
      assert ExZarr.Codec.Pipeline.supports_partial_decode?(a.pipeline)
      assert Array.get_slice(a) == {:ok, expected}
      {:ok, part} = Array.get_slice(a, start: {3, 4}, stop: {27, 30})
      assert part == Array.get_slice!(a) |> crop({50, 36}, {3, 4}, {27, 30})
      assert Array.read_chunk(a, {0, 0}, level: :inner) == {:error, :not_found}
    end

    # ExZarr.create(shards:) describes the same sharding as create_array(shards=)
    {:ok, zarr_json} = File.read(Path.join([dir, "zarr", "zarr.json"]))
    [%{"configuration" => theirs}] = :jiffy.decode(zarr_json, [:return_maps])["codecs"]

    {:ok, ours} =
      ExZarr.create(
        shape: {50, 36},
        chunks: {5, 6},
        shards: {20, 12},
        dtype: :uint16,
        compressor: %{id: "zstd", level: 1}
      )

    [%{configuration: ours}] = ours.metadata.codecs

    for key <- ["chunk_shape", "index_codecs", "index_location"],
        do: assert(ours[key] == theirs[key])

    assert Enum.map(ours["codecs"], & &1["name"]) == Enum.map(theirs["codecs"], & &1["name"])
  end

  defp crop(bin, shape, start, stop) do
    count = sub(stop, start)

    {:ok, out} =
      Native.copy_regions(count, 2, {:fill, <<0, 0>>}, [
        {bin, shape, start, Tuple.duplicate(0, tuple_size(shape)), count}
      ])

    out
  end

  defp run_case(c, dir) do
    config = Map.put_new(c.config, "index_codecs", [@bytes_le, %{"name" => "crc32c"}])

    create = fn name ->
      path = Path.join(dir, name)

      {:ok, a} =
        ExZarr.create(
          path: path,
          shape: c.shape,
          chunks: c.shards,
          dtype: c.dtype,
          codecs: [%{name: "sharding_indexed", configuration: config}]
        )

      {a, path}
    end

    itemsize = ExZarr.DType.itemsize(c.dtype)
    full = data(c.shape, itemsize, c.config["chunk_shape"])
    {pstart, pstop} = c.part
    pshape = sub(pstop, pstart)
    part = :crypto.strong_rand_bytes(Shape.product(pshape) * itemsize)
    zeros = Tuple.duplicate(0, tuple_size(c.shape))

    {:ok, expected} =
      Native.copy_regions(c.shape, itemsize, full, [{part, pshape, zeros, pstart, pshape}])

    {ours, ours_path} = create.("exzarr")
    :ok = Array.set_slice(ours, full)
    :ok = Array.set_slice(ours, part, start: pstart, stop: pstop)
    {_, zarr_path} = create.("zarr")
    {_, ts_path} = create.("ts")

    file = fn name -> Path.join(dir, name) end
    File.write!(file.("full.bin"), full)
    File.write!(file.("part.bin"), part)
    sel = [Tuple.to_list(pstart), Tuple.to_list(pstop)]

    commands = [
      ["zarr", "write", zarr_path, file.("full.bin"), nil],
      ["zarr", "write", zarr_path, file.("part.bin"), sel],
      ["ts", "write", ts_path, file.("full.bin"), nil],
      ["ts", "write", ts_path, file.("part.bin"), sel],
      ["zarr", "read", ours_path, file.("zarr_read.bin"), nil],
      ["ts", "read", ours_path, file.("ts_read.bin"), nil],
      ["zarr", "read", ours_path, file.("zarr_part.bin"), sel]
    ]

    assert Python.run!(@script, [
             IO.iodata_to_binary(:jiffy.encode(Enum.map(commands, &encode_nil/1)))
           ]) =~ "OK"

    # they read what we wrote
    assert File.read!(file.("zarr_read.bin")) == expected
    assert File.read!(file.("ts_read.bin")) == expected

    assert File.read!(file.("zarr_part.bin")) ==
             Array.get_slice!(ours, start: pstart, stop: pstop)

    # we read what they wrote, whole and in parts
    for path <- [zarr_path, ts_path] do
      {:ok, theirs} = ExZarr.open(path: path)
      assert Array.get_slice(theirs) == {:ok, expected}, "reading #{path}"

      assert Array.get_slice(theirs, start: pstart, stop: pstop) ==
               Array.get_slice(ours, start: pstart, stop: pstop)
    end

    # deterministic inner chains: our shards are zarr-python's, byte for byte
    if c.exact do
      ours_files = shard_files(ours_path)
      assert ours_files != %{}
      assert ours_files == shard_files(zarr_path)
    end
  end

  # Pseudo-random data where some inner-chunk-aligned blocks are all zero (the fill value),
  # so that inner chunks are omitted.
  defp data(shape, itemsize, chunk_shape) do
    n = Shape.product(shape)
    bytes = :crypto.strong_rand_bytes(n * itemsize)
    zero_block = List.to_tuple(chunk_shape)
    block = :binary.copy(<<0>>, Shape.product(zero_block) * itemsize)
    zeros = Tuple.duplicate(0, tuple_size(shape))
    second = put_elem(zeros, 0, 2 * elem(zero_block, 0))

    {:ok, data} =
      Native.copy_regions(shape, itemsize, bytes, [
        {block, zero_block, zeros, zeros, zero_block},
        {block, zero_block, zeros, second, zero_block}
      ])

    data
  end

  defp shard_files(path) do
    Path.join(path, "c/**")
    |> Path.wildcard()
    |> Enum.filter(&File.regular?/1)
    |> Map.new(&{Path.relative_to(&1, path), File.read!(&1)})
  end

  defp encode_nil(list), do: Enum.map(list, &(&1 || :null))

  defp sub(a, b), do: Enum.zip_with(Tuple.to_list(a), Tuple.to_list(b), &-/2) |> List.to_tuple()
end
