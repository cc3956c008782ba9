defmodule ExZarr.CodecTest do
  use ExUnit.Case, async: true

  alias ExZarr.{Codec, Metadata}
  alias ExZarr.Codec.Pipeline

  @spec_f64 %{shape: {4}, dtype: :float64, fill_value: 0.0, decoded_size: nil}

  describe "normalize_spec/1" do
    test "names, atom and string keys, and no configuration give one spec form" do
      expected = %{name: "zstd", configuration: %{}}

      for given <- [
            "zstd",
            %{name: "zstd"},
            %{"name" => "zstd"},
            %{name: "zstd", configuration: nil},
            %{"name" => "zstd", "configuration" => :null},
            %{"name" => "zstd", "configuration" => %{}}
          ] do
        assert Codec.normalize_spec(given) == {:ok, expected}, inspect(given)
      end
    end

    test "the configuration is put in decoded-JSON form" do
      assert Codec.normalize_spec(%{name: "blosc", configuration: %{cname: :lz4, blocksize: nil}}) ==
               {:ok, %{name: "blosc", configuration: %{"cname" => "lz4", "blocksize" => :null}}}
    end

    test "anything else is :error" do
      for bad <- [
            nil,
            :zstd,
            {"zstd", %{}},
            %{configuration: %{}},
            %{name: :zstd},
            %{name: "zstd", configuration: [1]},
            %{name: "zstd", configuration: %{"level" => {1}}},
            %{name: "zstd", configuration: %{"level" => self()}},
            %{name: "zstd", configuration: %{<<255>> => 1}},
            %URI{}
          ] do
        assert Codec.normalize_spec(bad) == :error, inspect(bad)
      end
    end
  end

  describe "split_order/2 and split_specs/1" do
    test "every valid order splits at the array->bytes codec" do
      for a <- 0..2, b <- 0..2 do
        kinds =
          List.duplicate(:array_to_array, a) ++
            [:array_to_bytes] ++ List.duplicate(:bytes_to_bytes, b)

        assert {:ok, array, [:array_to_bytes | bytes]} = Codec.split_order(kinds, & &1)
        assert length(array) == a and length(bytes) == b
      end
    end

    test "every other order is :error" do
      for kinds <- [
            [],
            [:array_to_array],
            [:bytes_to_bytes],
            [:array_to_bytes, :array_to_bytes],
            [:array_to_bytes, :array_to_array],
            [:bytes_to_bytes, :array_to_bytes],
            [:array_to_array, :bytes_to_bytes, :array_to_bytes],
            [:array_to_bytes, :bytes_to_bytes, :array_to_array]
          ] do
        assert Codec.split_order(kinds, & &1) == :error, inspect(kinds)
      end
    end

    test "split_specs takes the kinds from the registry" do
      transpose = %{name: "transpose", configuration: %{"order" => [0]}}
      bytes = %{name: "bytes", configuration: %{}}
      zstd = %{name: "zstd", configuration: %{}}

      assert Codec.split_specs([transpose, bytes, zstd]) == {:ok, [transpose], [bytes, zstd]}

      assert Codec.split_specs([zstd, bytes]) ==
               {:error, {:invalid_codec_order, ["zstd", "bytes"]}}

      assert Codec.split_specs([%{name: "nope", configuration: %{}}]) ==
               {:error, {:unsupported_codec, "nope"}}
    end
  end

  describe "the callers keep their own error reasons" do
    test "Metadata.new names the option" do
      assert {:error, {:invalid_option, :codecs, why}} =
               Metadata.new(shape: {4}, chunks: {4}, dtype: :float64, codecs: ["zstd", "bytes"])

      assert why ==
               "need array->array codecs, exactly one array->bytes codec, then bytes->bytes " <>
                 ~s(codecs, got ["zstd", "bytes"])

      assert {:error, {:invalid_option, :codecs, 5}} =
               Metadata.new(shape: {4}, chunks: {4}, dtype: :float64, codecs: ["bytes", 5])
    end

    test "Pipeline.new names the codecs by their modules" do
      assert Pipeline.new([%{name: "crc32c", configuration: %{}}], @spec_f64) ==
               {:error, {:invalid_codec_order, ["crc32c"]}}
    end

    test "sharding names its configuration key" do
      config = %{"chunk_shape" => [2], "codecs" => ["bytes", %{"name" => 1}]}

      assert {:error, {:invalid_sharding_config, ~s(codecs: %{"name" => 1})}} =
               ExZarr.Codecs.ShardingIndexed.init(config, @spec_f64)

      config = %{"chunk_shape" => [2], "codecs" => ["crc32c"]}

      assert {:error, {:invalid_codec_order, ["crc32c"]}} =
               ExZarr.Codecs.ShardingIndexed.init(config, @spec_f64)
    end

    test "a v2 array cannot store an order v3 itself refuses" do
      meta = %Metadata{
        zarr_format: 2,
        shape: {4},
        chunks: {4},
        dtype: :float64,
        fill_value: 0.0,
        codecs: [%{name: "zstd", configuration: %{}}, %{name: "bytes", configuration: %{}}],
        chunk_key_encoding: %{name: "v2", separator: "."},
        attributes: %{}
      }

      assert Metadata.V2.encode(meta) ==
               {:error, {:not_expressible_in_v2, ~s(codec order ["zstd", "bytes"])}}
    end
  end
end
