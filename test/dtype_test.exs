defmodule ExZarr.DTypeTest do
  use ExUnit.Case, async: true

  alias ExZarr.DType
  alias ExZarr.Test.Prop

  doctest ExZarr.DType

  @sizes %{
    bool: 1,
    int8: 1,
    int16: 2,
    int32: 4,
    int64: 8,
    uint8: 1,
    uint16: 2,
    uint32: 4,
    uint64: 8,
    float16: 2,
    float32: 4,
    float64: 8,
    complex64: 8,
    complex128: 16
  }

  @v2_names %{
    bool: "|b1",
    int8: "|i1",
    int16: "<i2",
    int32: "<i4",
    int64: "<i8",
    uint8: "|u1",
    uint16: "<u2",
    uint32: "<u4",
    uint64: "<u8",
    float16: "<f2",
    float32: "<f4",
    float64: "<f8",
    complex64: "<c8",
    complex128: "<c16"
  }

  defp bits(value, size) do
    <<n::little-size(size * 8)>> = DType.fill_element(float_type(size), value)
    n
  end

  defp float_type(2), do: :float16
  defp float_type(4), do: :float32
  defp float_type(8), do: :float64

  describe "types" do
    test "all, item sizes and component sizes" do
      assert Enum.sort(DType.all()) == Enum.sort(Map.keys(@sizes))

      for {dtype, size} <- @sizes do
        assert DType.valid?(dtype)
        assert DType.itemsize(dtype) == size

        expected = if DType.complex?(dtype), do: div(size, 2), else: size
        assert DType.component_size(dtype) == expected
      end

      refute DType.valid?(:float128)
      refute DType.valid?("float64")
      assert_raise ArgumentError, fn -> DType.itemsize(:nope) end
    end

    test "kinds" do
      assert Enum.filter(DType.all(), &DType.float?/1) == [:float16, :float32, :float64]
      assert Enum.filter(DType.all(), &DType.complex?/1) == [:complex64, :complex128]
      assert Enum.count(DType.all(), &DType.integer?/1) == 8
      assert DType.kind(:bool) == :bool
      assert DType.kind(:int64) == :int
      assert DType.kind(:uint64) == :uint
    end

    test "integer ranges" do
      assert DType.int_range(:int8) == {-128, 127}
      assert DType.int_range(:int16) == {-32_768, 32_767}
      assert DType.int_range(:int32) == {-2_147_483_648, 2_147_483_647}
      assert DType.int_range(:int64) == {-9_223_372_036_854_775_808, 9_223_372_036_854_775_807}
      assert DType.int_range(:uint8) == {0, 255}
      assert DType.int_range(:uint32) == {0, 4_294_967_295}
      assert DType.int_range(:uint64) == {0, 18_446_744_073_709_551_615}
    end
  end

  describe "v3 names" do
    test "round trip for every type" do
      for dtype <- DType.all() do
        assert DType.from_v3(DType.to_v3(dtype)) == {:ok, dtype}
      end
    end

    test "unknown names" do
      for name <- ["r16", "str", "Float64", "float128", "", "raw_bytes"] do
        assert DType.from_v3(name) == {:error, {:unsupported_dtype, name}}
      end

      assert DType.from_v3(3) == {:error, {:unsupported_dtype, 3}}
    end
  end

  describe "v2 dtype strings" do
    test "round trip for every type and byte order" do
      for dtype <- DType.all(), endian <- [:little, :big] do
        name = DType.to_v2(dtype, endian)
        expected_endian = if DType.itemsize(dtype) == 1, do: nil, else: endian
        assert DType.from_v2(name) == {:ok, dtype, expected_endian}
      end
    end

    test "the strings numpy writes" do
      for {dtype, name} <- @v2_names do
        assert DType.to_v2(dtype, :little) == name
        endian = if DType.itemsize(dtype) == 1, do: nil, else: :little
        assert DType.from_v2(name) == {:ok, dtype, endian}
      end

      assert DType.to_v2(:float64, :big) == ">f8"
      assert DType.to_v2(:complex128, :big) == ">c16"
      assert DType.to_v2(:bool, :big) == "|b1"
    end

    test "one-byte types accept any byte order character" do
      for name <- ["|u1", "<u1", ">u1"], do: assert(DType.from_v2(name) == {:ok, :uint8, nil})
      assert DType.from_v2("<b1") == {:ok, :bool, nil}
      assert DType.from_v2(">i1") == {:ok, :int8, nil}
    end

    test "unsupported or malformed strings" do
      for json <- [
            "<M8[]",
            "<M8[0generic",
            "<m8[parsec]",
            "|O",
            "<U0",
            "|U3",
            "|S-5",
            "|f8",
            "<f3",
            "<i16",
            "<c4",
            "=f8",
            "f8",
            "<f",
            "<f8 ",
            "",
            [["a", "<f8"], ["a", "<i4"]],
            8,
            :null
          ] do
        assert DType.from_v2(json) == {:error, {:unsupported_dtype, json}}
      end
    end
  end

  describe "decode_fill" do
    test "null is nil in v2 and an error in v3" do
      for dtype <- DType.all() do
        assert DType.decode_fill(dtype, :null, 2) == {:ok, nil}
        assert {:error, {:invalid_fill_value, ^dtype, :null}} = DType.decode_fill(dtype, :null, 3)
      end
    end

    test "bool" do
      for format <- [2, 3] do
        assert DType.decode_fill(:bool, true, format) == {:ok, true}
        assert DType.decode_fill(:bool, false, format) == {:ok, false}
        assert DType.decode_fill(:bool, 0, format) == {:ok, false}
        assert DType.decode_fill(:bool, 1, format) == {:ok, true}

        for bad <- [2, "true", 0.5, [true]] do
          assert DType.decode_fill(:bool, bad, format) ==
                   {:error, {:invalid_fill_value, :bool, bad}}
        end
      end
    end

    test "integers at and beyond their range limits" do
      for dtype <- DType.all(), DType.integer?(dtype), format <- [2, 3] do
        {min, max} = DType.int_range(dtype)
        assert DType.decode_fill(dtype, min, format) == {:ok, min}
        assert DType.decode_fill(dtype, max, format) == {:ok, max}
        assert {:error, _} = DType.decode_fill(dtype, min - 1, format)
        assert {:error, _} = DType.decode_fill(dtype, max + 1, format)
      end
    end

    test "integral floats are accepted for integer types, as zarr-python does" do
      assert DType.decode_fill(:int32, 1.0, 3) == {:ok, 1}
      assert DType.decode_fill(:int32, -0.0, 2) == {:ok, 0}
      assert DType.decode_fill(:uint8, 255.0, 2) == {:ok, 255}
      assert {:error, _} = DType.decode_fill(:int32, 1.5, 3)
      assert {:error, _} = DType.decode_fill(:uint8, 256.0, 3)
      assert {:error, _} = DType.decode_fill(:int32, "NaN", 3)
      assert {:error, _} = DType.decode_fill(:int32, "1", 2)
    end

    test "float specials in both formats" do
      for dtype <- [:float16, :float32, :float64], format <- [2, 3] do
        assert DType.decode_fill(dtype, "NaN", format) == {:ok, :nan}
        assert DType.decode_fill(dtype, "Infinity", format) == {:ok, :infinity}
        assert DType.decode_fill(dtype, "-Infinity", format) == {:ok, :neg_infinity}
        assert DType.decode_fill(dtype, 0, format) == {:ok, 0.0}
        assert DType.decode_fill(dtype, 1.5, format) == {:ok, 1.5}
        assert {:error, _} = DType.decode_fill(dtype, "nan", format)
        assert {:error, _} = DType.decode_fill(dtype, "1.5", format)
        assert {:error, _} = DType.decode_fill(dtype, true, format)
        assert {:error, _} = DType.decode_fill(dtype, [1.0, 0.0], format)
      end
    end

    test "narrow floats are rounded to their type, overflowing to infinity" do
      assert DType.decode_fill(:float32, 0.1, 3) == {:ok, 0.10000000149011612}
      assert DType.decode_fill(:float16, 0.1, 2) == {:ok, 0.0999755859375}
      assert DType.decode_fill(:float32, 1.0e40, 3) == {:ok, :infinity}
      assert DType.decode_fill(:float32, -1.0e40, 2) == {:ok, :neg_infinity}
      assert DType.decode_fill(:float16, 70_000, 3) == {:ok, :infinity}
      assert DType.decode_fill(:float16, 65_504, 3) == {:ok, 65_504.0}
      assert DType.decode_fill(:float64, 0.1, 3) == {:ok, 0.1}
      assert DType.decode_fill(:float64, 2 ** 1100, 3) == {:ok, :infinity}
    end

    test "v3 hex bit patterns" do
      assert DType.decode_fill(:float16, "0x7e00", 3) == {:ok, :nan}
      assert DType.decode_fill(:float16, "0x7e01", 3) == {:ok, {:bits, 0x7E01}}
      assert DType.decode_fill(:float16, "0x3c00", 3) == {:ok, 1.0}
      assert DType.decode_fill(:float16, "0xfc00", 3) == {:ok, :neg_infinity}
      assert DType.decode_fill(:float32, "0x7fc00000", 3) == {:ok, :nan}
      assert DType.decode_fill(:float32, "0x7FC00001", 3) == {:ok, {:bits, 0x7FC00001}}
      assert DType.decode_fill(:float32, "0xffc00000", 3) == {:ok, {:bits, 0xFFC00000}}
      assert DType.decode_fill(:float32, "0x7f800001", 3) == {:ok, {:bits, 0x7F800001}}
      assert DType.decode_fill(:float32, "0x7f800000", 3) == {:ok, :infinity}
      assert DType.decode_fill(:float32, "0x3f800000", 3) == {:ok, 1.0}
      assert DType.decode_fill(:float64, "0x7ff8000000000000", 3) == {:ok, :nan}
      assert DType.decode_fill(:float64, "0x4000000000000000", 3) == {:ok, 2.0}
      assert DType.decode_fill(:float64, "0x0000000000000001", 3) == {:ok, 5.0e-324}

      {:ok, neg_zero} = DType.decode_fill(:float32, "0x80000000", 3)
      assert bits(neg_zero, 4) == 0x80000000
    end

    test "hex patterns of the wrong width or in v2 are rejected" do
      for {dtype, hex} <- [
            float16: "0x7e0",
            float16: "0x7fc00000",
            float32: "0x7e00",
            float32: "0x7ff8000000000000",
            float64: "0x7fc00000",
            float32: "0xzzzzzzzz",
            float32: "0x-1000000",
            float32: "7fc00000"
          ] do
        assert DType.decode_fill(dtype, hex, 3) == {:error, {:invalid_fill_value, dtype, hex}}
      end

      assert {:error, _} = DType.decode_fill(:float32, "0x7fc00000", 2)
    end

    test "complex" do
      assert DType.decode_fill(:complex64, [1.0, "NaN"], 2) == {:ok, {1.0, :nan}}
      assert DType.decode_fill(:complex128, ["-Infinity", 0], 3) == {:ok, {:neg_infinity, 0.0}}

      assert DType.decode_fill(:complex64, ["0x7fc00000", "0x7fc00001"], 3) ==
               {:ok, {:nan, {:bits, 0x7FC00001}}}

      assert DType.decode_fill(:complex64, [0.1, 0], 3) == {:ok, {0.10000000149011612, 0.0}}

      for bad <- [1.0, [1.0], [1.0, 2.0, 3.0], ["0x7ff8000000000000", 0], "NaN", :null] do
        assert {:error, {:invalid_fill_value, :complex64, ^bad}} =
                 DType.decode_fill(:complex64, bad, 3)
      end
    end
  end

  describe "encode_fill" do
    test "as zarr-python writes it" do
      for format <- [2, 3] do
        assert DType.encode_fill(:float64, :nan, format) == "NaN"
        assert DType.encode_fill(:float32, :infinity, format) == "Infinity"
        assert DType.encode_fill(:float16, :neg_infinity, format) == "-Infinity"
        assert DType.encode_fill(:float64, 0.0, format) === 0.0
        assert DType.encode_fill(:float32, 0.10000000149011612, format) == 0.10000000149011612
        assert DType.encode_fill(:int64, -(2 ** 63), format) == -(2 ** 63)
        assert DType.encode_fill(:uint64, 2 ** 64 - 1, format) == 2 ** 64 - 1
        assert DType.encode_fill(:bool, true, format) == true
        assert DType.encode_fill(:complex64, {:nan, 1.0}, format) == ["NaN", 1.0]
        assert DType.encode_fill(:complex128, {1.0, :neg_infinity}, format) == [1.0, "-Infinity"]
      end
    end

    test "NaN payloads are hex in v3 and NaN in v2" do
      assert DType.encode_fill(:float16, {:bits, 0x7E01}, 3) == "0x7e01"
      assert DType.encode_fill(:float32, {:bits, 0xFFC00000}, 3) == "0xffc00000"
      assert DType.encode_fill(:float64, {:bits, 0x7FF0000000000001}, 3) == "0x7ff0000000000001"
      assert DType.encode_fill(:float32, {:bits, 0x7FC00001}, 2) == "NaN"

      assert DType.encode_fill(:complex64, {{:bits, 0x7F800001}, 0.0}, 3) == ["0x7f800001", 0.0]
    end

    test "nil is null in v2 and the default in v3" do
      assert DType.encode_fill(:float64, nil, 2) == :null
      assert DType.encode_fill(:float64, nil, 3) === 0.0
      assert DType.encode_fill(:complex64, nil, 3) == [0.0, 0.0]
      assert DType.encode_fill(:bool, nil, 3) == false
    end
  end

  describe "default_fill, cast_fill and fill_element" do
    test "defaults" do
      for dtype <- DType.all() do
        expected =
          case DType.kind(dtype) do
            :bool -> false
            :float -> 0.0
            :complex -> {0.0, 0.0}
            _ -> 0
          end

        assert DType.default_fill(dtype) === expected
        assert DType.fill_element(dtype, nil) == :binary.copy(<<0>>, DType.itemsize(dtype))
      end
    end

    test "element bytes are little-endian" do
      assert DType.fill_element(:bool, true) == <<1>>
      assert DType.fill_element(:int8, -1) == <<255>>
      assert DType.fill_element(:int32, -2) == <<254, 255, 255, 255>>
      assert DType.fill_element(:uint16, 0x0102) == <<2, 1>>
      assert DType.fill_element(:uint64, 2 ** 64 - 1) == :binary.copy(<<255>>, 8)
      assert DType.fill_element(:int64, -(2 ** 63)) == <<0, 0, 0, 0, 0, 0, 0, 128>>
      assert DType.fill_element(:float64, 1.0) == <<1.0::float-64-little>>
      assert DType.fill_element(:float32, 1.5) == <<1.5::float-32-little>>
      assert DType.fill_element(:float16, 1.0) == <<0x00, 0x3C>>
    end

    test "float specials use the canonical bit patterns" do
      assert bits(:nan, 2) == 0x7E00
      assert bits(:nan, 4) == 0x7FC00000
      assert bits(:nan, 8) == 0x7FF8000000000000
      assert bits(:infinity, 2) == 0x7C00
      assert bits(:neg_infinity, 2) == 0xFC00
      assert bits(:infinity, 4) == 0x7F800000
      assert bits(:neg_infinity, 4) == 0xFF800000
      assert bits(:infinity, 8) == 0x7FF0000000000000
      assert bits(:neg_infinity, 8) == 0xFFF0000000000000
      assert bits({:bits, 0x7FC00001}, 4) == 0x7FC00001
      assert bits(-0.0, 8) == 0x8000000000000000
    end

    test "complex elements are the real part then the imaginary part" do
      assert DType.fill_element(:complex64, {1.0, :nan}) ==
               <<1.0::float-32-little, 0x7FC00000::32-little>>

      assert DType.fill_element(:complex128, {:neg_infinity, 2.0}) ==
               <<0xFFF0000000000000::64-little, 2.0::float-64-little>>
    end

    test "cast_fill" do
      assert DType.cast_fill(:float64, 3) == {:ok, 3.0}
      assert DType.cast_fill(:float32, 0.1) == {:ok, 0.10000000149011612}
      assert DType.cast_fill(:float32, {:bits, 0x7FC00000}) == {:ok, :nan}
      assert DType.cast_fill(:float32, {:bits, 0x3F800000}) == {:ok, 1.0}
      assert DType.cast_fill(:float16, :neg_infinity) == {:ok, :neg_infinity}
      assert DType.cast_fill(:int8, 3.0) == {:ok, 3}
      assert DType.cast_fill(:complex64, {1, :nan}) == {:ok, {1.0, :nan}}
      assert DType.cast_fill(:bool, true) == {:ok, true}
      assert DType.cast_fill(:uint8, nil) == {:ok, nil}

      for {dtype, bad} <- [
            bool: 1,
            int8: 128,
            uint16: -1,
            int32: 0.5,
            float32: "NaN",
            float32: {:bits, 2 ** 32},
            float64: {:bits, -1},
            complex64: {1.0, "x"},
            int64: :nan
          ] do
        assert DType.cast_fill(dtype, bad) == {:error, {:invalid_fill_value, dtype, bad}}
      end
    end
  end

  describe "properties" do
    test "v3 hex bit patterns round trip exactly through decode, encode and fill_element" do
      gen =
        :proper_types.bind(
          :proper_types.elements([2, 4, 8]),
          fn size ->
            :proper_types.bind(
              :proper_types.integer(0, 2 ** (size * 8) - 1),
              &{size, &1},
              false
            )
          end,
          false
        )

      Prop.check(gen, fn {size, n} ->
        dtype = float_type(size)
        hex = "0x" <> String.pad_leading(Integer.to_string(n, 16), size * 2, "0")
        {:ok, value} = DType.decode_fill(dtype, hex, 3)
        encoded = DType.encode_fill(dtype, value, 3)
        {:ok, again} = DType.decode_fill(dtype, encoded, 3)
        bits(value, size) == n and bits(again, size) == n
      end)
    end

    test "NaN and infinity patterns become atoms, payload NaNs keep their bits" do
      gen =
        :proper_types.bind(
          :proper_types.vector(2, :proper_types.integer(0, 2 ** 22 - 1)),
          fn [sign, mant] -> {rem(sign, 2), mant} end,
          false
        )

      Prop.check(gen, fn {sign, mant} ->
        n = sign * 0x80000000 + 0x7F800000 + mant
        {:ok, value} = DType.decode_fill(:float32, "0x" <> Integer.to_string(n, 16), 3)

        case {sign, mant} do
          {0, 0} -> value == :infinity
          {1, 0} -> value == :neg_infinity
          {0, 0x400000} -> value == :nan
          _ -> value == {:bits, n}
        end
      end)
    end

    test "integers round trip in both formats and are range checked" do
      dtypes = Enum.filter(DType.all(), &DType.integer?/1)

      gen =
        :proper_types.bind(
          :proper_types.elements(dtypes),
          fn dtype ->
            {min, max} = DType.int_range(dtype)
            :proper_types.bind(:proper_types.integer(min - 3, max + 3), &{dtype, &1}, false)
          end,
          false
        )

      Prop.check(gen, fn {dtype, n} ->
        {min, max} = DType.int_range(dtype)
        size = DType.itemsize(dtype)

        Enum.all?([2, 3], fn format ->
          case DType.decode_fill(dtype, n, format) do
            {:ok, ^n} ->
              DType.encode_fill(dtype, n, format) == n and
                byte_size(DType.fill_element(dtype, n)) == size and n in min..max

            {:error, _} ->
              n not in min..max
          end
        end)
      end)
    end

    test "finite floats round trip through JSON text" do
      gen =
        :proper_types.bind(
          {:proper_types.elements([:float16, :float32, :float64, :complex64, :complex128]),
           :proper_types.float(), :proper_types.float()},
          & &1,
          false
        )

      Prop.check(gen, fn {dtype, re, im} ->
        {:ok, value} = DType.cast_fill(dtype, if(DType.complex?(dtype), do: {re, im}, else: re))

        Enum.all?([2, 3], fn format ->
          json = DType.encode_fill(dtype, value, format)
          text = ExZarr.JSON.encode([json])
          {:ok, [back]} = ExZarr.JSON.decode(text)

          {:ok, decoded} = DType.decode_fill(dtype, back, format)
          DType.fill_element(dtype, decoded) == DType.fill_element(dtype, value)
        end)
      end)
    end
  end

  # The string, bytes, datetime and structured types (ExZarr.DType.Strings, .Datetime,
  # .Structured) as DType names them and fills them.
  @rec {:structured,
        [
          {"a", :int32, :big, {}},
          {"b", :float64, :little, {2}},
          {"c", {:fixed_bytes, 2}, nil, {}},
          {"d", {:structured, [{"x", :uint8, nil, {}}]}, nil, {}}
        ]}

  @new_types [
    {:fixed_utf32, 1},
    {:fixed_utf32, 7},
    {:fixed_bytes, 3},
    {:raw_bytes, 16},
    {:datetime64, "ns", 1},
    {:datetime64, "D", 7},
    {:timedelta64, "ms", 10},
    {:timedelta64, "Y", 1},
    {:structured, [{"a", :int16, :little, {}}]},
    :string,
    :bytes
  ]

  describe "names" do
    test "v3 names round trip, through JSON too" do
      for dtype <- @new_types do
        json = DType.to_v3(dtype)
        assert DType.from_v3(json) == {:ok, dtype}
        assert DType.from_v3(:jiffy.decode(:jiffy.encode(json), [:return_maps])) == {:ok, dtype}
      end

      assert DType.from_v3("bytes") == {:ok, :bytes}
    end

    test "v2 names round trip in both byte orders" do
      for dtype <- @new_types -- [:string, :bytes], endian <- [:little, :big] do
        json = DType.to_v2(dtype, endian)
        expected = if DType.component_size(dtype) == 1, do: nil, else: endian
        assert DType.from_v2(json) == {:ok, dtype, expected}, inspect(json)
      end

      assert DType.to_v2(@rec, nil) == [
               ["a", ">i4"],
               ["b", "<f8", [2]],
               ["c", "|S2"],
               ["d", [["x", "|u1"]]]
             ]

      assert DType.from_v2(DType.to_v2(@rec, nil)) == {:ok, @rec, nil}
      assert DType.itemsize(@rec) == 4 + 16 + 2 + 1
    end

    test "invalid parameterised types" do
      for bad <- [
            {:fixed_utf32, 0},
            {:raw_bytes, -1},
            {:datetime64, "parsec", 1},
            {:datetime64, "s", 0},
            {:timedelta64, :s, 1},
            {:structured, []},
            {:structured, [{"a", :int8, nil, {}}, {"a", :int8, nil, {}}]},
            {:structured, [{"a", :string, nil, {}}]},
            {:structured, [{"a", :int16, :middle, {}}]},
            {:structured, [{:a, :int8, nil, {}}]}
          ] do
        refute DType.valid?(bad), inspect(bad)
      end

      for json <- [
            %{"name" => "fixed_length_utf32", "configuration" => %{"length_bytes" => 6}},
            %{"name" => "raw_bytes", "configuration" => %{"length_bytes" => 0}},
            %{"name" => "numpy.datetime64", "configuration" => %{"unit" => "s"}},
            %{"name" => "structured", "configuration" => %{"fields" => [["a", "nope"]]}},
            %{"name" => "structured", "configuration" => %{"fields" => "a"}}
          ] do
        assert DType.from_v3(json) == {:error, {:unsupported_dtype, json["name"]}}
      end
    end
  end

  describe "v2 object arrays" do
    defp zarray(dtype, filters, fill \\ "") do
      %{
        "zarr_format" => 2,
        "shape" => [4],
        "chunks" => [2],
        "dtype" => dtype,
        "compressor" => %{"id" => "blosc", "cname" => "lz4", "clevel" => 5, "shuffle" => 1},
        "fill_value" => fill,
        "order" => "C",
        "filters" => filters
      }
    end

    test "the object codec gives the type and becomes the array->bytes codec" do
      {:ok, meta} = ExZarr.Metadata.V2.decode(zarray("|O", [%{"id" => "vlen-utf8"}]))
      assert meta.dtype == :string
      assert Enum.map(meta.codecs, & &1.name) == ["vlen-utf8", "blosc"]

      {:ok, %{zarray: back}} = ExZarr.Metadata.V2.encode(meta)
      assert back["dtype"] == "|O"
      assert back["filters"] == [%{"id" => "vlen-utf8"}]
      assert back["compressor"]["id"] == "blosc"

      {:ok, meta} = ExZarr.Metadata.V2.decode(zarray("|O", [%{"id" => "vlen-bytes"}], "eno="))
      assert {meta.dtype, meta.fill_value} == {:bytes, "zz"}

      {:ok, meta} = ExZarr.Metadata.V2.decode(zarray("|O", [%{"id" => "vlen-utf8"}], :null))

      assert {meta.dtype, meta.fill_value, DType.fill_element(:string, meta.fill_value)} ==
               {:string, nil, ""}
    end

    test "other object codecs and a missing one are unsupported" do
      for filters <- [
            :null,
            [],
            [%{"id" => "json2"}],
            [%{"id" => "pickle"}],
            [%{"id" => "zlib"}, %{"id" => "vlen-utf8"}]
          ] do
        assert {:error, {:unsupported_dtype, "|O" <> _}} =
                 ExZarr.Metadata.V2.decode(zarray("|O", filters))
      end

      assert {:error, _} = ExZarr.Metadata.V2.decode(zarray("<i4", [%{"id" => "vlen-utf8"}], 0))
    end
  end

  describe "fill values" do
    test "as zarr-python writes them" do
      cases = [
        {{:fixed_utf32, 3}, "é", "é"},
        {{:fixed_bytes, 3}, "cQA=", "q\0"},
        {{:raw_bytes, 3}, "AAAA", <<0, 0, 0>>},
        {{:datetime64, "ns", 1}, -9_223_372_036_854_775_808, DType.nat()},
        {{:datetime64, "D", 1}, 10957, 10957},
        {{:structured, [{"a", :int32, :little, {}}, {"b", :float32, :little, {}}]},
         "BwAAAAAAwD8=", <<7::little-32, 1.5::little-float-32>>},
        {:string, "zz", "zz"},
        {:bytes, "eno=", "zz"}
      ]

      for {dtype, json, value} <- cases, format <- [2, 3] do
        assert DType.decode_fill(dtype, json, format) == {:ok, value}
        assert DType.encode_fill(dtype, value, format) == json
      end
    end

    test "integers for strings, as zarr-python 2 wrote them" do
      for format <- [2, 3] do
        assert DType.decode_fill(:string, 0, format) == {:ok, "0"}
        assert DType.decode_fill(:string, -12, format) == {:ok, "-12"}
        assert {:error, _} = DType.decode_fill({:fixed_utf32, 2}, 0, format)
        assert {:error, _} = DType.decode_fill(:string, 1.5, format)
      end
    end

    test "as zarrs writes them: arrays of byte values, in v3" do
      for {dtype, json, value} <- [
            {:bytes, [], ""},
            {:bytes, [1, 2], <<1, 2>>},
            {{:raw_bytes, 3}, [0, 255, 7], <<0, 255, 7>>},
            {{:fixed_bytes, 3}, [113], "q"}
          ] do
        assert DType.decode_fill(dtype, json, 3) == {:ok, value}
        assert {:error, _} = DType.decode_fill(dtype, json, 2)
      end

      for {dtype, json} <- [{:bytes, [256]}, {:bytes, [-1]}, {{:raw_bytes, 1}, [1, 2]}] do
        assert DType.decode_fill(dtype, json, 3) == {:error, {:invalid_fill_value, dtype, json}}
      end
    end

    test "defaults and fill elements" do
      assert DType.default_fill({:fixed_utf32, 2}) == ""
      assert DType.fill_element({:fixed_utf32, 2}, "é") == <<0xE9, 0, 0, 0, 0, 0, 0, 0>>
      assert DType.fill_element({:fixed_bytes, 3}, nil) == <<0, 0, 0>>
      assert DType.fill_element({:datetime64, "s", 1}, nil) == <<0, 0, 0, 0, 0, 0, 0, 0x80>>
      assert DType.fill_element(:string, "abc") == "abc"
      assert DType.encode_fill({:timedelta64, "s", 1}, nil, 3) == DType.nat()
    end

    test "bad fill values are errors" do
      for {dtype, json} <- [
            {{:fixed_utf32, 1}, "ab"},
            {{:fixed_utf32, 1}, 3},
            {{:fixed_bytes, 1}, "YWJj"},
            {{:raw_bytes, 2}, "not base64!"},
            {{:datetime64, "s", 1}, "2020-01-01"},
            {{:datetime64, "s", 1}, 9_223_372_036_854_775_808},
            {:string, <<0xFF>>},
            {:bytes, 1}
          ] do
        assert DType.decode_fill(dtype, json, 3) == {:error, {:invalid_fill_value, dtype, json}}
      end
    end

    test "user fill values" do
      dtype = {:datetime64, "s", 1}
      assert DType.cast_fill(dtype, ~N[1970-01-01 00:01:00]) == {:ok, 60}
      assert DType.cast_fill(dtype, :nat) == {:ok, DType.nat()}
      assert DType.cast_fill({:timedelta64, "s", 1}, ~N[1970-01-01 00:01:00]) |> elem(0) == :error
      assert DType.cast_fill({:fixed_bytes, 2}, "ab") == {:ok, "ab"}
      assert DType.cast_fill({:fixed_bytes, 2}, "abc") |> elem(0) == :error
      assert DType.cast_fill({:raw_bytes, 3}, <<1>>) == {:ok, <<1, 0, 0>>}
      assert DType.decode_fill({:raw_bytes, 3}, "AQ==", 2) == {:ok, <<1, 0, 0>>}
      assert DType.cast_fill(:string, "é") == {:ok, "é"}
    end
  end
end
