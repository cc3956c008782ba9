Code.require_file("fake_codecs.exs", __DIR__)

defmodule ExZarr.Metadata.V2Test do
  use ExUnit.Case, async: true

  alias ExZarr.Metadata
  alias ExZarr.Metadata.V2

  doctest ExZarr.Metadata.V2

  # Written by zarr-python 3.1.6 (zarr_format=2), compressor replaced by a test codec.
  @zarr_python """
  {
    "shape": [4, 3],
    "chunks": [2, 2],
    "dtype": "<f8",
    "fill_value": "NaN",
    "order": "C",
    "filters": null,
    "dimension_separator": ".",
    "compressor": {"id": "test_bytes", "level": 0},
    "zarr_format": 2
  }
  """

  defp zarray, do: :jiffy.decode(@zarr_python, [:return_maps])

  defp decode_with(changes, zattrs \\ nil) do
    changes
    |> Enum.reduce(zarray(), fn
      {key, :delete}, acc -> Map.delete(acc, key)
      {key, value}, acc -> Map.put(acc, key, value)
    end)
    |> V2.decode(zattrs)
  end

  defp names(meta), do: Enum.map(meta.codecs, & &1.name)

  describe "decode" do
    test "the document zarr-python writes" do
      assert {:ok, meta} = V2.decode(zarray(), %{"units" => "m", "none" => :null})

      assert meta == %Metadata{
               zarr_format: 2,
               shape: {4, 3},
               chunks: {2, 2},
               dtype: :float64,
               fill_value: :nan,
               codecs: [
                 %{name: "bytes", configuration: %{"endian" => "little"}},
                 %{name: "test.bytes", configuration: %{"level" => 0}}
               ],
               chunk_key_encoding: %{name: "v2", separator: "."},
               attributes: %{"units" => "m", "none" => nil},
               dimension_names: nil,
               storage_transformers: []
             }
    end

    test "byte order becomes the bytes codec's endian" do
      assert {:ok, meta} = decode_with(%{"dtype" => ">i2", "fill_value" => -3})
      assert hd(meta.codecs) == %{name: "bytes", configuration: %{"endian" => "big"}}
      assert {meta.dtype, meta.fill_value} == {:int16, -3}

      assert {:ok, meta} = decode_with(%{"dtype" => "|u1", "fill_value" => 255})
      assert hd(meta.codecs) == %{name: "bytes", configuration: %{}}

      assert {:ok, meta} = decode_with(%{"dtype" => "<c16", "fill_value" => [1.0, "-Infinity"]})
      assert meta.fill_value == {1.0, :neg_infinity}
    end

    test "order F is a first transpose with reversed axes" do
      assert {:ok, meta} =
               decode_with(%{"order" => "F", "shape" => [4, 3, 2], "chunks" => [2, 2, 2]})

      assert hd(meta.codecs) == %{name: "transpose", configuration: %{"order" => [2, 1, 0]}}
      assert names(meta) == ["transpose", "bytes", "test.bytes"]

      assert {:ok, meta} = decode_with(%{"order" => "F", "shape" => [], "chunks" => []})
      assert hd(meta.codecs) == %{name: "transpose", configuration: %{"order" => []}}
    end

    test "filters go before or after bytes by kind, the compressor last" do
      filters = [
        %{"id" => "test_array", "k" => 1},
        %{"id" => "test_array", "k" => 2},
        %{"id" => "test_bytes", "k" => 3}
      ]

      assert {:ok, meta} = decode_with(%{"filters" => filters, "order" => "F"})

      assert meta.codecs == [
               %{name: "transpose", configuration: %{"order" => [1, 0]}},
               %{name: "test.array", configuration: %{"k" => 1}},
               %{name: "test.array", configuration: %{"k" => 2}},
               %{name: "bytes", configuration: %{"endian" => "little"}},
               %{name: "test.bytes", configuration: %{"k" => 3}},
               %{name: "test.bytes", configuration: %{"level" => 0}}
             ]

      assert {:ok, meta} = decode_with(%{"filters" => [], "compressor" => :null})
      assert names(meta) == ["bytes"]
    end

    test "an array filter after a bytes filter cannot be a v3 pipeline" do
      filters = [%{"id" => "test_bytes"}, %{"id" => "test_array"}]
      assert {:error, {:invalid_metadata, why}} = decode_with(%{"filters" => filters})
      assert why =~ "follows a bytes filter"
    end

    test "unknown codecs are named" do
      assert decode_with(%{"compressor" => %{"id" => "nonesuch"}}) ==
               {:error, {:unsupported_codec, "nonesuch"}}

      assert decode_with(%{"filters" => [%{"id" => "vlen-nope"}]}) ==
               {:error, {:unsupported_codec, "vlen-nope"}}
    end

    test "dimension separators, defaults for optional keys, unknown keys ignored" do
      assert {:ok, %{chunk_key_encoding: %{name: "v2", separator: "/"}}} =
               decode_with(%{"dimension_separator" => "/"})

      assert {:ok, meta} =
               decode_with(%{
                 "dimension_separator" => :delete,
                 "filters" => :delete,
                 "order" => :delete,
                 "fill_value" => :delete,
                 "something_new" => [1, 2]
               })

      assert meta.chunk_key_encoding == %{name: "v2", separator: "."}
      assert meta.fill_value == nil
      assert names(meta) == ["bytes", "test.bytes"]
    end

    test "fill values: null, integral floats for ints, bools as 0/1, integers for strings" do
      assert {:ok, %{fill_value: nil}} = decode_with(%{"fill_value" => :null})
      assert {:ok, %{fill_value: 0}} = decode_with(%{"dtype" => "<i4", "fill_value" => 0.0})
      assert {:ok, %{fill_value: true}} = decode_with(%{"dtype" => "|b1", "fill_value" => 1})

      # zarr-python 2's default fill for strings (0), which zarr-python 3 reads as "0"
      strings = %{"dtype" => "|O", "filters" => [%{"id" => "vlen-utf8"}], "fill_value" => 0}
      assert {:ok, %{dtype: :string, fill_value: "0"}} = decode_with(strings)

      assert decode_with(%{strings | "filters" => [%{"id" => "vlen-bytes"}]}) ==
               {:error, {:invalid_fill_value, :bytes, 0}}

      assert decode_with(%{"dtype" => "<i4", "fill_value" => 1.5}) ==
               {:error, {:invalid_fill_value, :int32, 1.5}}

      assert decode_with(%{"fill_value" => "0x7ff8000000000000"}) ==
               {:error, {:invalid_fill_value, :float64, "0x7ff8000000000000"}}
    end

    test "unsupported dtypes are named" do
      for dtype <- ["<M8[]", "<U0", "|S", [["a", "<i4"], ["a", "<i4"]]] do
        assert decode_with(%{"dtype" => dtype}) == {:error, {:unsupported_dtype, dtype}}
      end
    end

    test "malformed documents" do
      bad = [
        %{"zarr_format" => 3},
        %{"zarr_format" => :delete},
        %{"shape" => :delete},
        %{"shape" => [4, -3]},
        %{"chunks" => :delete},
        %{"chunks" => [2, 0]},
        %{"chunks" => [2]},
        %{"chunks" => "2,2"},
        %{"dtype" => :delete},
        %{"order" => "X"},
        %{"filters" => %{}},
        %{"filters" => ["zlib"]},
        %{"compressor" => "zlib"},
        %{"dimension_separator" => "-"}
      ]

      for changes <- bad do
        assert {:error, {:invalid_metadata, why}} = decode_with(changes), inspect(changes)
        assert is_binary(why)
      end

      assert {:error, {:invalid_metadata, _}} = decode_with(%{}, [1])
      assert {:error, {:invalid_metadata, _}} = V2.decode("zarray", nil)
    end
  end

  describe "encode" do
    test "writes what zarr-python writes and decodes back" do
      {:ok, meta} = V2.decode(zarray(), %{"a" => 1})
      assert {:ok, %{zarray: json, zattrs: %{"a" => 1}}} = V2.encode(meta)
      assert json == zarray()
      assert V2.decode(json, %{"a" => 1}) == {:ok, meta}
    end

    test "filters, order, byte order, null fill and compressor" do
      filters = [%{"id" => "test_array", "k" => 1}, %{"id" => "test_bytes", "k" => 3}]

      {:ok, meta} =
        decode_with(%{
          "filters" => filters,
          "order" => "F",
          "dtype" => ">u4",
          "fill_value" => :null,
          "compressor" => :null,
          "dimension_separator" => "/"
        })

      assert {:ok, %{zarray: json}} = V2.encode(meta)
      # With no compressor the last bytes->bytes filter is written as the compressor.
      assert json["filters"] == [%{"id" => "test_array", "k" => 1}]
      assert json["compressor"] == %{"id" => "test_bytes", "k" => 3}
      assert {json["order"], json["dtype"], json["fill_value"]} == {"F", ">u4", :null}
      assert json["dimension_separator"] == "/"
      assert V2.decode(json, nil) == {:ok, meta}
    end

    test "pipelines v2 cannot express" do
      {:ok, meta} = decode_with(%{"shape" => [4, 3, 2], "chunks" => [2, 2, 2]})
      [bytes, compressor] = meta.codecs
      transpose = %{name: "transpose", configuration: %{"order" => [1, 0, 2]}}
      reversal = %{name: "transpose", configuration: %{"order" => [2, 1, 0]}}
      array = %{name: "test.array", configuration: %{}}
      serializer = %{name: "test.serializer", configuration: %{}}

      for codecs <- [
            [transpose, bytes],
            [array, reversal, bytes],
            [serializer],
            [bytes, bytes],
            [bytes, array],
            [compressor, bytes],
            [reversal, reversal, bytes],
            [array]
          ] do
        assert {:error, {:not_expressible_in_v2, why}} = V2.encode(%{meta | codecs: codecs}),
               inspect(codecs)

        assert is_binary(why)
      end

      assert {:error, {:not_expressible_in_v2, _}} =
               V2.encode(%{meta | chunk_key_encoding: %{name: "default", separator: "/"}})

      assert {:error, {:not_expressible_in_v2, _}} =
               V2.encode(%{meta | storage_transformers: [%{"name" => "t"}]})

      assert V2.encode(%{meta | codecs: [%{name: "nope", configuration: %{}}]}) ==
               {:error, {:unsupported_codec, "nope"}}
    end

    test "a NaN payload is written as NaN" do
      {:ok, meta} = V2.decode(zarray(), nil)
      {:ok, %{zarray: json}} = V2.encode(%{meta | fill_value: {:bits, 0x7FF8000000000001}})
      assert json["fill_value"] == "NaN"
    end
  end
end
