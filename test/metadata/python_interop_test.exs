defmodule ExZarr.Metadata.PythonInteropTest do
  @moduledoc """
  Metadata against zarr-python 3.x: the decoder parses the exact documents zarr-python writes
  for every data type with unusual fill values, orders, byte orders and chunk key encodings,
  and zarr-python opens the documents the encoder writes with the same meaning.
  """
  use ExUnit.Case, async: true

  alias ExZarr.{DType, JSON, Metadata}
  alias ExZarr.Metadata.V2
  alias ExZarr.Test.Python

  @moduletag :tmp_dir

  # Fill values as JSON for Python and as ExZarr fill values.
  @fills %{
    bool: [{true, true}],
    int: [:min, :max],
    float: [
      {"NaN", :nan},
      {"-Infinity", :neg_infinity},
      {"Infinity", :infinity},
      {-0.0, -0.0},
      {0.1, 0.1},
      {nil, nil}
    ],
    complex: [{["NaN", "-Infinity"], {:nan, :neg_infinity}}, {[1.5, -0.0], {1.5, -0.0}}]
  }

  # One case per data type x fill value x format, cycling through layouts.
  defp cases do
    layouts = [
      %{order: "C", endian: "little", key: {"default", "/"}, names: nil},
      %{order: "F", endian: "big", key: {"v2", "/"}, names: ["y", "x"]},
      %{order: "C", endian: "big", key: {"default", "."}, names: ["t", nil]},
      %{order: "F", endian: "little", key: {"v2", "."}, names: nil}
    ]

    fills =
      for dtype <- DType.all(), fill <- fills_for(dtype), format <- [2, 3] do
        {dtype, fill, format}
      end

    fills
    |> Enum.with_index()
    |> Enum.reject(fn {{_dtype, {_json, value}, format}, _i} -> value == nil and format == 3 end)
    |> Enum.map(fn {{dtype, {json, value}, format}, i} ->
      layout = Enum.at(layouts, rem(i, length(layouts)))
      {key_name, sep} = if format == 2, do: {"v2", elem(layout.key, 1)}, else: layout.key

      %{
        "name" => "a#{i}",
        "format" => format,
        "dtype" => DType.to_v2(dtype, String.to_atom(layout.endian)),
        "dtype_atom" => dtype,
        "fill" => json,
        "expected_fill" => value,
        "shape" => [5, 7],
        "chunks" => [2, 3],
        "order" => layout.order,
        "endian" => layout.endian,
        "key_encoding" => key_name,
        "separator" => sep,
        "dimension_names" => if(format == 3, do: layout.names),
        "attributes" => %{
          "title" => "case #{i}",
          "nested" => %{"a" => [1, nil, 2.5]},
          "_FillValue" => :nan,
          "range" => [:neg_infinity, :infinity]
        }
      }
    end)
  end

  # NaNs with payloads: zarr-python writes them as "NaN", so only the encoder direction can
  # check that their bits survive. (zarr-python itself loses float16 payloads and quiets
  # signalling NaNs when it reads hex fill values, so those are not checked against it.)
  defp payload_cases do
    [
      {:float32, {:bits, 0x7FC00001}},
      {:float64, {:bits, 0xFFF8000000000000}},
      {:complex64, {{:bits, 0x7FC00001}, 1.0}}
    ]
    |> Enum.with_index()
    |> Enum.map(fn {{dtype, fill}, i} ->
      %{
        "name" => "payload#{i}",
        "format" => 3,
        "dtype_atom" => dtype,
        "expected_fill" => fill,
        "order" => "C",
        "endian" => "little",
        "key_encoding" => "default",
        "separator" => "/",
        "dimension_names" => nil,
        "attributes" => %{
          "title" => "payload",
          "nested" => %{"a" => [1, nil, 2.5]},
          "_FillValue" => :nan,
          "range" => [:neg_infinity, :infinity]
        }
      }
    end)
  end

  defp fills_for(dtype) do
    case DType.kind(dtype) do
      kind when kind in [:int, :uint] ->
        {min, max} = DType.int_range(dtype)
        [{min, min}, {max, max}]

      kind ->
        @fills[kind]
    end
  end

  @python_write """
  import json, sys, warnings
  import numpy as np
  import zarr
  from zarr.codecs import BytesCodec
  warnings.simplefilter("ignore")

  def num(v):
      return {"NaN": np.nan, "Infinity": np.inf, "-Infinity": -np.inf}.get(v, v)

  for case in json.load(open(sys.argv[1])):
      fill = case["fill"]
      if isinstance(fill, list):
          fill = complex(num(fill[0]), num(fill[1]))
      elif isinstance(fill, str):
          fill = num(fill)
      kwargs = dict(
          shape=case["shape"], chunks=case["chunks"], fill_value=fill,
          zarr_format=case["format"], attributes=case["attributes"],
          chunk_key_encoding={"name": case["key_encoding"], "separator": case["separator"]},
      )
      dtype = np.dtype(case["dtype"])
      if case["format"] == 2:
          kwargs.update(order=case["order"], compressors=None, filters=None)
      else:
          endian = case["endian"] if dtype.itemsize > 1 else None
          kwargs.update(serializer=BytesCodec(endian=endian))
          if case["dimension_names"] is not None:
              kwargs.update(dimension_names=case["dimension_names"])
          dtype = dtype.newbyteorder("<")
      zarr.create_array(sys.argv[2] + "/" + case["name"], dtype=dtype, **kwargs)
  """

  test "the decoder parses what zarr-python writes, for every dtype", %{tmp_dir: dir} do
    cases = cases()
    cases_file = Path.join(dir, "cases.json")

    File.write!(
      cases_file,
      JSON.encode(Enum.map(cases, &Map.drop(&1, ["dtype_atom", "expected_fill"])))
    )

    Python.run!(@python_write, [cases_file, dir])

    for case <- cases do
      path = Path.join(dir, case["name"])
      meta = read(path, case["format"])
      dtype = case["dtype_atom"]

      assert meta.zarr_format == case["format"]
      assert meta.shape == {5, 7}
      assert meta.chunks == {2, 3}
      assert meta.dtype == dtype
      assert_same_fill(dtype, meta.fill_value, case["expected_fill"])

      assert meta.chunk_key_encoding == %{
               name: case["key_encoding"],
               separator: case["separator"]
             }

      assert meta.attributes == %{
               "title" => case["attributes"]["title"],
               "nested" => %{"a" => [1, nil, 2.5]},
               "_FillValue" => :nan,
               "range" => [:neg_infinity, :infinity]
             }

      assert meta.dimension_names == case["dimension_names"]
      assert_codecs(meta, case)
    end
  end

  defp read(path, 3) do
    {:ok, meta} = Metadata.from_json(File.read!(Path.join(path, "zarr.json")))
    meta
  end

  defp read(path, 2) do
    {:ok, zarray} = JSON.decode(File.read!(Path.join(path, ".zarray")))

    zattrs =
      case File.read(Path.join(path, ".zattrs")) do
        {:ok, json} -> elem(JSON.decode(json), 1)
        {:error, :enoent} -> nil
      end

    {:ok, meta} = V2.decode(zarray, zattrs)
    meta
  end

  defp assert_same_fill(dtype, actual, expected) do
    {:ok, expected} = DType.cast_fill(dtype, expected)
    assert actual == expected
    assert DType.fill_element(dtype, actual) == DType.fill_element(dtype, expected)
  end

  defp assert_codecs(meta, case) do
    endian = if DType.itemsize(meta.dtype) == 1, do: %{}, else: %{"endian" => case["endian"]}

    bytes = %{name: "bytes", configuration: endian}

    expected =
      case {case["format"], case["order"]} do
        {2, "F"} -> [%{name: "transpose", configuration: %{"order" => [1, 0]}}, bytes]
        {2, "C"} -> [bytes]
        {3, _} -> [bytes, %{name: "zstd", configuration: %{"level" => 0, "checksum" => false}}]
      end

    assert meta.codecs == expected, inspect(case)
  end

  @python_read """
  import json, sys, warnings
  import numpy as np
  import zarr
  warnings.simplefilter("ignore")

  out = []
  for name in sys.argv[2:]:
      a = zarr.open_array(sys.argv[1] + "/" + name, mode="r")
      m = a.metadata
      first = np.asarray(a[0, 0])
      info = dict(
          name=name, shape=list(a.shape), chunks=list(a.chunks), dtype=a.dtype.str,
          fill_bytes=first.astype(first.dtype.newbyteorder("<")).tobytes().hex(),
          attributes=dict(a.attrs),
      )
      if m.zarr_format == 2:
          info.update(order=m.order, separator=m.dimension_separator,
                      compressor=m.compressor, filters=m.filters,
                      fill_is_none=m.fill_value is None)
      else:
          info.update(codecs=[c.to_dict() for c in m.codecs],
                      key_encoding=m.chunk_key_encoding.to_dict(),
                      dimension_names=list(m.dimension_names) if m.dimension_names else None)
      out.append(info)
  print(json.dumps(out))
  """

  test "zarr-python opens what the encoder writes, with the same meaning", %{tmp_dir: dir} do
    cases = cases() ++ payload_cases()

    for case <- cases do
      {key_name, sep} = {case["key_encoding"], case["separator"]}

      {:ok, meta} =
        Metadata.new(
          zarr_format: case["format"],
          shape: {5, 7},
          chunks: {2, 3},
          dtype: case["dtype_atom"],
          fill_value: case["expected_fill"],
          compressor: nil,
          order: if(case["format"] == 2, do: case["order"], else: "C"),
          endian: String.to_atom(case["endian"]),
          chunk_key_encoding: %{name: key_name, separator: sep},
          dimension_names: case["dimension_names"],
          attributes: case["attributes"]
        )

      path = Path.join(dir, case["name"])
      File.mkdir_p!(path)
      {:ok, documents} = Metadata.to_documents(meta)
      for {key, json} <- documents, do: File.write!(Path.join(path, key), json)
    end

    results =
      Python.run!(@python_read, [dir | Enum.map(cases, & &1["name"])])
      |> JSON.decode()
      |> then(fn {:ok, results} -> results end)

    for {case, result} <- Enum.zip(cases, results) do
      dtype = case["dtype_atom"]
      assert result["name"] == case["name"]
      assert result["shape"] == [5, 7]
      assert result["chunks"] == [2, 3]
      assert result["dtype"] == python_dtype(dtype, case)

      assert Base.decode16!(result["fill_bytes"], case: :lower) ==
               DType.fill_element(dtype, case["expected_fill"]),
             inspect(case)

      assert result["attributes"] == %{
               "title" => case["attributes"]["title"],
               "nested" => %{"a" => [1, :null, 2.5]},
               "_FillValue" => :nan,
               "range" => [:neg_infinity, :infinity]
             }

      case case["format"] do
        2 ->
          assert result["order"] == case["order"]
          assert result["separator"] == case["separator"]
          assert {result["compressor"], result["filters"]} == {:null, :null}
          assert result["fill_is_none"] == (case["expected_fill"] == nil)

        3 ->
          bytes =
            if DType.itemsize(dtype) == 1,
              do: %{"name" => "bytes"},
              else: %{"name" => "bytes", "configuration" => %{"endian" => case["endian"]}}

          assert result["codecs"] == [bytes]

          assert result["key_encoding"] == %{
                   "name" => case["key_encoding"],
                   "configuration" => %{"separator" => case["separator"]}
                 }

          assert result["dimension_names"] ==
                   if(case["dimension_names"],
                     do: Enum.map(case["dimension_names"], &(&1 || :null)),
                     else: :null
                   )
      end
    end
  end

  # zarr-python reports the stored byte order for v2 and native (little) order for v3.
  defp python_dtype(dtype, %{"format" => 2, "endian" => endian}),
    do: DType.to_v2(dtype, String.to_atom(endian))

  defp python_dtype(dtype, _case), do: DType.to_v2(dtype, :little)

  # Codec pipelines: {name, format, dtype, zarr-python arguments (Python expressions),
  # the ExZarr.Metadata.new/1 options meaning the same}.
  @pipelines [
    {"zstd", 2, "<i4", [compressors: "numcodecs.Zstd(level=3)"],
     [compressor: %{id: "zstd", level: 3}]},
    {"gzip", 2, ">f8", [compressors: "numcodecs.GZip(level=5)", order: "'F'"],
     [compressor: %{id: "gzip", level: 5}, order: :f, endian: :big]},
    {"zlib", 2, "<u2", [compressors: "numcodecs.Zlib(level=1)"],
     [compressor: %{id: "zlib", level: 1}]},
    {"bz2", 2, "|u1", [compressors: "numcodecs.BZ2(level=9)"],
     [compressor: %{id: "bz2", level: 9}]},
    {"lz4", 2, "<f4", [compressors: "numcodecs.LZ4()"],
     [compressor: %{id: "lz4", acceleration: 1}]},
    {"lzma", 2, "<i8", [compressors: "numcodecs.LZMA()"],
     [compressor: %{id: "lzma", format: 1, check: -1, preset: nil, filters: nil}]},
    {"blosc2", 2, "<i2", [compressors: "numcodecs.Blosc(cname='lz4', clevel=5, shuffle=1)"],
     [compressor: %{id: "blosc", cname: "lz4", clevel: 5, shuffle: 1, blocksize: 0}]},
    {"none2", 2, "<c16", [compressors: "None"], [compressor: nil]},
    {"gzip3", 3, "float32", [compressors: "zarr.codecs.GzipCodec(level=5)"],
     [compressor: %{id: "gzip", level: 5}]},
    {"zstd3", 3, "int64",
     [
       compressors: "zarr.codecs.ZstdCodec(level=3, checksum=True)",
       serializer: "zarr.codecs.BytesCodec(endian='big')"
     ],
     [
       codecs: [
         %{name: "bytes", configuration: %{endian: "big"}},
         %{name: "zstd", configuration: %{level: 3, checksum: true}}
       ]
     ]},
    {"blosc3", 3, "int32",
     [
       compressors:
         "[zarr.codecs.BloscCodec(cname='zstd', clevel=3, shuffle='bitshuffle'), zarr.codecs.Crc32cCodec()]",
       filters: "[zarr.codecs.TransposeCodec(order=[1, 0])]"
     ],
     [
       codecs: [
         %{name: "transpose", configuration: %{order: [1, 0]}},
         %{name: "bytes", configuration: %{endian: "little"}},
         %{
           name: "blosc",
           configuration: %{
             cname: "zstd",
             clevel: 3,
             shuffle: "bitshuffle",
             typesize: 4,
             blocksize: 0
           }
         },
         "crc32c"
       ]
     ]},
    {"none3", 3, "uint8", [compressors: "None"], [compressor: nil]}
  ]

  @python_pipelines """
  import json, sys, warnings
  import numcodecs
  import zarr, zarr.codecs
  warnings.simplefilter("ignore")

  root, cases = sys.argv[1], json.load(open(sys.argv[2]))
  if sys.argv[3] == "write":
      for case in cases:
          kwargs = {k: eval(v) for k, v in case["args"].items()}
          zarr.create_array(root + "/" + case["name"], shape=(5, 7), chunks=(2, 3),
                            dtype=case["dtype"], zarr_format=case["format"], **kwargs)
  else:
      out = {}
      for case in cases:
          meta = [zarr.open_array(root + "/" + case["name"] + suffix, mode="r").metadata.to_dict()
                  for suffix in ("", "_decoded", "_new")]
          out[case["name"]] = [meta[0] == m for m in meta[1:]]
      print(json.dumps(out))
  """

  test "codec pipelines: zarr-python's documents decode and re-encode exactly, and opts mean the same",
       %{tmp_dir: dir} do
    cases =
      for {name, format, dtype, args, _opts} <- @pipelines do
        %{"name" => name, "format" => format, "dtype" => dtype, "args" => Map.new(args)}
      end

    cases_file = Path.join(dir, "pipelines.json")
    File.write!(cases_file, JSON.encode(cases))
    Python.run!(@python_pipelines, [dir, cases_file, "write"])

    for {name, format, _dtype, _args, opts} <- @pipelines do
      path = Path.join(dir, name)

      # Decode what zarr-python wrote, encode it again: the same JSON.
      meta = read(path, format)

      case format do
        3 ->
          {:ok, written} = JSON.decode(File.read!(Path.join(path, "zarr.json")))
          assert ExZarr.Metadata.V3.encode(meta) == written, name

        2 ->
          {:ok, written} = JSON.decode(File.read!(Path.join(path, ".zarray")))
          assert {:ok, %{zarray: ^written}} = V2.encode(meta), name
      end

      write_documents(path <> "_decoded", meta)

      # The same array described with ExZarr options.
      {:ok, from_opts} =
        Metadata.new(
          [zarr_format: format, shape: {5, 7}, chunks: {2, 3}, dtype: meta.dtype] ++ opts
        )

      assert from_opts.codecs == meta.codecs, name
      write_documents(path <> "_new", from_opts)
    end

    {:ok, same} = JSON.decode(Python.run!(@python_pipelines, [dir, cases_file, "read"]))
    assert same == Map.new(cases, &{&1["name"], [true, true]})
  end

  defp write_documents(path, meta) do
    File.mkdir_p!(path)
    {:ok, documents} = Metadata.to_documents(meta)
    for {key, json} <- documents, do: File.write!(Path.join(path, key), json)
  end

  @python_tensorstore """
  import sys
  import tensorstore as ts

  root = sys.argv[1]
  v2_dtypes = {"float32": "<f4", "complex64": "<c8", "bool": "|b1", "uint16": ">u2", "float16": "<f2"}
  fills = {"float32": "NaN", "complex64": [1.0, "-Infinity"], "bool": True, "uint16": 7,
           "float16": "0x7e01"}
  for dt, v2 in v2_dtypes.items():
      ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": f"{root}/zarr_{dt}"},
               "metadata": {"shape": [5, 7], "chunks": [2, 3], "dtype": v2, "order": "F"},
               "create": True}).result()
      bytes_codec = {"name": "bytes"} if dt == "bool" else \
          {"name": "bytes", "configuration": {"endian": "big"}}
      ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": f"{root}/zarr3_{dt}"},
               "metadata": {"shape": [5, 7], "data_type": dt, "dimension_names": ["y", ""],
                            "chunk_grid": {"name": "regular",
                                           "configuration": {"chunk_shape": [2, 3]}},
                            "fill_value": fills[dt],
                            "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                                       bytes_codec, {"name": "gzip"}]},
               "create": True}).result()
  """

  test "the decoder parses what tensorstore writes (zarr and zarr3 drivers)", %{tmp_dir: dir} do
    Python.run!(@python_tensorstore, [dir])

    expected = %{
      float32: {:little, :nan},
      complex64: {:little, {1.0, :neg_infinity}},
      bool: {nil, true},
      uint16: {:big, 7},
      float16: {:little, {:bits, 0x7E01}}
    }

    for {dtype, {endian, fill}} <- expected do
      v2 = read(Path.join(dir, "zarr_#{dtype}"), 2)
      assert {v2.shape, v2.chunks, v2.dtype, v2.fill_value} == {{5, 7}, {2, 3}, dtype, nil}

      bytes = V2.bytes_codec(dtype, endian)

      assert [
               %{name: "transpose", configuration: %{"order" => [1, 0]}},
               ^bytes,
               %{name: "blosc"}
             ] = v2.codecs

      v3 = read(Path.join(dir, "zarr3_#{dtype}"), 3)
      assert {v3.shape, v3.chunks, v3.dtype, v3.fill_value} == {{5, 7}, {2, 3}, dtype, fill}
      assert v3.dimension_names == ["y", ""]
      assert v3.chunk_key_encoding == %{name: "default", separator: "/"}

      assert [
               %{name: "transpose", configuration: %{"order" => [1, 0]}},
               %{name: "bytes"},
               %{name: "gzip", configuration: %{"level" => 6}}
             ] = v3.codecs
    end
  end
end
