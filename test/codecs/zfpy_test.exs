defmodule ExZarr.Codecs.ZfpyTest do
  # numcodecs ZFPY (zfp): byte for byte as zfpy writes and reads it, for every type, rank and
  # mode; arrays both ways with zarr-python (v2 compressor, v3 serializer); bad configurations
  # and hostile streams are errors.
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.Zfpy

  alias ExZarr.Codec.Registry
  alias ExZarr.Codecs.Zfpy
  alias ExZarr.Test.{NumcodecsPeer, Python}

  @moduletag :interop

  @configs [
    %{},
    %{"mode" => 4, "tolerance" => 0.01},
    %{"mode" => 2, "rate" => 16},
    %{"mode" => 3, "precision" => 20},
    %{"mode" => 4, "tolerance" => 0},
    %{"mode" => 2, "rate" => 12.5, "tolerance" => 3}
  ]
  @arrays [
    {:float64, {37}},
    {:float32, {5, 7}},
    {:int32, {3, 6, 5}},
    {:int64, {2, 3, 5, 6}},
    {:float64, {4, 4, 4}}
  ]
  @numpy %{float32: "<f4", float64: "<f8", int32: "<i4", int64: "<i8"}

  defp sample(dtype, shape) do
    n = Tuple.product(shape)

    for i <- 1..n, into: <<>> do
      x = :math.sin(i / 7) * 1000 + i

      case dtype do
        :float64 -> <<x::float-64-little>>
        :float32 -> <<x::float-32-little>>
        :int32 -> <<round(x) * 1013::signed-32-little>>
        :int64 -> <<round(x) * 1_000_003::signed-64-little>>
      end
    end
  end

  defp codec(config, dtype, shape) do
    Zfpy.init(config, %{shape: shape, dtype: dtype, fill_value: 0, decoded_size: nil})
  end

  @tag :tmp_dir
  test "the same streams as zfpy, and each decodes the other's", %{tmp_dir: dir} do
    cases =
      for {config, c} <- Enum.with_index(@configs),
          {{dtype, shape}, a} <- Enum.with_index(@arrays) do
        name = "#{c}-#{a}"
        data = sample(dtype, shape)
        {:ok, s} = codec(config, dtype, shape)
        {:ok, stream} = Zfpy.encode(data, s)
        File.write!(Path.join(dir, name <> ".data"), data)
        File.write!(Path.join(dir, name <> ".ex"), stream)
        {:ok, v2} = Zfpy.to_v2(config)

        %{
          "name" => name,
          "config" => v2,
          "dtype" => @numpy[dtype],
          "shape" => Tuple.to_list(shape)
        }
      end

    assert NumcodecsPeer.compare(dir, cases) == []

    for %{"name" => name} = c <- cases do
      {config, {dtype, shape}} = {Enum.at(@configs, idx(name, 0)), Enum.at(@arrays, idx(name, 1))}
      {:ok, s} = codec(config, dtype, shape)
      theirs = File.read!(Path.join(dir, name <> ".py"))
      # What zfpy decodes from ExZarr's stream is what ExZarr decodes from zfpy's.
      assert Zfpy.decode(theirs, s) == {:ok, File.read!(Path.join(dir, name <> ".pydec"))},
             inspect(c)

      if config == %{}, do: assert(Zfpy.decode(theirs, s) == {:ok, sample(dtype, shape)})
    end
  end

  defp idx(name, i), do: name |> String.split("-") |> Enum.at(i) |> String.to_integer()

  @tag :tmp_dir
  test "zarr-python and ExZarr read each other's zfpy arrays, v2 and v3", %{tmp_dir: dir} do
    data = sample(:float64, {9, 10})
    File.write!(Path.join(dir, "data.bin"), data)

    for {name, format, config} <- [
          {"v2", 2, %{"mode" => 4, "tolerance" => 0.5}},
          {"v2_lossless", 2, %{}},
          {"v3", 3, %{"mode" => 2, "rate" => 20}},
          {"v3_lossless", 3, %{}}
        ] do
      opts =
        if format == 2,
          do: [compressor: Map.put(config, "id", "zfpy")],
          else: [codecs: [%{name: "numcodecs.zfpy", configuration: config}]]

      {:ok, a} =
        ExZarr.create(
          [path: Path.join(dir, "ex_" <> name), shape: {9, 10}, chunks: {4, 8}] ++
            [dtype: :float64, zarr_format: format] ++ opts
        )

      :ok = ExZarr.Array.set_slice(a, data)
      {:ok, back} = ExZarr.Array.get_slice(a)
      File.write!(Path.join([dir, "ex_" <> name <> ".bin"]), back)
    end

    out =
      Python.run!(
        """
        import json, os, sys, warnings
        import numpy as np, numcodecs, zarr
        from zarr.codecs import numcodecs as nc
        warnings.simplefilter("ignore")
        d = sys.argv[1]
        data = np.fromfile(os.path.join(d, "data.bin"), dtype="<f8").reshape(9, 10)
        bad = []
        for name in ["v2", "v2_lossless", "v3", "v3_lossless"]:
            ex = zarr.open_array(os.path.join(d, "ex_" + name), mode="r")
            want = np.fromfile(os.path.join(d, "ex_" + name + ".bin"), dtype="<f8").reshape(9, 10)
            if not np.array_equal(ex[:], want):
                bad.append(name)
            meta = json.load(open(os.path.join(d, "ex_" + name, ".zarray" if "v2" in name else "zarr.json")))
            path = os.path.join(d, "py_" + name)
            if "v2" in name:
                cfg = meta["compressor"]
                a = zarr.create_array(path, shape=(9, 10), chunks=(4, 8), dtype="<f8", zarr_format=2,
                                      compressors=numcodecs.get_codec(cfg))
            else:
                cfg = meta["codecs"][0]["configuration"]
                a = zarr.create_array(path, shape=(9, 10), chunks=(4, 8), dtype="<f8", zarr_format=3,
                                      serializer=nc.ZFPY(**cfg), compressors=None)
            a[:] = data
        print(json.dumps(bad))
        """,
        [dir]
      )

    assert NumcodecsPeer.last_json(out) == [], out

    for name <- ["v2", "v2_lossless", "v3", "v3_lossless"] do
      {:ok, py} = ExZarr.open(path: Path.join(dir, "py_" <> name))
      assert ExZarr.Array.get_slice(py) == {:ok, File.read!(Path.join(dir, "ex_#{name}.bin"))}

      assert NumcodecsPeer.chunk_files(Path.join(dir, "py_" <> name)) ==
               NumcodecsPeer.chunk_files(Path.join(dir, "ex_" <> name)),
             name
    end

    {:ok, lossless} = ExZarr.open(path: Path.join(dir, "py_v3_lossless"))
    assert ExZarr.Array.get_slice(lossless) == {:ok, data}
  end

  test "configurations zfpy cannot run are errors" do
    bad = [
      {%{"mode" => 1}, :float64, {8}},
      {%{"mode" => 5}, :float64, {8}},
      {%{"mode" => "4"}, :float64, {8}},
      {%{"tolerance" => "small"}, :float64, {8}},
      {%{"mode" => 2, "rate" => 65}, :float64, {8}},
      {%{"mode" => 2, "rate" => 2}, :float64, {8}},
      {%{"mode" => 3, "precision" => 65}, :float64, {8}},
      {%{"mode" => 3, "precision" => 1.5}, :float64, {8}},
      {%{"compression_kwargs" => 3}, :float64, {8}},
      {%{}, :int16, {8}},
      {%{}, :complex64, {8}},
      {%{}, :float64, {2, 2, 2, 2, 2}},
      {%{}, :float64, {}}
    ]

    for {config, dtype, shape} <- bad,
        do: assert({:error, _} = codec(config, dtype, shape), inspect({config, dtype, shape}))

    assert {:ok, _} = codec(%{"mode" => 2, "rate" => 0.75}, :float64, {4, 4})

    assert Registry.from_v2(%{"id" => "zfpy", "level" => 1}) ==
             {:error, {:invalid_codec_config, "zfpy", {:unknown_key, "level"}}}

    assert Registry.resolve(%{name: "numcodecs.zfpy", configuration: %{"extra" => 1}}) ==
             {:error, {:invalid_codec_config, "numcodecs.zfpy", {:unknown_key, "extra"}}}
  end

  test "streams for another chunk, truncated or corrupted, are errors or data of the chunk's size" do
    {:ok, s} = codec(%{"mode" => 4, "tolerance" => 0.001}, :float64, {6, 7})
    {:ok, stream} = Zfpy.encode(sample(:float64, {6, 7}), s)

    for {config, dtype, shape} <- [
          {%{}, :float64, {7, 6}},
          {%{}, :float32, {6, 7}},
          {%{}, :float64, {42}}
        ] do
      {:ok, other} = codec(config, dtype, shape)
      assert {:error, {:zfp, _}} = Zfpy.decode(stream, other)
    end

    assert {:error, {:zfp, _}} = Zfpy.decode("", s)
    assert {:error, {:zfp, _}} = Zfpy.decode(binary_part(stream, 0, 10), s)

    :rand.seed(:exsss, {1, 2, 3})

    for _ <- 1..300 do
      at = :rand.uniform(byte_size(stream)) - 1
      <<head::binary-size(at), byte, rest::binary>> = stream
      mutated = <<head::binary, Bitwise.bxor(byte, :rand.uniform(255)), rest::binary>>
      cut = binary_part(mutated, 0, :rand.uniform(byte_size(mutated)))

      for input <- [mutated, cut] do
        case Zfpy.decode(input, s) do
          {:ok, out} -> assert byte_size(out) == 6 * 7 * 8
          {:error, {:zfp, _}} -> :ok
        end
      end
    end
  end
end
