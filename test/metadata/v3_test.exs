defmodule ExZarr.Metadata.V3Test do
  use ExUnit.Case, async: true

  alias ExZarr.Metadata
  alias ExZarr.Metadata.V3

  doctest ExZarr.Metadata.V3

  # Written by zarr-python 3.1.6: zarr.create_array(shape=(4, 3), chunks=(2, 2), dtype="f8",
  # fill_value=np.nan)
  @zarr_python """
  {
    "shape": [4, 3],
    "data_type": "float64",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": "NaN",
    "codecs": [
      {"name": "bytes", "configuration": {"endian": "little"}},
      {"name": "zstd", "configuration": {"level": 0, "checksum": false}}
    ],
    "attributes": {},
    "zarr_format": 3,
    "node_type": "array",
    "storage_transformers": []
  }
  """

  defp doc, do: :jiffy.decode(@zarr_python, [:return_maps])

  defp decode_with(changes) do
    changes
    |> Enum.reduce(doc(), fn
      {key, :delete}, acc -> Map.delete(acc, key)
      {key, value}, acc -> Map.put(acc, key, value)
    end)
    |> V3.decode()
  end

  describe "decode" do
    test "the document zarr-python writes" do
      assert {:ok, meta} = V3.decode(doc())

      assert meta == %Metadata{
               zarr_format: 3,
               shape: {4, 3},
               chunks: {2, 2},
               dtype: :float64,
               fill_value: :nan,
               codecs: [
                 %{name: "bytes", configuration: %{"endian" => "little"}},
                 %{name: "zstd", configuration: %{"level" => 0, "checksum" => false}}
               ],
               chunk_key_encoding: %{name: "default", separator: "/"},
               attributes: %{},
               dimension_names: nil,
               storage_transformers: []
             }
    end

    test "optional fields: attributes, storage_transformers, dimension_names" do
      assert {:ok, meta} =
               decode_with(%{"attributes" => :delete, "storage_transformers" => :delete})

      assert meta.attributes == %{}
      assert meta.storage_transformers == []
      assert meta.dimension_names == nil

      assert {:ok, meta} =
               decode_with(%{
                 "attributes" => %{"units" => "K", "missing" => :null, "n" => [1, :null]},
                 "dimension_names" => ["y", :null]
               })

      assert meta.attributes == %{"units" => "K", "missing" => nil, "n" => [1, nil]}
      assert meta.dimension_names == ["y", nil]
      assert {:ok, %{dimension_names: nil}} = decode_with(%{"dimension_names" => :null})
    end

    test "chunk key encodings" do
      cases = [
        {%{"name" => "default"}, %{name: "default", separator: "/"}},
        {%{"name" => "default", "configuration" => %{"separator" => "."}},
         %{name: "default", separator: "."}},
        {%{"name" => "v2"}, %{name: "v2", separator: "."}},
        {%{"name" => "v2", "configuration" => %{"separator" => "/"}},
         %{name: "v2", separator: "/"}},
        {"v2", %{name: "v2", separator: "."}},
        {"default", %{name: "default", separator: "/"}}
      ]

      for {json, expected} <- cases do
        assert {:ok, %{chunk_key_encoding: ^expected}} =
                 decode_with(%{"chunk_key_encoding" => json})
      end
    end

    test "codecs: short names, missing configuration" do
      assert {:ok, meta} = decode_with(%{"codecs" => ["bytes", %{"name" => "crc32c"}]})

      assert meta.codecs == [
               %{name: "bytes", configuration: %{}},
               %{name: "crc32c", configuration: %{}}
             ]
    end

    test "every data type and fill value form" do
      for {dtype, fill, expected} <- [
            {"bool", true, true},
            {"int8", -128, -128},
            {"uint64", 18_446_744_073_709_551_615, 18_446_744_073_709_551_615},
            {"float16", "0x7e01", {:bits, 0x7E01}},
            {"float32", "-Infinity", :neg_infinity},
            {"float64", 1.5, 1.5},
            {"complex64", ["NaN", 1.0], {:nan, 1.0}},
            {"complex128", [0, "0x7ff0000000000000"], {0.0, :infinity}}
          ] do
        assert {:ok, meta} = decode_with(%{"data_type" => dtype, "fill_value" => fill})
        assert meta.fill_value == expected
        assert Atom.to_string(meta.dtype) == dtype
      end
    end

    test "0-d arrays" do
      assert {:ok, meta} =
               decode_with(%{
                 "shape" => [],
                 "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => []}}
               })

      assert {meta.shape, meta.chunks} == {{}, {}}
    end

    test "a group is not an array" do
      assert V3.decode(%{"zarr_format" => 3, "node_type" => "group", "attributes" => %{}}) ==
               {:error, :not_an_array}
    end

    test "unknown fields and extensions must not need understanding" do
      assert decode_with(%{"foo" => 1}) == {:error, {:unsupported_extension, "foo"}}
      assert decode_with(%{"foo" => %{}}) == {:error, {:unsupported_extension, "foo"}}

      assert decode_with(%{"foo" => %{"must_understand" => true}}) ==
               {:error, {:unsupported_extension, "foo"}}

      assert {:ok, _} = decode_with(%{"foo" => %{"must_understand" => false, "x" => 1}})

      assert decode_with(%{
               "chunk_grid" => %{"name" => "hexagonal", "configuration" => %{}}
             }) == {:error, {:unsupported_extension, "hexagonal"}}

      assert decode_with(%{"chunk_key_encoding" => %{"name" => "fancy"}}) ==
               {:error, {:unsupported_extension, "fancy"}}

      assert decode_with(%{"storage_transformers" => [%{"name" => "t"}]}) ==
               {:error, {:unsupported_extension, "t"}}

      transformer = %{"name" => "t", "must_understand" => false}

      assert {:ok, %{storage_transformers: [^transformer]}} =
               decode_with(%{"storage_transformers" => [transformer]})

      assert decode_with(%{"data_type" => "r16"}) == {:error, {:unsupported_dtype, "r16"}}

      assert decode_with(%{"data_type" => %{"name" => "numpy.datetime64", "configuration" => %{}}}) ==
               {:error, {:unsupported_dtype, "numpy.datetime64"}}

      assert {:ok, %{dtype: :int16}} =
               decode_with(%{"data_type" => %{"name" => "int16"}, "fill_value" => 0})

      assert {:ok, %{dtype: :int16}} =
               decode_with(%{
                 "data_type" => %{"name" => "int16", "configuration" => %{}},
                 "fill_value" => 0
               })

      assert decode_with(%{"data_type" => %{"name" => "int16", "configuration" => %{"x" => 1}}}) ==
               {:error, {:unsupported_dtype, "int16"}}
    end

    test "malformed documents" do
      bad = [
        %{"zarr_format" => 2},
        %{"zarr_format" => :delete},
        %{"node_type" => "banana"},
        %{"node_type" => :delete},
        %{"shape" => :delete},
        %{"shape" => [4, -1]},
        %{"shape" => "4,3"},
        %{"shape" => [4.0, 3]},
        %{"data_type" => :delete},
        %{"data_type" => 7},
        %{"chunk_grid" => :delete},
        %{"chunk_grid" => %{"name" => "regular"}},
        %{"chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [2]}}},
        %{"chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [2, 0]}}},
        %{"chunk_grid" => %{"name" => "regular", "configuration" => [2, 2]}},
        %{"chunk_grid" => [2, 2]},
        %{"chunk_key_encoding" => :delete},
        %{"chunk_key_encoding" => %{"name" => "v2", "configuration" => %{"separator" => "-"}}},
        %{"fill_value" => :delete},
        %{"codecs" => :delete},
        %{"codecs" => []},
        %{"codecs" => %{"name" => "bytes"}},
        %{"codecs" => [%{"name" => 1}]},
        %{"codecs" => [%{"configuration" => %{}}]},
        %{"codecs" => [%{"name" => "bytes", "configuration" => "little"}]},
        %{"attributes" => []},
        %{"storage_transformers" => %{}},
        %{"storage_transformers" => [1]},
        %{"dimension_names" => ["x"]},
        %{"dimension_names" => ["x", 1]},
        %{"dimension_names" => "xy"}
      ]

      for changes <- bad do
        assert {:error, {:invalid_metadata, why}} = decode_with(changes), inspect(changes)
        assert is_binary(why)
      end

      assert {:error, {:invalid_fill_value, :float64, "nan"}} =
               decode_with(%{"fill_value" => "nan"})

      assert {:error, {:invalid_metadata, _}} = V3.decode([1, 2])
    end
  end

  describe "encode" do
    test "writes the keys zarr-python writes and decodes back" do
      {:ok, meta} = V3.decode(doc())
      json = V3.encode(meta)
      assert json == doc()
      assert V3.decode(json) == {:ok, meta}
    end

    test "dimension names, nil attributes, codecs without configuration" do
      {:ok, meta} = V3.decode(doc())

      meta = %{
        meta
        | dimension_names: ["a", nil],
          attributes: %{"x" => nil},
          codecs: [%{name: "bytes", configuration: %{}}, %{name: "crc32c", configuration: %{}}]
      }

      json = V3.encode(meta)
      assert json["dimension_names"] == ["a", :null]
      assert json["attributes"] == %{"x" => :null}
      assert json["codecs"] == [%{"name" => "bytes"}, %{"name" => "crc32c"}]
      assert V3.decode(json) == {:ok, meta}
    end

    test "fill values and key encodings" do
      {:ok, meta} = V3.decode(doc())

      meta = %{
        meta
        | dtype: :float32,
          fill_value: {:bits, 0x7FC00001},
          chunk_key_encoding: %{name: "v2", separator: "/"}
      }

      json = V3.encode(meta)
      assert json["fill_value"] == "0x7fc00001"
      assert json["data_type"] == "float32"

      assert json["chunk_key_encoding"] == %{
               "name" => "v2",
               "configuration" => %{"separator" => "/"}
             }
    end
  end
end
