defmodule ExZarr.Codecs.CompressorsTest do
  use ExUnit.Case, async: true

  alias ExZarr.Test.Python

  # numcodecs configs (Zarr v2 form) covering every compressor and its main options.
  @configs [
    %{"id" => "zstd", "level" => 1},
    %{"id" => "zstd", "level" => 5, "checksum" => true},
    %{"id" => "zstd", "level" => -3},
    %{"id" => "blosc", "cname" => "lz4", "clevel" => 5, "shuffle" => 1, "blocksize" => 0},
    %{"id" => "blosc", "cname" => "zstd", "clevel" => 3, "shuffle" => 2, "blocksize" => 0},
    %{"id" => "blosc", "cname" => "blosclz", "clevel" => 9, "shuffle" => 0, "blocksize" => 0},
    %{"id" => "blosc", "cname" => "zlib", "clevel" => 1, "shuffle" => -1, "blocksize" => 0},
    %{"id" => "blosc", "cname" => "lz4hc", "clevel" => 4, "shuffle" => 1, "blocksize" => 4096},
    %{"id" => "lz4", "acceleration" => 1},
    %{"id" => "lz4", "acceleration" => 20},
    %{"id" => "bz2", "level" => 1},
    %{"id" => "bz2", "level" => 9},
    %{"id" => "lzma"},
    %{"id" => "lzma", "preset" => 1, "check" => 1},
    %{"id" => "lzma", "format" => 2, "preset" => 2},
    %{"id" => "lzma", "format" => 3, "filters" => [%{"id" => 0x21, "preset" => 1}]},
    %{
      "id" => "lzma",
      "format" => 3,
      "filters" => [%{"id" => 3, "dist" => 8}, %{"id" => 0x21, "preset" => 0x80000001}]
    },
    %{"id" => "gzip", "level" => 1},
    %{"id" => "gzip", "level" => 9},
    %{"id" => "zlib", "level" => 1},
    %{"id" => "zlib", "level" => -1},
    %{"id" => "crc32c"},
    %{"id" => "crc32c", "location" => "start"}
  ]

  defp codec(v2_config, decoded_size, dtype \\ :float64),
    do: ExZarr.Test.Codecs.from_v2(v2_config, decoded_size, dtype)

  # A smooth field plus noise, as float64: compressible but not trivially.
  defp sample(n) do
    for i <- 0..(n - 1), into: <<>> do
      <<:math.sin(i / 50) * 100 + :rand.uniform() * 0.01::float-64-little>>
    end
  end

  defp roundtrip({module, state}, data) do
    {:ok, encoded} = module.encode(data, state)
    encoded = IO.iodata_to_binary(encoded)
    {encoded, module.decode(encoded, state)}
  end

  @tag :tmp_dir
  test "numcodecs decodes what ExZarr encodes and the reverse", %{tmp_dir: dir} do
    data = sample(20_000)
    File.write!(Path.join(dir, "data.bin"), data)
    File.write!(Path.join(dir, "configs.json"), :jiffy.encode(@configs))

    for {config, i} <- Enum.with_index(@configs) do
      {module, state} = codec(config, byte_size(data))
      {:ok, encoded} = module.encode(data, state)
      File.write!(Path.join(dir, "#{i}.ex"), encoded)
    end

    out =
      Python.run!(
        """
        import json, os, sys
        import numpy as np, numcodecs
        from numcodecs.compat import ensure_bytes
        d = sys.argv[1]
        configs = json.load(open(os.path.join(d, "configs.json")))
        data = open(os.path.join(d, "data.bin"), "rb").read()
        arr = np.frombuffer(data, "<f8")
        bad = []
        for i, c in enumerate(configs):
            codec = numcodecs.get_codec(dict(c))
            open(os.path.join(d, f"{i}.py"), "wb").write(ensure_bytes(codec.encode(arr)))
            ours = open(os.path.join(d, f"{i}.ex"), "rb").read()
            if ensure_bytes(codec.decode(ours)) != data:
                bad.append(c)
        print(json.dumps(bad))
        """,
        [dir]
      )

    assert :jiffy.decode(out, [:return_maps]) == [], "numcodecs could not decode: #{out}"

    for {config, i} <- Enum.with_index(@configs), size <- [byte_size(data), nil] do
      {module, state} = codec(config, size)
      theirs = File.read!(Path.join(dir, "#{i}.py"))
      assert module.decode(theirs, state) == {:ok, data}, inspect(config)
    end
  end

  test "every codec round-trips with known and unknown decoded size" do
    data = sample(20_000)

    for config <- @configs, size <- [byte_size(data), nil] do
      {encoded, decoded} = roundtrip(codec(config, size), data)
      assert decoded == {:ok, data}, "#{inspect(config)} size #{inspect(size)}"
      assert byte_size(encoded) > 0
    end
  end

  test "empty and tiny inputs round-trip" do
    for config <- @configs, data <- ["", "x", :binary.copy("ab", 3)] do
      {_encoded, decoded} = roundtrip(codec(config, byte_size(data), :uint8), data)
      assert decoded == {:ok, data}, inspect(config)
    end
  end

  test "a compressor given a box of a larger array encodes what a copy of the box gives" do
    for config <- @configs, config["id"] != "crc32c", _ <- 1..3 do
      shape = {Enum.random(1..40), Enum.random(1..40), Enum.random(1..3)}
      itemsize = Enum.random([1, 2, 8])
      data = sample(div(Enum.product(Tuple.to_list(shape)) * itemsize + 7, 8))
      data = binary_part(data, 0, Enum.product(Tuple.to_list(shape)) * itemsize)
      start = shape |> Tuple.to_list() |> Enum.map(&Enum.random(0..(&1 - 1))) |> List.to_tuple()

      count =
        Enum.zip_with(Tuple.to_list(shape), Tuple.to_list(start), &Enum.random(1..(&1 - &2)))
        |> List.to_tuple()

      {:ok, copy} =
        ExZarr.Native.copy_regions(count, itemsize, {:fill, <<0::size(itemsize * 8)>>}, [
          {data, shape, start, {0, 0, 0}, count}
        ])

      {module, state} = codec(config, byte_size(copy))
      {:ok, expected} = module.encode(copy, state)

      assert module.encode({:gather, data, shape, start, count, itemsize}, state) ==
               {:ok, expected},
             inspect(config)
    end
  end

  test "iodata input is accepted by encoders" do
    for config <- @configs do
      {module, state} = codec(config, 10)
      {:ok, encoded} = module.encode(["abc", ["de", ?f], "ghij"], state)
      assert module.decode(IO.iodata_to_binary(encoded), state) == {:ok, "abcdefghij"}
    end
  end

  test "truncated, corrupted and empty inputs give errors, never crashes" do
    data = sample(5_000)

    for config <- @configs do
      {module, state} = codec(config, byte_size(data))
      {:ok, encoded} = module.encode(data, state)
      encoded = IO.iodata_to_binary(encoded)
      n = byte_size(encoded)

      assert {:error, _} = module.decode("", state), inspect(config)

      for cut <- [1, 3, div(n, 2), n - 1] do
        assert {:error, _} = module.decode(binary_part(encoded, 0, cut), state),
               "#{inspect(config)} cut #{cut}"
      end

      # Flip bytes all over the payload: the result is an error or, where the format has
      # no integrity check over that byte, some output of the right size.
      for pos <- Enum.take_random(0..(n - 1), 40) do
        <<a::binary-size(pos), b, rest::binary>> = encoded
        corrupt = <<a::binary, Bitwise.bxor(b, 0x5A), rest::binary>>

        case module.decode(corrupt, state) do
          {:error, _} -> :ok
          {:ok, out} -> assert byte_size(out) == byte_size(data), inspect(config)
        end
      end

      assert {:error, _} = module.decode(:binary.copy(<<0xFF>>, 64), state), inspect(config)
    end
  end

  test "decoders stop at the chunk size (decompression bombs, lying headers)" do
    zeros = :binary.copy(<<0>>, 4_000_000)

    for config <- @configs, config["id"] != "crc32c" do
      {module, big} = codec(config, byte_size(zeros))
      {:ok, encoded} = module.encode(zeros, big)
      encoded = IO.iodata_to_binary(encoded)

      {module, small} = codec(config, 1000)
      assert {:error, _} = module.decode(encoded, small), inspect(config)
      # Smaller than the chunk size is an error too when the size is known.
      {module, larger} = codec(config, byte_size(zeros) + 1)
      assert {:error, _} = module.decode(encoded, larger), inspect(config)
    end

    # An lz4 header claiming more than the block holds, and a huge claim.
    {lz4, s} = codec(%{"id" => "lz4"}, nil)
    {:ok, <<_::32-little, block::binary>>} = lz4.encode("hello", s)
    assert {:error, _} = lz4.decode(<<6::32-little, block::binary>>, s)
    assert {:error, _} = lz4.decode(<<0xFFFFFFFF::32-little, block::binary>>, s)

    # A blosc header whose sizes do not match the buffer.
    {blosc, bs} = codec(%{"id" => "blosc", "cname" => "lz4", "shuffle" => 0}, nil)
    {:ok, benc} = blosc.encode(:binary.copy("abcd", 1000), bs)
    <<h::binary-size(4), _nbytes::32-little, rest::binary>> = benc
    assert {:error, _} = blosc.decode(<<h::binary, 0x7FFFFFFF::32-little, rest::binary>>, bs)
    <<h::binary-size(12), _cbytes::32-little, rest::binary>> = benc
    assert {:error, _} = blosc.decode(<<h::binary, 99_999::32-little, rest::binary>>, bs)
  end

  test "invalid configurations are rejected at init" do
    for {module, config} <- [
          {ExZarr.Codecs.Zstd, %{"level" => 99}},
          {ExZarr.Codecs.Zstd, %{"checksum" => 1}},
          {ExZarr.Codecs.Blosc, %{"cname" => "nope"}},
          {ExZarr.Codecs.Blosc, %{"shuffle" => "sometimes"}},
          {ExZarr.Codecs.Blosc, %{"clevel" => 10}},
          {ExZarr.Codecs.Bz2, %{"level" => 0}},
          {ExZarr.Codecs.Gzip, %{"level" => 10}},
          {ExZarr.Codecs.Zlib, %{"level" => "fast"}},
          {ExZarr.Codecs.Lzma, %{"format" => 7}},
          {ExZarr.Codecs.Lzma, %{"preset" => 12}},
          {ExZarr.Codecs.Lzma, %{"filters" => [%{"dist" => 1}]}},
          {ExZarr.Codecs.Crc32c, %{"location" => "middle"}}
        ] do
      assert {:error, _} = module.init(config, %{decoded_size: nil}), inspect({module, config})
    end

    assert {:error, {:missing_key, "filters"}} =
             ExZarr.Codecs.Lzma.init(%{"format" => 3}, %{decoded_size: nil})

    # the NIF refuses it too
    assert {:error, {:lzma, _}} = ExZarr.Native.lzma_compress("abc", 3, -1, -1, [])
  end

  test "JSON null options count as absent" do
    {:ok, s} = ExZarr.Codecs.Lzma.init(%{"preset" => :null, "filters" => :null}, %{})
    assert {s.preset, s.native_filters} == {nil, []}
    {:ok, s} = ExZarr.Codecs.Zstd.init(%{"level" => nil, "checksum" => :null}, %{})
    assert {s.level, s.checksum} == {0, false}
  end

  test "v2 <-> v3 configuration mapping" do
    assert {:ok, %{"cname" => "lz4", "clevel" => 5, "shuffle" => "shuffle", "blocksize" => 0}} =
             ExZarr.Codecs.Blosc.from_v2(%{
               "id" => "blosc",
               "cname" => "lz4",
               "clevel" => 5,
               "shuffle" => 1,
               "blocksize" => 0
             })

    assert {:ok, auto} = ExZarr.Codecs.Blosc.from_v2(%{"id" => "blosc", "shuffle" => -1})
    refute Map.has_key?(auto, "shuffle")
    assert {:ok, %{"shuffle" => -1, "id" => "blosc"}} = ExZarr.Codecs.Blosc.to_v2(auto)
    {:ok, s1} = ExZarr.Codecs.Blosc.init(auto, %{dtype: :uint8, decoded_size: nil})
    {:ok, s8} = ExZarr.Codecs.Blosc.init(auto, %{dtype: :float64, decoded_size: nil})
    assert {s1.shuffle, s1.typesize, s8.shuffle, s8.typesize} == {"bitshuffle", 1, "shuffle", 8}

    assert ExZarr.Codecs.Zstd.to_v2(%{"level" => 3}) == {:ok, %{"id" => "zstd", "level" => 3}}
    assert ExZarr.Codecs.Lz4.from_v2(%{"id" => "lz4"}) == {:ok, %{}}
    assert ExZarr.Codecs.Lz4.name() == "numcodecs.lz4"
  end
end
