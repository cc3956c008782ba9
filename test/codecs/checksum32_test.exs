defmodule ExZarr.Codecs.Checksum32Test do
  # The numcodecs checksum codecs (crc32, adler32, fletcher32, jenkins_lookup3 and crc32c):
  # byte-exact with numcodecs both ways on inputs around every block boundary of the sums,
  # corruption and bad configurations as errors.
  use ExUnit.Case, async: true

  alias ExZarr.Codec.Registry
  alias ExZarr.Native
  alias ExZarr.Test.Python

  doctest ExZarr.Codecs.Checksum32
  doctest ExZarr.Codecs.Adler32
  doctest ExZarr.Codecs.Crc32
  doctest ExZarr.Codecs.Crc32c
  doctest ExZarr.Codecs.Fletcher32
  doctest ExZarr.Codecs.JenkinsLookup3

  @configs [
    %{"id" => "crc32"},
    %{"id" => "crc32", "location" => "end"},
    %{"id" => "adler32"},
    %{"id" => "adler32", "location" => "end"},
    %{"id" => "fletcher32"},
    %{"id" => "jenkins_lookup3"},
    %{"id" => "jenkins_lookup3", "initval" => 1230, "prefix" => :null},
    %{"id" => "jenkins_lookup3", "initval" => 0xFFFFFFFF},
    %{"id" => "crc32c"},
    %{"id" => "crc32c", "location" => "start"}
  ]

  # Sizes around lookup3's 12-byte blocks and Fletcher-32's 360-word folds, odd and even.
  @sizes [1, 2, 11, 12, 13, 24, 25, 719, 720, 721, 722, 1439, 1441, 100_003]

  defp codec(v2_config), do: ExZarr.Test.Codecs.from_v2(v2_config, nil, :uint8)

  defp data(size), do: for(i <- 1..size, into: <<>>, do: <<rem(i * 131 + div(i, 7), 256)>>)

  defp encode({module, state}, data),
    do: data |> module.encode(state) |> elem(1) |> IO.iodata_to_binary()

  @tag :tmp_dir
  test "the same bytes as numcodecs, and each decodes the other's", %{tmp_dir: dir} do
    File.write!(Path.join(dir, "configs.json"), :jiffy.encode(@configs))

    for size <- @sizes do
      File.write!(Path.join(dir, "#{size}.bin"), data(size))

      for {config, i} <- Enum.with_index(@configs),
          do: File.write!(Path.join(dir, "#{size}-#{i}.ex"), encode(codec(config), data(size)))
    end

    out =
      Python.run!(
        """
        import json, os, sys
        import numcodecs
        d, sizes = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
        configs = json.load(open(os.path.join(d, "configs.json")))
        bad = []
        for size in sizes:
            data = open(os.path.join(d, f"{size}.bin"), "rb").read()
            for i, config in enumerate(configs):
                codec = numcodecs.get_codec(dict(config))
                ours = open(os.path.join(d, f"{size}-{i}.ex"), "rb").read()
                theirs = bytes(codec.encode(data))
                open(os.path.join(d, f"{size}-{i}.py"), "wb").write(theirs)
                if theirs != ours or bytes(codec.decode(ours)) != data:
                    bad.append([size, config])
        print(json.dumps(bad))
        """,
        [dir, Enum.join(@sizes, ",")]
      )

    assert out |> String.split("\n", trim: true) |> List.last() == "[]", out

    for size <- @sizes, {config, i} <- Enum.with_index(@configs) do
      {module, state} = codec(config)
      theirs = File.read!(Path.join(dir, "#{size}-#{i}.py"))
      assert module.decode(theirs, state) == {:ok, data(size)}, inspect({size, config})
    end
  end

  test "known values: zlib's CRC-32 and Adler-32, lookup3's and HDF5's test vectors" do
    assert Native.checksum(:crc32, "123456789", 0) == :erlang.crc32("123456789")
    assert Native.checksum(:adler32, ["Wiki", ["pe" | "dia"]], 0) == :erlang.adler32("Wikipedia")
    assert Native.checksum(:jenkins_lookup3, "", 0) == 0xDEADBEEF
    assert Native.checksum(:jenkins_lookup3, "", 0xDEADBEEF) == 0xBD5B7DDE
    assert Native.checksum(:jenkins_lookup3, "Four score and seven years ago", 0) == 0x17770551
    assert Native.checksum(:jenkins_lookup3, "Four score and seven years ago", 1) == 0xCD628161
    assert Native.checksum(:fletcher32, <<1, 2, 3, 4>>, 0) == 0x05080406
    assert Native.checksum(:crc32c, "123456789", 0) == Native.crc32c("123456789")
  end

  test "iodata in any shape gives the checksum of its bytes" do
    bin = data(1000)
    pieces = [binary_part(bin, 0, 5), [binary_part(bin, 5, 1) | binary_part(bin, 6, 300)]]
    iodata = [pieces, :binary.bin_to_list(binary_part(bin, 306, 7)), binary_part(bin, 313, 687)]

    for kind <- [:crc32c, :crc32, :adler32, :fletcher32, :jenkins_lookup3] do
      assert Native.checksum(kind, iodata, 7) == Native.checksum(kind, bin, 7), inspect(kind)
    end

    assert_raise ArgumentError, fn -> Native.checksum(:md5, "x", 0) end
    assert_raise ArgumentError, fn -> Native.checksum(:crc32, [256], 0) end
    assert_raise ArgumentError, fn -> Native.checksum(:jenkins_lookup3, "x", -1) end
  end

  test "a changed byte or checksum, or a truncated input, is an error" do
    for config <- @configs do
      {module, state} = m = codec(config)
      enc = encode(m, data(50))

      for at <- [0, 3, 25, byte_size(enc) - 1] do
        <<head::binary-size(at), byte, rest::binary>> = enc
        corrupt = <<head::binary, Bitwise.bxor(byte, 0x10), rest::binary>>

        assert {:error, {:checksum_mismatch, stored: _, computed: _}} =
                 module.decode(corrupt, state),
               inspect({config, at})
      end

      assert {:error, _} = module.decode("abc", state)
      assert {:error, _} = module.decode(binary_part(enc, 0, 30), state)
      assert module.decode(encode(m, ""), state) == {:ok, ""}
      assert module.encoded_size(100, state) == 104
    end
  end

  test "configuration keys and values outside the codec's are errors, v2 and v3" do
    bad = [
      {"crc32", %{"location" => "middle"}},
      {"crc32", %{"where" => "end"}},
      {"adler32", %{"location" => 1}},
      {"fletcher32", %{"location" => "end"}},
      {"jenkins_lookup3", %{"initval" => -1}},
      {"jenkins_lookup3", %{"initval" => 0x100000000}},
      {"jenkins_lookup3", %{"initval" => 1.5}},
      {"jenkins_lookup3", %{"prefix" => "SGVsbG8="}},
      {"jenkins_lookup3", %{"seed" => 1}},
      {"crc32c", %{"level" => 1}}
    ]

    for {id, config} <- bad do
      result =
        with {:ok, module, v3} <-
               Registry.resolve(%{name: "numcodecs." <> id, configuration: config}),
             do: module.init(v3, %{decoded_size: nil})

      assert {:error, _} = result, inspect({id, config})

      v2 =
        with {:ok, spec, _kind} <- Registry.from_v2(Map.put(config, "id", id)),
             {:ok, module, v3} <- Registry.resolve(spec),
             do: module.init(v3, %{decoded_size: nil})

      assert {:error, _} = v2, inspect({id, config})
    end
  end

  test "v2 ids and v3 names map to each other as zarr-python writes them" do
    for {config, v3} <- [
          {%{"id" => "crc32"}, %{name: "numcodecs.crc32", configuration: %{}}},
          {%{"id" => "adler32", "location" => "end"},
           %{name: "numcodecs.adler32", configuration: %{"location" => "end"}}},
          {%{"id" => "fletcher32"}, %{name: "numcodecs.fletcher32", configuration: %{}}},
          {%{"id" => "jenkins_lookup3", "initval" => 5, "prefix" => :null},
           %{
             name: "numcodecs.jenkins_lookup3",
             configuration: %{"initval" => 5, "prefix" => :null}
           }}
        ] do
      assert {:ok, ^v3, :bytes_to_bytes} = Registry.from_v2(config)
      {:ok, module, v3_config} = Registry.resolve(v3)
      {:ok, state} = module.init(v3_config, %{decoded_size: nil})
      stored = %{name: module.name(), configuration: module.configuration(state)}
      {:ok, back} = Registry.to_v2(stored)
      assert Map.delete(back, "prefix") == Map.delete(config, "prefix")
    end
  end

  test "crc32c detects corruption and reports both checksums" do
    {m, s} = codec(%{"id" => "crc32c"})
    {:ok, enc} = m.encode("123456789", s)
    assert IO.iodata_to_binary(enc) == <<"123456789", 0xE3069283::32-little>>

    assert {:error, {:checksum_mismatch, stored: 0xE3069284, computed: 0xE3069283}} =
             m.decode(<<"123456789", 0xE3069284::32-little>>, s)

    assert {:error, _} = m.decode("abc", s)
    assert m.encoded_size(100, s) == 104
  end
end
