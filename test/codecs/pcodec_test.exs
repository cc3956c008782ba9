defmodule ExZarr.Codecs.PcodecTest do
  # numcodecs PCodec (pcodec, the Rust crate pco linked into the NIF): byte for byte as numcodecs
  # writes it for every type and setting; arrays both ways with zarr-python (v2 compressor, v3
  # serializer); bad configurations and hostile data are errors. Skipped when the NIF was built
  # without pcodec (no cargo at build time).
  use ExUnit.Case, async: true

  alias ExZarr.Codec.Registry
  alias ExZarr.Codecs.Pcodec
  alias ExZarr.Test.{NumcodecsPeer, Python}

  @moduletag :interop
  if match?({:error, {:pcodec, _}}, ExZarr.Native.pco_compress(<<>>, 5, {8, 0, 0, 0, 1})),
    do: @moduletag(skip: "the NIF was built without pcodec (cargo was not found)")

  doctest ExZarr.Codecs.Pcodec

  @configs [
    %{},
    %{"level" => 0},
    %{"level" => 12, "mode_spec" => "classic"},
    %{"delta_spec" => "try_consecutive", "delta_encoding_order" => 2},
    %{"delta_spec" => "none", "equal_pages_up_to" => 300},
    %{"delta_spec" => "try_lookback"},
    %{"delta_encoding_order" => 1}
  ]
  @types [:uint16, :uint32, :uint64, :int16, :int32, :int64, :float16, :float32, :float64]
  @numpy %{uint16: "<u2", uint32: "<u4", uint64: "<u8", int16: "<i2", int32: "<i4", int64: "<i8"}
  @numpy Map.merge(@numpy, %{float16: "<f2", float32: "<f4", float64: "<f8"})
  @n 1000

  defp sample(dtype) do
    for i <- 1..@n, into: <<>> do
      x = :math.sin(i / 30) * 200 + rem(i * 7, 13)

      case dtype do
        :float64 -> <<x::float-64-little>>
        :float32 -> <<x::float-32-little>>
        :float16 -> <<round(x) + 0x4000::16-little>>
        :uint16 -> <<round(x) + 1000::16-little>>
        :int16 -> <<round(x)::signed-16-little>>
        :uint32 -> <<round(x) * 1001 + 300_000::32-little>>
        :int32 -> <<round(x) * 1001::signed-32-little>>
        :uint64 -> <<round(x) * 1_000_003 + 1_000_000_000::64-little>>
        :int64 -> <<round(x) * 1_000_003::signed-64-little>>
      end
    end
  end

  defp codec(config, dtype, shape \\ {@n}),
    do: Pcodec.init(config, %{shape: shape, dtype: dtype, fill_value: 0, decoded_size: nil})

  @tag :tmp_dir
  test "the same bytes as numcodecs, and each decodes the other's", %{tmp_dir: dir} do
    cases =
      for {config, c} <- Enum.with_index(@configs), dtype <- @types do
        name = "#{c}-#{dtype}"
        {:ok, s} = codec(config, dtype)
        {:ok, enc} = Pcodec.encode(sample(dtype), s)
        File.write!(Path.join(dir, name <> ".data"), sample(dtype))
        File.write!(Path.join(dir, name <> ".ex"), enc)
        {:ok, v2} = Pcodec.to_v2(config)
        %{"name" => name, "config" => v2, "dtype" => @numpy[dtype]}
      end

    assert NumcodecsPeer.compare(dir, cases) == []

    for {config, c} <- Enum.with_index(@configs), dtype <- @types do
      {:ok, s} = codec(config, dtype)
      theirs = File.read!(Path.join(dir, "#{c}-#{dtype}.py"))
      assert Pcodec.decode(theirs, s) == {:ok, sample(dtype)}, inspect({config, dtype})
    end
  end

  @tag :tmp_dir
  test "zarr-python and ExZarr read each other's pcodec arrays, v2 and v3", %{tmp_dir: dir} do
    data = binary_part(sample(:int32), 0, 4 * 90)
    File.write!(Path.join(dir, "data.bin"), data)

    for {name, format, config} <- [
          {"v2", 2, %{"level" => 5}},
          {"v3", 3, %{"mode_spec" => "classic"}}
        ] do
      opts =
        if format == 2,
          do: [compressor: Map.put(config, "id", "pcodec")],
          else: [codecs: [%{name: "numcodecs.pcodec", configuration: config}]]

      {:ok, a} =
        ExZarr.create(
          [path: Path.join(dir, "ex_" <> name), shape: {9, 10}, chunks: {4, 8}] ++
            [dtype: :int32, zarr_format: format] ++ opts
        )

      :ok = ExZarr.Array.set_slice(a, data)
    end

    out =
      Python.run!(
        """
        import json, os, sys, warnings
        import numpy as np, numcodecs, zarr
        from zarr.codecs import numcodecs as nc
        warnings.simplefilter("ignore")
        d = sys.argv[1]
        data = np.fromfile(os.path.join(d, "data.bin"), dtype="<i4").reshape(9, 10)
        bad = []
        for name in ["v2", "v3"]:
            if not np.array_equal(zarr.open_array(os.path.join(d, "ex_" + name), mode="r")[:], data):
                bad.append(name)
            path = os.path.join(d, "py_" + name)
            if name == "v2":
                cfg = json.load(open(os.path.join(d, "ex_v2", ".zarray")))["compressor"]
                a = zarr.create_array(path, shape=(9, 10), chunks=(4, 8), dtype="<i4", zarr_format=2,
                                      compressors=numcodecs.get_codec(cfg))
            else:
                cfg = json.load(open(os.path.join(d, "ex_v3", "zarr.json")))["codecs"][0]["configuration"]
                a = zarr.create_array(path, shape=(9, 10), chunks=(4, 8), dtype="<i4", zarr_format=3,
                                      serializer=nc.PCodec(**cfg), compressors=None)
            a[:] = data
        print(json.dumps(bad))
        """,
        [dir]
      )

    assert NumcodecsPeer.last_json(out) == [], out

    for name <- ["v2", "v3"] do
      {:ok, py} = ExZarr.open(path: Path.join(dir, "py_" <> name))
      assert ExZarr.Array.get_slice(py) == {:ok, data}, name

      assert NumcodecsPeer.chunk_files(Path.join(dir, "py_" <> name)) ==
               NumcodecsPeer.chunk_files(Path.join(dir, "ex_" <> name)),
             name
    end
  end

  test "configurations numcodecs refuses, or pcodec cannot run, are errors" do
    bad = [
      %{"level" => 13},
      %{"level" => -1},
      %{"mode_spec" => "try_float_mult"},
      %{"delta_spec" => "no_op"},
      %{"delta_spec" => "try_consecutive"},
      %{"delta_spec" => "none", "delta_encoding_order" => 1},
      %{"delta_encoding_order" => 8},
      %{"paging_spec" => "exact_page_sizes"},
      %{"equal_pages_up_to" => 0}
    ]

    for config <- bad, do: assert({:error, _} = codec(config, :int32), inspect(config))
    for dtype <- [:int8, :uint8, :bool, :complex64], do: assert({:error, _} = codec(%{}, dtype))

    assert Registry.from_v2(%{"id" => "pcodec", "compression_level" => 3}) ==
             {:error, {:invalid_codec_config, "pcodec", {:unknown_key, "compression_level"}}}

    # A single number with classic mode and lookback: pco 0.4.9 writes data it cannot read
    # back, an error rather than a chunk lost.
    {:ok, s} = codec(%{"mode_spec" => "classic", "delta_spec" => "try_lookback"}, :int16, {1})
    assert {:error, {:pcodec, msg}} = Pcodec.encode(<<0xC1, 0x3D>>, s)
    assert msg =~ "cannot encode"
  end

  # Encoding reads its output back only where pco 0.4.9 may write unreadable data: lookback
  # delta with a chunk (a page) of one number, e.g. an odd count in pages of up to two.
  test "lookback with chunks of one number is an error; every other chunk size round-trips" do
    for n <- [1, 2, 3, 4, 5, 16, 17, 33], pages <- [1, 2, 3, 16], mode <- ["auto", "classic"] do
      config = %{
        "delta_spec" => "try_lookback",
        "mode_spec" => mode,
        "equal_pages_up_to" => pages
      }

      {:ok, s} = codec(config, :int32, {n})
      data = for i <- 1..n, into: <<>>, do: <<rem(i * 7919, 1000)::32-little>>
      chunk_of_one = div(n, div(n + pages - 1, pages)) == 1

      case Pcodec.encode(data, s) do
        {:ok, enc} -> assert not chunk_of_one and Pcodec.decode(enc, s) == {:ok, data}
        {:error, {:pcodec, msg}} -> assert chunk_of_one and msg =~ "cannot encode"
      end
    end
  end

  test "data for another chunk, truncated or corrupted, is an error or the chunk's size" do
    {:ok, s} = codec(%{}, :float64)
    {:ok, enc} = Pcodec.encode(sample(:float64), s)

    for {dtype, shape} <- [
          {:float32, {@n}},
          {:float64, {@n + 1}},
          {:float64, {@n - 1}},
          {:int64, {@n}}
        ] do
      {:ok, other} = codec(%{}, dtype, shape)
      assert {:error, {:pcodec, _}} = Pcodec.decode(enc, other), inspect({dtype, shape})
    end

    assert {:error, {:pcodec, _}} = Pcodec.decode("", s)
    :rand.seed(:exsss, {4, 5, 6})

    for _ <- 1..300 do
      at = :rand.uniform(byte_size(enc)) - 1
      <<head::binary-size(at), byte, rest::binary>> = enc
      mutated = <<head::binary, Bitwise.bxor(byte, :rand.uniform(255)), rest::binary>>

      for input <- [mutated, binary_part(mutated, 0, :rand.uniform(byte_size(mutated)))] do
        case Pcodec.decode(input, s) do
          {:ok, out} -> assert byte_size(out) == 8 * @n
          {:error, {:pcodec, _}} -> :ok
        end
      end
    end
  end
end
