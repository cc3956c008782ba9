Code.require_file("metadata/fake_codecs.exs", __DIR__)

defmodule ExZarr.MetadataTest do
  use ExUnit.Case, async: true

  alias ExZarr.{DType, JSON, Metadata}
  alias ExZarr.Metadata.{V2, V3}
  alias ExZarr.Test.Prop

  doctest ExZarr.Metadata

  defp new!(opts) do
    {:ok, meta} = Metadata.new(Keyword.put_new(opts, :compressor, nil))
    meta
  end

  describe "chunk_coords/2" do
    test "inverts chunk_key/2 for every encoding and separator (property)" do
      encodings = [{2, "v2", "."}, {2, "v2", "/"}, {3, "default", "/"}, {3, "default", "."}]
      encodings = encodings ++ [{3, "v2", "."}, {3, "v2", "/"}]

      gen =
        :proper_types.bind(
          {:proper_types.integer(0, 4), :proper_types.integer(0, 5)},
          fn {ndim, e} -> {Prop.tuple_of(ndim, 0, 100_000), Enum.at(encodings, e)} end,
          false
        )

      Prop.check(gen, fn {coords, {format, name, sep}} ->
        encoding = if format == 2, do: [], else: [chunk_key_encoding: name]

        meta =
          new!(
            [zarr_format: format, shape: Tuple.duplicate(7, tuple_size(coords))] ++
              [dimension_separator: sep] ++ encoding
          )

        Metadata.chunk_coords(meta, Metadata.chunk_key(meta, coords)) == {:ok, coords}
      end)
    end

    test "keys that name no chunk of the array are :error" do
      v3 = new!(shape: {4, 4})
      v2 = new!(shape: {4, 4}, zarr_format: 2)

      for key <- ["zarr.json", "c/1", "c/1/2/3", "c/1/x", "c/01/2", "c/-1/2", "c/+1/2", "c.1.2"],
          do: assert(Metadata.chunk_coords(v3, key) == :error, key)

      for key <- [".zarray", ".zattrs", "1", "1.2.3", "1..2", "1.02", "c/1/2", "1/2"],
          do: assert(Metadata.chunk_coords(v2, key) == :error, key)

      assert Metadata.chunk_coords(new!(shape: {}), "c") == {:ok, {}}
      assert Metadata.chunk_coords(new!(shape: {}), "c/0") == :error
      assert Metadata.chunk_coords(new!(shape: {}, zarr_format: 2), "0") == {:ok, {}}
    end
  end

  describe "new/1" do
    test "defaults" do
      meta = new!(shape: {10, 20})
      assert meta.zarr_format == 3
      assert meta.chunks == {10, 20}
      assert meta.dtype == :float64
      assert meta.fill_value === 0.0
      assert meta.chunk_key_encoding == %{name: "default", separator: "/"}
      assert meta.codecs == [%{name: "bytes", configuration: %{"endian" => "little"}}]
      assert meta.attributes == %{}
      assert meta.dimension_names == nil
      assert meta.storage_transformers == []

      meta = new!(shape: {10, 0}, zarr_format: 2)
      assert meta.chunks == {10, 1}
      assert meta.chunk_key_encoding == %{name: "v2", separator: "."}
    end

    test "the default compressor is zstd level 0, as zarr-python's" do
      for format <- [2, 3] do
        {:ok, meta} = Metadata.new(shape: {4}, zarr_format: format)
        assert [%{name: "bytes"}, %{name: "zstd", configuration: config}] = meta.codecs
        assert config["level"] == 0
      end
    end

    test "compressor and filters become the pipeline" do
      meta =
        new!(
          shape: {4, 4},
          dtype: :uint16,
          compressor: %{id: "test_bytes", level: 3, mode: :fast},
          filters: [%{"id" => "test_array"}, %{id: :test_bytes, k: [1, 2]}],
          order: :f,
          endian: :big
        )

      assert meta.codecs == [
               %{name: "transpose", configuration: %{"order" => [1, 0]}},
               %{name: "test.array", configuration: %{}},
               %{name: "bytes", configuration: %{"endian" => "big"}},
               %{name: "test.bytes", configuration: %{"k" => [1, 2]}},
               %{name: "test.bytes", configuration: %{"level" => 3, "mode" => "fast"}}
             ]

      assert new!(shape: {4}, dtype: :int8, compressor: :none).codecs == [
               %{name: "bytes", configuration: %{}}
             ]
    end

    test "explicit codecs replace compressor, filters, order and endian" do
      meta =
        new!(
          shape: {4, 4},
          codecs: [
            %{name: "transpose", configuration: %{order: [1, 0]}},
            %{"name" => "bytes", "configuration" => %{"endian" => :big}},
            "test.bytes"
          ],
          compressor: %{id: "test_bytes"},
          order: "C"
        )

      assert meta.codecs == [
               %{name: "transpose", configuration: %{"order" => [1, 0]}},
               %{name: "bytes", configuration: %{"endian" => "big"}},
               %{name: "test.bytes", configuration: %{}}
             ]

      assert Metadata.new(shape: {4}, codecs: ["nonesuch"]) ==
               {:error, {:unsupported_codec, "nonesuch"}}

      for codecs <- [
            ["test.bytes", "bytes"],
            ["bytes", "test.array"],
            ["test.array"],
            ["bytes", "test.serializer"]
          ] do
        assert {:error, {:invalid_option, :codecs, why}} =
                 Metadata.new(shape: {4}, codecs: codecs)

        assert why =~ "exactly one array->bytes"
      end

      for bad <- [[], "bytes", [%{configuration: %{}}], [%{name: "bytes", configuration: 1}], [7]] do
        assert {:error, {:invalid_option, :codecs, _}} = Metadata.new(shape: {4}, codecs: bad)
      end
    end

    test "v2 arrays must have a v2 pipeline" do
      assert {:error, {:invalid_option, :codecs, why}} =
               Metadata.new(
                 shape: {4, 4},
                 zarr_format: 2,
                 codecs: [%{name: "transpose", configuration: %{order: [0, 1]}}, "bytes"]
               )

      assert why =~ "transpose"
      assert {:ok, _} = Metadata.new(shape: {4}, zarr_format: 2, codecs: ["bytes", "test.bytes"])
    end

    test "fill values" do
      assert new!(shape: {1}, dtype: :float32, fill_value: 0.1).fill_value == 0.10000000149011612
      assert new!(shape: {1}, dtype: :float32, fill_value: :nan).fill_value == :nan
      assert new!(shape: {1}, dtype: :int8, fill_value: -128).fill_value == -128
      assert new!(shape: {1}, dtype: :complex64, fill_value: {1, 2}).fill_value == {1.0, 2.0}
      assert new!(shape: {1}, dtype: :bool).fill_value == false
      assert new!(shape: {1}, fill_value: nil).fill_value === 0.0
      assert new!(shape: {1}, fill_value: nil, zarr_format: 2).fill_value == nil

      # .zarray says "NaN" for any NaN: the array created is the one a reader opens
      for {dtype, fill, v2_fill} <- [
            {:float32, {:bits, 0x7FC00001}, :nan},
            {:complex128, {1.0, {:bits, 0xFFF8000000000000}}, {1.0, :nan}},
            {:bfloat16, {:bits, 0x7FC1}, :nan}
          ] do
        assert new!(shape: {1}, dtype: dtype, fill_value: fill, zarr_format: 2).fill_value ==
                 v2_fill

        assert new!(shape: {1}, dtype: dtype, fill_value: fill).fill_value == fill
      end

      assert Metadata.new(shape: {1}, dtype: :uint8, fill_value: 256) ==
               {:error, {:invalid_option, :fill_value, 256}}
    end

    test "chunk key encodings and separators" do
      cases = [
        {[], %{name: "default", separator: "/"}},
        {[dimension_separator: "."], %{name: "default", separator: "."}},
        {[chunk_key_encoding: "v2"], %{name: "v2", separator: "."}},
        {[chunk_key_encoding: "v2", dimension_separator: "/"], %{name: "v2", separator: "/"}},
        {[chunk_key_encoding: %{name: "v2", separator: "/"}], %{name: "v2", separator: "/"}},
        {[chunk_key_encoding: %{"name" => "default"}], %{name: "default", separator: "/"}},
        {[chunk_key_encoding: :v2], %{name: "v2", separator: "."}},
        {[zarr_format: 2], %{name: "v2", separator: "."}},
        {[zarr_format: 2, dimension_separator: "/"], %{name: "v2", separator: "/"}}
      ]

      for {opts, expected} <- cases do
        assert new!([shape: {2}] ++ opts).chunk_key_encoding == expected
      end

      assert {:error, {:invalid_option, :chunk_key_encoding, "default"}} =
               Metadata.new(shape: {2}, zarr_format: 2, chunk_key_encoding: "default")

      assert {:error, {:invalid_option, :chunk_key_encoding, "hashed"}} =
               Metadata.new(shape: {2}, chunk_key_encoding: "hashed")

      assert {:error, {:invalid_option, :dimension_separator, "-"}} =
               Metadata.new(shape: {2}, dimension_separator: "-")
    end

    test "attributes and dimension names" do
      meta =
        new!(
          shape: {2, 3},
          attributes: %{units: "m", nested: %{a: [1, nil]}},
          dimension_names: ["y", nil]
        )

      assert meta.attributes == %{"units" => "m", "nested" => %{"a" => [1, nil]}}
      assert meta.dimension_names == ["y", nil]

      assert {:error, {:invalid_option, :dimension_names, ["y"]}} =
               Metadata.new(shape: {2, 3}, dimension_names: ["y"])

      assert {:error, {:invalid_option, :dimension_names, _}} =
               Metadata.new(shape: {2, 3}, dimension_names: ["y", "x"], zarr_format: 2)

      assert {:error, {:invalid_option, :attributes, _}} =
               Metadata.new(shape: {2}, attributes: %{"pid" => self()})

      assert {:error, {:invalid_option, :attributes, _}} =
               Metadata.new(shape: {2}, attributes: [1])

      assert {:error, {:invalid_option, :attributes, _}} =
               Metadata.new(shape: {2}, attributes: %{"when" => ~D[2024-01-01]})

      assert {:error, {:invalid_option, :attributes, _}} =
               Metadata.new(shape: {2}, attributes: %{"improper" => [1 | 2]})
    end

    test "big-endian structured fields are v2 only: zarr.json would read them little-endian" do
      record = fn endian ->
        {:structured,
         [
           {"a", :int32, :little, {}},
           {"b", :float64, endian, {}},
           {"n", {:structured, [{"x", :int16, endian, {}}]}, nil, {}}
         ]}
      end

      assert new!(shape: {3}, dtype: record.(:big), zarr_format: 2).dtype == record.(:big)
      assert new!(shape: {3}, dtype: record.(:little)).dtype == record.(:little)

      assert {:error, {:invalid_option, :dtype, why}} =
               Metadata.new(shape: {3}, dtype: record.(:big))

      assert why =~ "big-endian: b, n.x"
    end

    test "invalid options are named" do
      for {opts, option} <- [
            {[], :shape},
            {[shape: [10]], :shape},
            {[shape: {10, -1}], :shape},
            {[shape: {10}, chunks: {0}], :chunks},
            {[shape: {10}, chunks: {5, 5}], :chunks},
            {[shape: {10}, chunks: [5]], :chunks},
            {[shape: {10}, dtype: :float128], :dtype},
            {[shape: {10}, dtype: "<f8"], :dtype},
            {[shape: {10}, zarr_format: 4], :zarr_format},
            {[shape: {10}, order: "K"], :order},
            {[shape: {10}, endian: :middle], :endian},
            {[shape: {10}, compressor: "zstd"], :compressor},
            {[shape: {10}, compressor: %{level: 3}], :compressor},
            {[shape: {10}, filters: %{id: "test_bytes"}], :filters},
            {[shape: {10}, filters: [:delta]], :filters}
          ] do
        assert {:error, {:invalid_option, ^option, _}} = Metadata.new(opts), inspect(opts)
      end

      assert {:error, {:invalid_option, :options, 5}} = Metadata.new(5)

      assert {:error, {:invalid_option, :options, [{:shape, {1}}, 5]}} =
               Metadata.new([{:shape, {1}}, 5])

      assert {:ok, %{dtype: :int16}} = Metadata.new(shape: {1}, dtype: "int16", compressor: nil)

      assert {:error, {:unsupported_codec, "nope"}} =
               Metadata.new(shape: {1}, compressor: %{id: "nope"})
    end
  end

  describe "chunk_key/2" do
    test "default and v2 encodings" do
      cases = [
        {"default", "/", {1, 23, 0}, "c/1/23/0"},
        {"default", ".", {1, 23, 0}, "c.1.23.0"},
        {"default", "/", {}, "c"},
        {"default", "/", {7}, "c/7"},
        {"v2", ".", {1, 23, 0}, "1.23.0"},
        {"v2", "/", {1, 23, 0}, "1/23/0"},
        {"v2", ".", {}, "0"},
        {"v2", "/", {5}, "5"}
      ]

      for {name, sep, coords, key} <- cases do
        meta = %{new!(shape: {}) | chunk_key_encoding: %{name: name, separator: sep}}
        assert Metadata.chunk_key(meta, coords) == key
      end
    end

    test "keys decode back to the chunk coordinates" do
      gen =
        :proper_types.bind(
          {:proper_types.elements([{"default", "/"}, {"default", "."}, {"v2", "/"}, {"v2", "."}]),
           :proper_types.list(:proper_types.integer(0, 100_000))},
          & &1,
          false
        )

      Prop.check(gen, fn {{name, sep}, coords} ->
        meta = %{new!(shape: {}) | chunk_key_encoding: %{name: name, separator: sep}}
        key = Metadata.chunk_key(meta, List.to_tuple(coords))
        parts = String.split(key, sep)

        case {name, coords} do
          {"default", _} -> parts == ["c" | Enum.map(coords, &Integer.to_string/1)]
          {"v2", []} -> key == "0"
          {"v2", _} -> parts == Enum.map(coords, &Integer.to_string/1)
        end
      end)
    end
  end

  describe "JSON" do
    test "bare NaN and infinities, as Python writes them in attributes" do
      json = ~s({"a": NaN, "b": [-Infinity, Infinity], "s": "NaN \\" Infinity", "t": "\\\\"})

      assert JSON.decode(json) ==
               {:ok,
                %{
                  "a" => :nan,
                  "b" => [:neg_infinity, :infinity],
                  "s" => "NaN \" Infinity",
                  "t" => "\\"
                }}

      {:ok, term} = JSON.decode(json)
      assert JSON.decode(JSON.encode(term)) == {:ok, term}

      for bad <- [~s({"a": Nan}), ~s({"a": NaN), ~s({"a": "NaN), ~s({"a": NaN} x), "[-NaN]"] do
        assert {:error, {:invalid_json, _}} = JSON.decode(bad), bad
      end

      {:ok, meta} = Metadata.new(shape: {2}, compressor: nil, attributes: %{missing: :nan})
      {:ok, [{"zarr.json", zarr_json}]} = Metadata.to_documents(meta)
      assert zarr_json =~ ~s("missing": NaN)
      assert Metadata.from_json(zarr_json) == {:ok, meta}
    end

    test "from_json detects the format" do
      {:ok, meta} = Metadata.new(shape: {3}, compressor: nil)
      {:ok, [{"zarr.json", json}]} = Metadata.to_documents(meta)
      assert Metadata.from_json(json) == {:ok, meta}

      {:ok, meta} = Metadata.new(shape: {3}, compressor: nil, zarr_format: 2)
      {:ok, [{".zarray", json}, {".zattrs", "{}"}]} = Metadata.to_documents(meta)
      assert Metadata.from_json(json) == {:ok, meta}

      assert Metadata.from_json("[1]") ==
               {:error, {:invalid_metadata, "metadata must be a JSON object"}}

      assert {:error, {:invalid_metadata, _}} = Metadata.from_json(~s({"zarr_format": 1}))
    end

    test "to_documents fails for v2 metadata v2 cannot express" do
      meta = %{
        new!(shape: {3}, zarr_format: 2)
        | chunk_key_encoding: %{name: "default", separator: "/"}
      }

      assert {:error, {:not_expressible_in_v2, _}} = Metadata.to_documents(meta)
    end

    test "keys follow zarr-python's order" do
      meta = new!(shape: {3}, dimension_names: ["x"])
      json = JSON.encode(V3.encode(meta))
      keys = Regex.scan(~r/^  "(\w+)"/m, json) |> Enum.map(&List.last/1)

      assert keys == ~w(zarr_format node_type shape data_type chunk_grid chunk_key_encoding
                        fill_value codecs attributes storage_transformers dimension_names)
    end
  end

  describe "round trips" do
    @payload_nans %{
      2 => [0x7E01, 0xFE00],
      4 => [0x7FC00001, 0xFFC00000],
      8 => [0x7FF0000000000001, 0xFFF8000000000000]
    }

    # Floats of a type of `size` bytes, NaN payloads included: new/1 keeps them in v3 and makes
    # them the canonical NaN in v2, which cannot store them.
    defp float_gen(size) do
      specials = [:nan, :infinity, :neg_infinity, 0.0, -0.0]
      payloads = Enum.map(@payload_nans[size], &{:bits, &1})
      :proper_types.oneof([:proper_types.float(), :proper_types.elements(specials ++ payloads)])
    end

    defp fill_gen(dtype) do
      case DType.kind(dtype) do
        :bool ->
          :proper_types.boolean()

        kind when kind in [:int, :uint] ->
          {min, max} = DType.int_range(dtype)

          :proper_types.oneof([
            :proper_types.integer(min, max),
            :proper_types.elements([min, max])
          ])

        :float ->
          float_gen(DType.component_size(dtype))

        :complex ->
          size = DType.component_size(dtype)
          {float_gen(size), float_gen(size)}
      end
    end

    defp opts_gen do
      :proper_types.bind(
        {:proper_types.elements([2, 3]), :proper_types.integer(0, 4),
         :proper_types.elements(DType.all())},
        fn {format, ndim, dtype} ->
          dims = :proper_types.vector(ndim, :proper_types.integer(0, 40))
          chunks = :proper_types.vector(ndim, :proper_types.integer(1, 12))
          fill = :proper_types.oneof([fill_gen(dtype), :proper_types.exactly(nil)])

          compressor =
            :proper_types.elements([
              nil,
              %{id: "test_bytes"},
              %{"id" => "test_bytes", "level" => 5, "x" => [1.5, "a"]}
            ])

          filters =
            :proper_types.elements([
              nil,
              [%{id: "test_array", astype: "<i4"}],
              [%{id: "test_array"}, %{id: "test_bytes"}],
              [%{id: "test_bytes", z: true}]
            ])

          key_encoding =
            if format == 3,
              do: :proper_types.elements(["default", "v2"]),
              else: :proper_types.exactly("v2")

          names =
            if format == 3,
              do:
                :proper_types.oneof([
                  :proper_types.exactly(nil),
                  :proper_types.vector(ndim, :proper_types.elements(["x", "time", nil]))
                ]),
              else: :proper_types.exactly(nil)

          attributes =
            :proper_types.elements([%{}, %{"a" => 1}, %{"b" => %{"c" => [nil, "d", -0.5]}}])

          {:proper_types.exactly(format), :proper_types.exactly(dtype), dims, chunks, fill,
           compressor, filters, :proper_types.elements([:c, :f]),
           :proper_types.elements([:little, :big]), :proper_types.elements(["/", "."]),
           key_encoding, names, attributes}
        end,
        false
      )
    end

    defp to_opts(
           {format, dtype, dims, chunks, fill, compressor, filters, order, endian, sep,
            key_encoding, names, attributes}
         ) do
      [
        zarr_format: format,
        dtype: dtype,
        shape: List.to_tuple(dims),
        chunks: List.to_tuple(chunks),
        fill_value: fill,
        compressor: compressor,
        filters: filters,
        order: order,
        endian: endian,
        dimension_separator: sep,
        chunk_key_encoding: key_encoding,
        dimension_names: names,
        attributes: attributes
      ]
    end

    defp read_back(%Metadata{zarr_format: 3} = meta) do
      {:ok, [{"zarr.json", json}]} = Metadata.to_documents(meta)
      Metadata.from_json(json)
    end

    defp read_back(%Metadata{zarr_format: 2} = meta) do
      {:ok, [{".zarray", zarray}, {".zattrs", zattrs}]} = Metadata.to_documents(meta)
      {:ok, zarray} = JSON.decode(zarray)
      {:ok, zattrs} = JSON.decode(zattrs)
      V2.decode(zarray, zattrs)
    end

    test "new -> JSON text -> decode gives the same metadata, fill bits included" do
      Prop.check(opts_gen(), fn values ->
        with {:ok, meta} <- Metadata.new(to_opts(values)),
             {:ok, back} <- read_back(meta) do
          back == meta and
            DType.fill_element(back.dtype, back.fill_value) ==
              DType.fill_element(meta.dtype, meta.fill_value)
        end
      end)
    end

    test "decode(encode(meta)) is the identity on the JSON maps too" do
      Prop.check(opts_gen(), fn values ->
        {:ok, meta} = Metadata.new(to_opts(values))

        case meta.zarr_format do
          3 ->
            json = V3.encode(meta)
            {:ok, decoded} = V3.decode(json)
            V3.encode(decoded) == json

          2 ->
            {:ok, %{zarray: zarray, zattrs: zattrs}} = V2.encode(meta)
            {:ok, decoded} = V2.decode(zarray, zattrs)
            V2.encode(decoded) == {:ok, %{zarray: zarray, zattrs: zattrs}}
        end
      end)
    end
  end

  describe "hostile documents" do
    @v3_doc %{
      "zarr_format" => 3,
      "node_type" => "array",
      "shape" => [6, 4],
      "data_type" => "float32",
      "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [3, 4]}},
      "chunk_key_encoding" => %{"name" => "default", "configuration" => %{"separator" => "/"}},
      "fill_value" => "NaN",
      "codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}],
      "attributes" => %{},
      "storage_transformers" => []
    }

    @v2_doc %{
      "zarr_format" => 2,
      "shape" => [6, 4],
      "chunks" => [3, 4],
      "dtype" => "<f4",
      "compressor" => %{"id" => "zlib", "level" => 1},
      "fill_value" => "NaN",
      "order" => "C",
      "filters" => :null,
      "dimension_separator" => "."
    }

    defp scalar_gen do
      :proper_types.oneof([
        :proper_types.integer(-3, 300),
        :proper_types.float(),
        :proper_types.boolean(),
        :proper_types.elements([
          :null,
          "",
          "NaN",
          "0x7fc00000",
          "0x7ff8000000000000",
          "bytes",
          "transpose",
          "regular",
          "default",
          "v2",
          "/",
          ".",
          "C",
          "F",
          "<f8",
          ">i2",
          "|u1",
          "|O",
          "int8",
          "complex64",
          "group",
          "array",
          2,
          3
        ])
      ])
    end

    defp map_gen(keys, values),
      do: :proper_types.bind(:proper_types.list({keys, values}), &Map.new/1, false)

    defp json_gen do
      :proper_types.oneof([
        scalar_gen(),
        :proper_types.list(scalar_gen()),
        map_gen(
          :proper_types.elements(["name", "configuration", "id", "x"]),
          scalar_gen()
        ),
        :proper_types.bind(
          {:proper_types.elements(["regular", "default", "v2", "bytes", "zlib"]),
           map_gen(
             :proper_types.elements(["chunk_shape", "separator", "endian", "order", "level"]),
             :proper_types.oneof([scalar_gen(), :proper_types.list(scalar_gen())])
           )},
          fn {name, config} -> %{"name" => name, "configuration" => config, "id" => name} end,
          false
        ),
        :proper_types.list(
          map_gen(:proper_types.elements(["name", "configuration", "id"]), scalar_gen())
        )
      ])
    end

    defp mutations_gen(doc) do
      keys = Map.keys(doc) ++ ["extra", "dimension_names", "attributes"]

      :proper_types.list(
        {:proper_types.elements(keys),
         :proper_types.oneof([:proper_types.exactly(:delete), json_gen()])}
      )
    end

    defp mutate(doc, mutations) do
      Enum.reduce(mutations, doc, fn
        {key, :delete}, acc -> Map.delete(acc, key)
        {key, value}, acc -> Map.put(acc, key, value)
      end)
    end

    test "v3: mutated documents give an error or metadata that re-encodes to itself" do
      Prop.check(mutations_gen(@v3_doc), fn mutations ->
        case V3.decode(mutate(@v3_doc, mutations)) do
          {:ok, meta} -> V3.decode(V3.encode(meta)) == {:ok, meta}
          {:error, _reason} -> true
        end
      end)
    end

    test "v2: mutated documents give an error or metadata that re-encodes to itself" do
      Prop.check(mutations_gen(@v2_doc), fn mutations ->
        case V2.decode(mutate(@v2_doc, mutations), nil) do
          {:ok, meta} ->
            {:ok, %{zarray: zarray, zattrs: zattrs}} = V2.encode(meta)
            V2.decode(zarray, zattrs) == {:ok, meta}

          {:error, _reason} ->
            true
        end
      end)
    end
  end

  test "chunk_shapes and codec_names look inside the sharding codec, wherever it is" do
    {:ok, plain} = Metadata.new(shape: {8, 8}, chunks: {4, 4}, dtype: :int16, compressor: nil)
    assert Metadata.chunk_shapes(plain) == {{4, 4}, nil}
    assert Metadata.codec_names(plain) == ["bytes"]

    {:ok, sharded} = Metadata.new(shape: {8, 8}, chunks: {2, 2}, shards: {4, 8}, dtype: :int16)

    assert Metadata.chunk_shapes(sharded) == {{2, 2}, {4, 8}}
    assert "bytes" not in Metadata.codec_names(sharded)
    assert "sharding_indexed" not in Metadata.codec_names(sharded)

    transposed = %{
      sharded
      | codecs: [%{name: "transpose", configuration: %{"order" => [1, 0]}} | sharded.codecs]
    }

    assert Metadata.chunk_shapes(transposed) == {{2, 2}, {4, 8}}
    assert hd(Metadata.codec_names(transposed)) == "transpose"
  end
end
