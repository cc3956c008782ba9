defmodule ExZarr.Codecs.ChecksumsInteropTest do
  # Arrays with the numcodecs checksum codecs, v2 and v3, both ways with zarr-python: each reads
  # the other's arrays exactly, ExZarr's chunk files and codec metadata equal zarr-python's, and
  # a corrupted chunk is an error, not data.
  use ExUnit.Case, async: true

  alias ExZarr.Test.{NumcodecsPeer, Python}

  @moduletag :interop
  @shape {30, 20}
  @chunks {16, 16}

  # {name, zarr_format, numcodecs configs (v2: compressor then filters; v3: compressors)}
  @cases [
    {"crc32_v2", 2, [%{"id" => "crc32"}]},
    {"adler32_v2", 2, [%{"id" => "adler32", "location" => "end"}]},
    {"fletcher32_v2", 2, [%{"id" => "fletcher32"}]},
    {"jenkins_v2", 2, [%{"id" => "jenkins_lookup3", "initval" => 7, "prefix" => :null}]},
    {"adler32_filter_v2", 2, [%{"id" => "crc32"}, %{"id" => "adler32"}]},
    {"crc32_v3", 3, [%{"id" => "crc32", "location" => "end"}]},
    {"adler32_v3", 3, [%{"id" => "adler32"}]},
    {"fletcher32_v3", 3, [%{"id" => "fletcher32"}]},
    {"jenkins_v3", 3, [%{"id" => "jenkins_lookup3", "initval" => 0, "prefix" => :null}]},
    {"chain_v3", 3, [%{"id" => "fletcher32"}, %{"id" => "jenkins_lookup3"}, %{"id" => "crc32"}]}
  ]

  @script """
  import json, os, sys, warnings
  import numpy as np, numcodecs, zarr
  from zarr.codecs import numcodecs as nc
  warnings.simplefilter("ignore")
  d = sys.argv[1]
  cases = json.load(open(os.path.join(d, "cases.json")))
  classes = {"crc32": nc.CRC32, "adler32": nc.Adler32, "fletcher32": nc.Fletcher32,
             "jenkins_lookup3": nc.JenkinsLookup3}
  data = np.fromfile(os.path.join(d, "data.bin"), dtype="<i4").reshape(cases[0]["shape"])
  bad = []
  for c in cases:
      ex = zarr.open_array(os.path.join(d, "ex_" + c["name"]), mode="r")
      if not np.array_equal(ex[:], data):
          bad.append(c["name"])
      path = os.path.join(d, "py_" + c["name"])
      configs = [{k: v for k, v in cfg.items()} for cfg in c["codecs"]]
      if c["format"] == 2:
          comp, filters = configs[0], configs[1:]
          a = zarr.create_array(path, shape=data.shape, chunks=c["chunks"], dtype="<i4", zarr_format=2,
                                compressors=numcodecs.get_codec(comp),
                                filters=[numcodecs.get_codec(f) for f in filters] or None)
      else:
          comps = [classes[cfg.pop("id")](**cfg) for cfg in configs]
          a = zarr.create_array(path, shape=data.shape, chunks=c["chunks"], dtype="<i4", zarr_format=3,
                                compressors=comps)
      a[:] = data
  print(json.dumps(bad))
  """

  defp sample do
    for i <- 1..Tuple.product(@shape),
        into: <<>>,
        do: <<rem(i * 7919, 100_003) - 50_000::32-little>>
  end

  defp options(2, [compressor | filters]),
    do: [compressor: compressor, filters: if(filters != [], do: filters)]

  defp options(3, configs) do
    codecs =
      Enum.map(configs, fn %{"id" => id} = c ->
        %{name: "numcodecs." <> id, configuration: Map.delete(c, "id")}
      end)

    [codecs: [%{name: "bytes", configuration: %{"endian" => "little"}} | codecs]]
  end

  defp codecs_meta(path) do
    case File.read(Path.join(path, "zarr.json")) do
      {:ok, json} ->
        Map.take(:jiffy.decode(json, [:return_maps]), ["codecs"])

      _ ->
        path
        |> Path.join(".zarray")
        |> File.read!()
        |> :jiffy.decode([:return_maps])
        |> Map.take(["compressor", "filters"])
    end
  end

  @tag :tmp_dir
  test "zarr-python and ExZarr read each other's arrays; same chunks and metadata", %{
    tmp_dir: dir
  } do
    data = sample()
    File.write!(Path.join(dir, "data.bin"), data)

    cases =
      for {name, format, configs} <- @cases do
        {:ok, a} =
          ExZarr.create(
            [path: Path.join(dir, "ex_" <> name), shape: @shape, chunks: @chunks] ++
              [dtype: :int32, zarr_format: format] ++ options(format, configs)
          )

        :ok = ExZarr.Array.set_slice(a, data)

        %{
          "name" => name,
          "format" => format,
          "codecs" => configs,
          "shape" => Tuple.to_list(@shape),
          "chunks" => Tuple.to_list(@chunks)
        }
      end

    File.write!(Path.join(dir, "cases.json"), :jiffy.encode(cases))
    out = Python.run!(@script, [dir])
    assert out |> String.split("\n", trim: true) |> List.last() == "[]", out

    for {name, _format, _configs} <- @cases do
      py = Path.join(dir, "py_" <> name)
      ex = Path.join(dir, "ex_" <> name)
      {:ok, a} = ExZarr.open(path: py)
      assert ExZarr.Array.get_slice(a) == {:ok, data}, name
      assert NumcodecsPeer.chunk_files(ex) == NumcodecsPeer.chunk_files(py), name
      assert codecs_meta(ex) == codecs_meta(py), name

      # One flipped bit anywhere in a stored chunk is an error.
      chunk = py |> NumcodecsPeer.chunk_files() |> Map.keys() |> Enum.min()
      file = Path.join(py, chunk)
      <<head::binary-size(40), byte, rest::binary>> = File.read!(file)
      File.write!(file, <<head::binary, Bitwise.bxor(byte, 4), rest::binary>>)
      {:ok, a} = ExZarr.open(path: py)
      assert {:error, _} = ExZarr.Array.get_slice(a), name
    end
  end
end
