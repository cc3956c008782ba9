defmodule ExZarr.Codecs.ZarrInteropTest do
  # Whole arrays with every compressor and filter, v2 and v3: zarr-python reads what ExZarr
  # wrote and ExZarr reads what zarr-python wrote. Lossy filters are compared on decoded values
  # (what each side reads back), so both sides must agree on the stored data.
  use ExUnit.Case, async: true

  alias ExZarr.Test.Python

  @shape {40, 30}
  @chunks {16, 16}

  # {name, zarr_format, dtype atom, numpy dtype, v2: {compressor, filters} | v3: {filters, compressors}}
  @v2 [
    {"zstd", :float64, %{"id" => "zstd", "level" => 3}, []},
    {"blosc_lz4", :float64, %{"id" => "blosc", "cname" => "lz4", "clevel" => 5, "shuffle" => 1},
     []},
    {"blosc_auto", :int16, %{"id" => "blosc", "cname" => "zstd", "clevel" => 3, "shuffle" => -1},
     []},
    {"lz4", :int32, %{"id" => "lz4", "acceleration" => 1}, []},
    {"bz2", :float32, %{"id" => "bz2", "level" => 5}, []},
    {"lzma", :float64, %{"id" => "lzma", "preset" => 1}, []},
    {"gzip", :uint16, %{"id" => "gzip", "level" => 5}, []},
    {"zlib", :int64, %{"id" => "zlib", "level" => 1}, []},
    {"crc32c", :float64, %{"id" => "crc32c"}, []},
    {"delta", :int32, %{"id" => "zstd", "level" => 1}, [%{"id" => "delta", "dtype" => "<i4"}]},
    {"fso", :float64, %{"id" => "blosc", "cname" => "lz4", "clevel" => 5, "shuffle" => 1},
     [
       %{
         "id" => "fixedscaleoffset",
         "offset" => 0,
         "scale" => 100,
         "dtype" => "<f8",
         "astype" => "<i4"
       }
     ]},
    {"quantize", :float64, %{"id" => "zstd", "level" => 1},
     [%{"id" => "quantize", "digits" => 3, "dtype" => "<f8"}]},
    {"bitround", :float32, %{"id" => "zstd", "level" => 1},
     [%{"id" => "bitround", "keepbits" => 8}]},
    {"astype", :float64, %{"id" => "lz4"},
     [%{"id" => "astype", "encode_dtype" => "<f4", "decode_dtype" => "<f8"}]},
    {"shuffle", :float64, %{"id" => "zlib", "level" => 1},
     [%{"id" => "shuffle", "elementsize" => 8}]},
    {"packbits", :bool, %{"id" => "zstd", "level" => 1}, [%{"id" => "packbits"}]},
    {"base64", :int16, %{"id" => "base64"}, []},
    {"base64_filter", :float32, %{"id" => "zlib", "level" => 1}, [%{"id" => "base64"}]}
  ]

  @v3 [
    {"zstd3", :float64, [],
     [%{"name" => "zstd", "configuration" => %{"level" => 3, "checksum" => true}}]},
    {"blosc3", :float64, [],
     [
       %{
         "name" => "blosc",
         "configuration" => %{
           "cname" => "lz4",
           "clevel" => 5,
           "shuffle" => "shuffle",
           "typesize" => 8,
           "blocksize" => 0
         }
       }
     ]},
    {"gzip3", :int16, [], [%{"name" => "gzip", "configuration" => %{"level" => 5}}]},
    {"crc3", :float32, [],
     [
       %{"name" => "zstd", "configuration" => %{"level" => 1}},
       %{"name" => "crc32c", "configuration" => %{}}
     ]},
    {"lz43", :int32, [],
     [%{"name" => "numcodecs.lz4", "configuration" => %{"acceleration" => 1}}]},
    {"bz23", :float64, [], [%{"name" => "numcodecs.bz2", "configuration" => %{"level" => 1}}]},
    {"lzma3", :uint8, [], [%{"name" => "numcodecs.lzma", "configuration" => %{"preset" => 1}}]},
    {"zlib3", :float64, [], [%{"name" => "numcodecs.zlib", "configuration" => %{"level" => 1}}]},
    {"shuffle3", :float64, [],
     [
       %{"name" => "numcodecs.shuffle", "configuration" => %{"elementsize" => 8}},
       %{"name" => "zstd", "configuration" => %{"level" => 1}}
     ]},
    {"delta3", :int64, [%{"name" => "numcodecs.delta", "configuration" => %{"dtype" => "<i8"}}],
     [%{"name" => "zstd", "configuration" => %{"level" => 1}}]},
    {"fso3", :float64,
     [
       %{
         "name" => "numcodecs.fixedscaleoffset",
         "configuration" => %{"offset" => 0, "scale" => 10, "dtype" => "<f8", "astype" => "<i4"}
       }
     ], [%{"name" => "zstd", "configuration" => %{"level" => 1}}]},
    {"bitround3", :float64,
     [%{"name" => "numcodecs.bitround", "configuration" => %{"keepbits" => 12}}],
     [%{"name" => "zstd", "configuration" => %{"level" => 1}}]},
    {"quantize3", :float32,
     [%{"name" => "numcodecs.quantize", "configuration" => %{"digits" => 2, "dtype" => "<f4"}}],
     [%{"name" => "zstd", "configuration" => %{"level" => 1}}]}
  ]

  @script """
  import json, os, sys, warnings
  import numpy as np, numcodecs, zarr
  warnings.simplefilter("ignore")
  d = sys.argv[1]
  cases = json.load(open(os.path.join(d, "cases.json")))
  bad = []
  for c in cases:
      # 1. Read what ExZarr wrote and compare with what ExZarr read back.
      z = zarr.open_array(os.path.join(d, "ex_" + c["name"]), mode="r")
      want = np.fromfile(os.path.join(d, "ex_" + c["name"] + ".bin"), dtype=z.dtype).reshape(z.shape)
      if not np.array_equal(z[:], want, equal_nan=z.dtype.kind == "f"):
          bad.append(c["name"])
      # 2. Write the same kind of array with zarr-python, and what it reads back.
      dtype = np.dtype(c["numpy"])
      rng = np.random.default_rng(1)
      shape = tuple(c["shape"])
      if dtype.kind == "f":
          data = (np.sin(np.arange(np.prod(shape)) / 17) * 100 + rng.normal(size=np.prod(shape))).reshape(shape)
      elif dtype.kind == "b":
          data = rng.integers(0, 2, shape).astype(bool)
      else:
          data = rng.integers(0, 100, shape)
      data = data.astype(dtype)
      path = os.path.join(d, "py_" + c["name"])
      if c["format"] == 2:
          a = zarr.create_array(path, shape=shape, chunks=tuple(c["chunks"]), dtype=dtype, zarr_format=2,
                                compressors=numcodecs.get_codec(c["compressor"]),
                                filters=[numcodecs.get_codec(f) for f in c["filters"]] or None)
      else:
          a = zarr.create_array(path, shape=shape, chunks=tuple(c["chunks"]), dtype=dtype, zarr_format=3,
                                compressors=c["compressors"], filters=c["filters"] or None)
      a[:] = data
      np.asarray(zarr.open_array(path, mode="r")[:]).tofile(path + ".bin")
  print(json.dumps(bad))
  """

  defp numpy(dtype) do
    ExZarr.Codecs.Numcodecs.numpy_dtype(dtype)
  end

  defp sample(:bool, n), do: for(i <- 1..n, into: <<>>, do: <<rem(i * 7, 3) |> min(1)>>)

  defp sample(dtype, n) when dtype in [:float32, :float64] do
    bits = if dtype == :float32, do: 32, else: 64

    for i <- 1..n,
        into: <<>>,
        do: <<:math.sin(i / 13) * 100 + :rand.uniform() / 10::float-size(bits)-little>>
  end

  defp sample(dtype, n) do
    bits = ExZarr.Codecs.Numcodecs.itemsize(dtype) * 8
    for i <- 1..n, into: <<>>, do: <<rem(i * 37, 101)::size(bits)-little>>
  end

  defp bytes_codec(dtype) do
    if ExZarr.Codecs.Numcodecs.itemsize(dtype) == 1,
      do: %{name: "bytes", configuration: %{}},
      else: %{name: "bytes", configuration: %{"endian" => "little"}}
  end

  defp to_spec(%{"name" => name, "configuration" => config}),
    do: %{name: name, configuration: config}

  defp ex_write(dir, name, format, dtype, opts) do
    path = Path.join(dir, "ex_" <> name)
    n = Tuple.product(@shape)

    {:ok, array} =
      ExZarr.create(
        [path: path, shape: @shape, chunks: @chunks, dtype: dtype, zarr_format: format] ++ opts
      )

    :ok = ExZarr.Array.set_slice(array, sample(dtype, n), start: {0, 0}, stop: @shape)
    {:ok, back} = ExZarr.Array.get_slice(array, start: {0, 0}, stop: @shape)
    File.write!(path <> ".bin", back)
  end

  @tag :tmp_dir
  test "zarr-python and ExZarr read each other's arrays", %{tmp_dir: dir} do
    base = %{"shape" => Tuple.to_list(@shape), "chunks" => Tuple.to_list(@chunks)}

    v2 =
      for {name, dtype, compressor, filters} <- @v2 do
        ex_write(dir, name, 2, dtype, compressor: compressor, filters: filters)

        Map.merge(base, %{
          "name" => name,
          "format" => 2,
          "numpy" => numpy(dtype),
          "compressor" => compressor,
          "filters" => filters
        })
      end

    v3 =
      for {name, dtype, filters, compressors} <- @v3 do
        codecs =
          Enum.map(filters, &to_spec/1) ++
            [bytes_codec(dtype)] ++ Enum.map(compressors, &to_spec/1)

        ex_write(dir, name, 3, dtype, codecs: codecs)

        Map.merge(base, %{
          "name" => name,
          "format" => 3,
          "numpy" => numpy(dtype),
          "filters" => filters,
          "compressors" => compressors
        })
      end

    File.write!(Path.join(dir, "cases.json"), :jiffy.encode(v2 ++ v3))
    out = Python.run!(@script, [dir])

    assert :jiffy.decode(List.last(String.split(String.trim(out), "\n")), [:return_maps]) == [],
           "zarr-python read different data from: #{out}"

    for {name, _dtype, _, _} <- @v2 ++ @v3 do
      path = Path.join(dir, "py_" <> name)
      {:ok, array} = ExZarr.open(path: path)
      {:ok, data} = ExZarr.Array.get_slice(array, start: {0, 0}, stop: @shape)
      assert data == File.read!(path <> ".bin"), "reading #{name} written by zarr-python"
    end
  end
end
