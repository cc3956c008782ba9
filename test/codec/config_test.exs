defmodule ExZarr.Codec.ConfigTest do
  @moduledoc """
  Codec configurations (`ExZarr.Codec.Config`): every codec refuses keys it does not know, in
  v3 configurations and v2 numcodecs configs, and values out of its range or of the wrong type,
  with `{:invalid_codec_config, codec, detail}` when the array is created or opened; what
  numcodecs and zarr-python write is accepted.
  """
  use ExUnit.Case, async: true

  import Bitwise

  alias ExZarr.Codec.{Config, Pipeline, Registry}
  alias ExZarr.Test.Interop

  doctest Config
  doctest ExZarr.Codecs.Numcodecs

  @names ~w(bytes transpose gzip numcodecs.zlib crc32c zstd blosc numcodecs.lz4 numcodecs.bz2
            numcodecs.lzma numcodecs.delta numcodecs.fixedscaleoffset numcodecs.shuffle
            numcodecs.bitround numcodecs.quantize numcodecs.astype numcodecs.packbits
            sharding_indexed vlen-utf8 vlen-bytes numcodecs.crc32 numcodecs.adler32
            numcodecs.fletcher32 numcodecs.jenkins_lookup3 numcodecs.zfpy numcodecs.pcodec
            numcodecs.base64 numcodecs.categorize scale_offset cast_value)

  # numcodecs 0.16 `get_config()` of every codec with its defaults (and a few settings).
  @numcodecs [
    %{"id" => "zstd", "level" => 0, "checksum" => false},
    %{"id" => "zstd", "level" => 3, "checksum" => true},
    %{"id" => "zstd", "level" => 3},
    %{"id" => "blosc", "cname" => "lz4", "clevel" => 5, "shuffle" => 1, "blocksize" => 0},
    %{"id" => "blosc", "cname" => "zstd", "clevel" => 3, "shuffle" => -1, "blocksize" => 0},
    %{"id" => "gzip", "level" => 1},
    %{"id" => "zlib", "level" => 1},
    %{"id" => "bz2", "level" => 1},
    %{"id" => "lzma", "format" => 1, "check" => -1, "preset" => :null, "filters" => :null},
    %{
      "id" => "lzma",
      "format" => 3,
      "check" => -1,
      "preset" => :null,
      "filters" => [%{"id" => 3, "dist" => 4}, %{"id" => 0x21, "preset" => 1}]
    },
    %{"id" => "lz4", "acceleration" => 1},
    %{"id" => "delta", "dtype" => "<f8", "astype" => "<f8"},
    %{
      "id" => "fixedscaleoffset",
      "scale" => 2,
      "offset" => 1,
      "dtype" => "<f8",
      "astype" => "<i4"
    },
    %{"id" => "quantize", "digits" => 2, "dtype" => "<f8", "astype" => "<f8"},
    %{"id" => "bitround", "keepbits" => 3},
    %{"id" => "astype", "encode_dtype" => "<f4", "decode_dtype" => "<f8"},
    %{"id" => "shuffle", "elementsize" => 8},
    %{"id" => "base64"},
    %{"id" => "categorize", "labels" => ["a", "bb"], "dtype" => "<U2", "astype" => "|u1"},
    %{"id" => "crc32c"},
    %{"id" => "crc32"},
    %{"id" => "crc32", "location" => "end"},
    %{"id" => "adler32"},
    %{"id" => "fletcher32"},
    %{"id" => "jenkins_lookup3", "initval" => 0, "prefix" => :null},
    %{
      "id" => "zfpy",
      "mode" => 4,
      "compression_kwargs" => %{"tolerance" => -1},
      "tolerance" => -1,
      "rate" => -1,
      "precision" => -1
    },
    %{
      "id" => "zfpy",
      "mode" => 2,
      "compression_kwargs" => %{"rate" => 8},
      "tolerance" => -1,
      "rate" => 8,
      "precision" => -1
    },
    %{
      "id" => "pcodec",
      "level" => 3,
      "mode_spec" => "auto",
      "delta_spec" => "try_consecutive",
      "paging_spec" => "equal_pages_up_to",
      "delta_encoding_order" => 2,
      "equal_pages_up_to" => 262_144
    }
  ]

  # {v3 name, a valid configuration, [{key, bad value}]}: values a float64 array refuses.
  @bad [
    {"zstd", %{},
     [{"level", 23}, {"level", -131_073}, {"level", "3"}, {"level", 3.0}, {"checksum", 1}]},
    {"blosc", %{},
     [
       {"cname", "nope"},
       {"cname", 3},
       {"clevel", 10},
       {"clevel", -1},
       {"shuffle", "sometimes"},
       {"shuffle", 1},
       {"typesize", 0},
       {"typesize", 1 <<< 31},
       {"typesize", 3 <<< 30},
       {"typesize", 1 <<< 32},
       {"typesize", 1 <<< 63},
       {"blocksize", -1},
       {"blocksize", 1 <<< 31}
     ]},
    {"gzip", %{}, [{"level", 10}, {"level", -1}, {"level", "1"}]},
    {"numcodecs.zlib", %{}, [{"level", 10}, {"level", -2}]},
    {"numcodecs.bz2", %{}, [{"level", 0}, {"level", 10}]},
    {"numcodecs.lz4", %{}, [{"acceleration", 1 <<< 31}, {"acceleration", "fast"}]},
    {"numcodecs.lzma", %{},
     [
       {"format", 4},
       {"format", -1},
       {"check", 2},
       {"check", 16},
       {"preset", 10},
       {"preset", -1},
       {"preset", 1 <<< 40},
       {"filters", "lzma2"},
       {"filters", []},
       {"filters", List.duplicate(%{"id" => 3}, 4) ++ [%{"id" => 0x21}]},
       {"filters", [%{"id" => 99}]},
       {"filters", [%{"dist" => 1}]},
       {"filters", [%{"id" => 0x21, "bogus" => 1}]},
       {"filters", [%{"id" => 3, "preset" => 1}, %{"id" => 0x21}]},
       {"filters", [%{"id" => 0x21}, %{"id" => 3}]},
       {"filters", [%{"id" => 0x4000000000000001}]}
     ]},
    {"numcodecs.lzma", %{"format" => 2}, [{"check", 1}]},
    {"numcodecs.lzma", %{"format" => 3, "filters" => [%{"id" => 0x21}]},
     [{"filters", [%{"id" => 0x21}, %{"id" => 0x21}]}, {"filters", [%{"id" => 3}]}]},
    {"numcodecs.lzma", %{"filters" => [%{"id" => 0x21}]}, [{"preset", 1}]},
    {"numcodecs.lzma", %{"format" => 3, "filters" => [%{"id" => 0x21}]},
     for(
       {k, v} <- [
         {"dict_size", 1 <<< 32},
         {"dict_size", 4095},
         {"lc", 5},
         {"lp", -1},
         {"pb", 5},
         {"mode", 0},
         {"nice_len", 1},
         {"nice_len", 274},
         {"mf", 7},
         {"depth", 1 <<< 32},
         {"preset", 10}
       ],
       do: {"filters", [%{"id" => 0x21, k => v}]}
     ) ++
       [
         {"filters", [%{"id" => 0x21, "lc" => 3, "lp" => 2}]},
         {"filters", [%{"id" => 3, "dist" => 0}, %{"id" => 0x21}]},
         {"filters", [%{"id" => 3, "dist" => 257}, %{"id" => 0x21}]},
         {"filters", [%{"id" => 5, "start_offset" => 3}, %{"id" => 0x21}]},
         {"filters", [%{"id" => 4, "start_offset" => 1 <<< 32}, %{"id" => 0x21}]}
       ]},
    {"numcodecs.delta", %{},
     [{"dtype", "<c16"}, {"dtype", "<f4"}, {"dtype", "nope"}, {"dtype", 8}, {"astype", "<c8"}]},
    {"numcodecs.fixedscaleoffset", %{"offset" => 0, "scale" => 1},
     [{"offset", "1"}, {"offset", 1 <<< 64}, {"scale", :null}, {"scale", [1]}, {"astype", "|O"}]},
    {"numcodecs.quantize", %{"digits" => 2},
     [{"digits", 301}, {"digits", "2"}, {"digits", :null}, {"astype", "<i4"}]},
    {"numcodecs.bitround", %{"keepbits" => 2},
     [{"keepbits", 53}, {"keepbits", -1}, {"keepbits", nil}]},
    {"numcodecs.astype", %{"encode_dtype" => "<f4"},
     [{"encode_dtype", "<c8"}, {"encode_dtype", nil}]},
    {"numcodecs.categorize", %{"labels" => ["a"], "dtype" => "<U2"},
     [{"labels", "a"}, {"labels", [1]}, {"dtype", "<U3"}, {"astype", "<c8"}, {"astype", "|b1"}]},
    {"cast_value", %{"data_type" => "int32"},
     [{"data_type", "nope"}, {"rounding", "up"}, {"out_of_range", 1}, {"scalar_map", []}]},
    {"scale_offset", %{}, [{"offset", "x"}, {"offset", [1]}, {"scale", 0}, {"scale", -0.0}]},
    {"numcodecs.shuffle", %{},
     [{"elementsize", 0}, {"elementsize", 1 <<< 31}, {"elementsize", "8"}]},
    {"crc32c", %{}, [{"location", "middle"}]},
    {"numcodecs.crc32", %{}, [{"location", "middle"}, {"location", 1}]},
    {"numcodecs.adler32", %{"location" => "end"}, [{"location", "middle"}]},
    {"numcodecs.jenkins_lookup3", %{"initval" => 7},
     [
       {"initval", -1},
       {"initval", 1 <<< 32},
       {"initval", 1.5},
       {"prefix", "SGVsbG8="},
       {"prefix", [72, 105]}
     ]},
    {"numcodecs.zfpy", %{"mode" => 4, "tolerance" => 0.01},
     [
       {"mode", 1},
       {"mode", 5},
       {"mode", "4"},
       {"tolerance", "small"},
       {"tolerance", 1 <<< 64},
       {"precision", 65},
       {"precision", 1.5},
       {"compression_kwargs", 3}
     ]},
    # a 4x4 float64 block needs 12 bits: at least 0.75 bits per value
    {"numcodecs.zfpy", %{"mode" => 2, "rate" => 8}, [{"rate", 65}, {"rate", 0.5}]},
    {"numcodecs.pcodec", %{"level" => 3},
     [
       {"level", 13},
       {"level", -1},
       {"mode_spec", "try_float_mult"},
       {"delta_spec", "no_op"},
       {"paging_spec", "exact_page_sizes"},
       {"equal_pages_up_to", 0},
       {"delta_encoding_order", 8}
     ]},
    {"numcodecs.pcodec", %{"delta_spec" => "try_consecutive", "delta_encoding_order" => 1},
     [{"delta_encoding_order", :null}]},
    {"numcodecs.pcodec", %{"delta_spec" => "none"}, [{"delta_encoding_order", 1}]},
    {"bytes", %{"endian" => "little"}, [{"endian", "middle"}, {"endian", 1}, {"endian", nil}]},
    {"transpose", %{"order" => [1, 0]}, [{"order", [0, 0]}, {"order", "C"}, {"order", [0, 1, 2]}]}
  ]

  @spec4 %{shape: {4, 4}, dtype: :float64, fill_value: 0.0, decoded_size: nil}

  # The chunk a codec is tried on: 4x4 float64, strings for categorize.
  defp spec_for(name) when name in ["categorize", "numcodecs.categorize"],
    do: %{@spec4 | dtype: {:fixed_utf32, 2}, fill_value: ""}

  defp spec_for(_name), do: @spec4

  # A pipeline around one codec for a 4x4 chunk.
  defp pipeline(name, config, spec \\ nil) do
    spec = spec || spec_for(name)
    {:ok, module} = Registry.fetch(name)
    codec = %{name: name, configuration: config}
    bytes = %{name: "bytes", configuration: %{"endian" => "little"}}

    case module.kind() do
      :array_to_array -> Pipeline.new([codec, bytes], spec)
      :array_to_bytes -> Pipeline.new([codec], spec)
      :bytes_to_bytes -> Pipeline.new([bytes, codec], spec)
    end
  end

  defp result?(result), do: is_tuple(result) and elem(result, 0) in [:ok, :error]

  describe "unknown keys" do
    test "every built-in codec refuses a key it does not know (v3)" do
      for name <- @names do
        assert Registry.resolve(%{name: name, configuration: %{"bogus" => 1}}) ==
                 {:error, {:invalid_codec_config, name, {:unknown_key, "bogus"}}}
      end
    end

    test "every numcodecs codec refuses a key it does not know (v2 and numcodecs.* in v3)" do
      for %{"id" => id} = config <- @numcodecs do
        config = Map.put(config, "levle", 19)

        assert Registry.from_v2(config) ==
                 {:error, {:invalid_codec_config, id, {:unknown_key, "levle"}}}

        v3 = Map.delete(config, "id")

        assert Registry.resolve(%{name: "numcodecs." <> id, configuration: v3}) ==
                 {:error, {:invalid_codec_config, "numcodecs." <> id, {:unknown_key, "levle"}}}
      end
    end

    test "a misspelled key is an error at create, not a silent default" do
      for format <- [2, 3] do
        assert {:error, {:invalid_codec_config, "zstd", {:unknown_key, "levle"}}} =
                 ExZarr.create(
                   shape: {4},
                   storage: :memory,
                   zarr_format: format,
                   compressor: %{id: "zstd", levle: 19}
                 )
      end

      assert {:error, {:invalid_codec_config, "gzip", {:unknown_key, "lvl"}}} =
               ExZarr.create(
                 shape: {4},
                 storage: :memory,
                 codecs: ["bytes", %{name: "gzip", configuration: %{lvl: 1}}]
               )

      assert {:error, {:invalid_codec_config, "delta", {:unknown_key, "as_type"}}} =
               ExZarr.create(
                 shape: {4},
                 storage: :memory,
                 dtype: :int32,
                 filters: [%{id: "delta", dtype: "<i4", as_type: "<i2"}]
               )

      assert {:error, {:invalid_codec_config, "zstd", {:unknown_key, "levle"}}} =
               ExZarr.create(
                 shape: {4},
                 chunks: {2},
                 shards: {4},
                 storage: :memory,
                 compressor: %{id: "zstd", levle: 19}
               )
    end

    test "hostile metadata with an unknown key does not open" do
      dir = Interop.tmp_dir!("codec-config")
      on_exit(fn -> File.rm_rf!(dir) end)

      {:ok, _} = ExZarr.create(shape: {4}, path: Path.join(dir, "v3.zarr"))
      {:ok, _} = ExZarr.create(shape: {4}, path: Path.join(dir, "v2.zarr"), zarr_format: 2)

      v3 = Path.join(dir, "v3.zarr/zarr.json")
      File.write!(v3, String.replace(File.read!(v3), ~s("level"), ~s("levle")))
      v2 = Path.join(dir, "v2.zarr/.zarray")
      File.write!(v2, String.replace(File.read!(v2), ~s("level"), ~s("levle")))

      assert {:error, {:invalid_codec_config, "zstd", {:unknown_key, "levle"}}} =
               ExZarr.open(path: Path.join(dir, "v3.zarr"))

      assert {:error, {:invalid_codec_config, "zstd", {:unknown_key, "levle"}}} =
               ExZarr.open(path: Path.join(dir, "v2.zarr"))
    end
  end

  describe "values" do
    test "out-of-range and wrong-type values are refused, naming the codec and the key" do
      for {name, base, bad} <- @bad, {key, value} <- bad do
        result = pipeline(name, Map.put(base, key, value))

        assert {:error, {:invalid_codec_config, ^name, detail}} = result,
               "#{name} #{key}: #{inspect(value)} gave #{inspect(result)}"

        assert detail_key(detail) == key, "#{name} #{key}: #{inspect(value)}: #{inspect(detail)}"
      end
    end

    # JSON values of every type, and what jiffy or a user could give besides.
    @hostile [
      "x",
      "",
      -1,
      0,
      1,
      1.0,
      0.0,
      -0.5,
      1.0e300,
      1 <<< 70,
      -(1 <<< 70),
      true,
      false,
      :null,
      nil,
      [],
      [1.0, 0.0],
      [0, 1],
      ["a"],
      %{},
      %{"id" => 1},
      [%{"id" => 33}],
      :nan,
      :infinity
    ]

    test "no value of any type for any key crashes a codec (init, to_v2, from_v2)" do
      specs =
        for {dtype, fill} <- [float64: 0.0, int32: 0, string: ""],
            do: %{@spec4 | dtype: dtype, fill_value: fill}

      for name <- @names,
          {:ok, module} = Registry.fetch(name),
          key <- module.config_keys(),
          value <- @hostile do
        codec = %{name: name, configuration: %{key => value}}
        what = "#{name} #{key}: #{inspect(value)}"

        for spec <- specs, do: assert(result?(pipeline(name, codec.configuration, spec)), what)
        assert result?(Registry.to_v2(codec)), what

        if function_exported?(module, :v2_id, 0),
          do: assert(result?(Registry.from_v2(%{"id" => module.v2_id(), key => value})), what)
      end
    end

    test "the base configurations of the table are valid" do
      for {name, base, _bad} <- @bad do
        assert {:ok, _} = pipeline(name, base), name
      end
    end

    test "what numcodecs writes is accepted" do
      for config <- @numcodecs do
        assert {:ok, spec, kind} = Registry.from_v2(config), inspect(config)

        codecs =
          case kind do
            :array_to_array -> [spec, %{name: "bytes", configuration: %{"endian" => "little"}}]
            :array_to_bytes -> [spec]
            :bytes_to_bytes -> [%{name: "bytes", configuration: %{"endian" => "little"}}, spec]
          end

        assert {:ok, _} = Pipeline.new(codecs, spec_for(config["id"])), inspect(config)
      end
    end

    test "blosc typesizes c-blosc cannot take are refused at create (they crashed the VM)" do
      for typesize <- [1 <<< 31, 3 <<< 30, 1 <<< 32, 1 <<< 63] do
        assert {:error,
                {:invalid_codec_config, "blosc", {:invalid_value, "typesize", ^typesize, _}}} =
                 ExZarr.create(
                   shape: {4},
                   storage: :memory,
                   compressor: %{id: "blosc", typesize: typesize}
                 )
      end

      {:ok, a} =
        ExZarr.create(shape: {4}, storage: :memory, compressor: %{id: "blosc", typesize: 300})

      :ok = ExZarr.Array.set_slice(a, :binary.copy(<<2.5::float-64-little>>, 4))
      assert {:ok, _} = ExZarr.Array.get_slice(a)
    end

    test "lzma settings needing more than 1 GiB of encoder memory are refused by the NIF" do
      # a 1.5 GiB dictionary: valid for liblzma, but about 16 GiB of encoder state
      filters = [{0x21, -1, 0x60000000, -1, -1, -1, -1, -1, -1, -1, -1, -1}]
      assert {:error, {:lzma, why}} = ExZarr.Native.lzma_compress("abc", 3, -1, -1, filters)
      assert why =~ "memory"
    end

    test "the zstd NIF checks the level itself" do
      assert {:error, {:zstd, _}} = ExZarr.Native.zstd_compress("abc", 23, false)
      assert {:error, {:zstd, _}} = ExZarr.Native.zstd_compress("abc", -(1 <<< 20), false)
      assert {:ok, _} = ExZarr.Native.zstd_compress("abc", 22, false)
    end
  end

  defp detail_key({:invalid_value, key, _value, expected}) when is_binary(expected), do: key
  defp detail_key({:missing_key, key}), do: key
  defp detail_key({:unsupported_dtype, _}), do: :unsupported_dtype
  defp detail_key(other), do: other
end
