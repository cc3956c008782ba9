defmodule ExZarr.DTypes.DTypeTest do
  use ExUnit.Case, async: true

  alias ExZarr.DType
  alias ExZarr.DType.{Datetime, Strings, Structured}
  alias ExZarr.Test.Python

  doctest Strings
  doctest Datetime
  doctest Structured

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
      assert DType.cast_fill(:string, "é") == {:ok, "é"}
    end
  end

  describe "strings" do
    test "pack and unpack" do
      assert Strings.pack(["a\0b", "", "xyz"], {:fixed_bytes, 3}) == {:ok, "a\0b\0\0\0xyz"}
      assert Strings.unpack("a\0b\0\0\0xyz", {:fixed_bytes, 3}) == {:ok, ["a\0b", "", "xyz"]}
      assert Strings.unpack("a\0b\0\0\0", {:raw_bytes, 3}) == {:ok, ["a\0b", <<0, 0, 0>>]}
      assert Strings.pack(["日本"], {:fixed_utf32, 1}) == {:error, {:too_long, "日本", max_chars: 1}}
      assert Strings.pack([<<0xFF>>], {:fixed_utf32, 1}) == {:error, {:invalid_utf8, <<0xFF>>}}
      assert Strings.pack([1], {:raw_bytes, 1}) == {:error, {:not_a_binary, 1}}
      assert Strings.unpack(<<0, 0xD8, 0, 0>>, {:fixed_utf32, 1}) |> elem(0) == :error
      assert Strings.unpack("abc", {:fixed_utf32, 1}) |> elem(0) == :error
    end
  end

  describe "structured" do
    test "fields out of records, records out of fields" do
      records =
        for {a, b1, b2, c, x} <- [{1, 1.5, 2.5, "hi", 7}, {-2, 0.0, -1.0, "", 255}], into: <<>> do
          <<a::big-signed-32, b1::little-float-64, b2::little-float-64, c::binary,
            0::size((2 - byte_size(c)) * 8), x>>
        end

      assert Structured.field(records, @rec, "a") == {:ok, <<1::little-32, -2::little-signed-32>>}

      assert Structured.field(records, @rec, "b") ==
               {:ok,
                <<1.5::little-float-64, 2.5::little-float-64, 0.0::little-float-64,
                  -1.0::little-float-64>>}

      assert Structured.field(records, @rec, "c") == {:ok, "hi\0\0"}
      assert Structured.field(records, @rec, "d") == {:ok, <<7, 255>>}
      assert Structured.field(records, @rec, "zz") == {:error, {:unknown_field, "zz"}}
      assert {:error, {:wrong_data_size, _}} = Structured.field("abc", @rec, "a")
      assert Structured.field(<<>>, @rec, "b") == {:ok, <<>>}

      columns =
        for name <- ["a", "b", "c", "d"], into: %{} do
          {:ok, col} = Structured.field(records, @rec, name)
          {name, col}
        end

      assert Structured.from_fields(@rec, columns) == {:ok, records}

      assert {:error, {:field_lengths_differ, _}} =
               Structured.from_fields(@rec, %{columns | "d" => <<1>>})

      assert {:error, {:unknown_field, "q"}} = Structured.from_fields(@rec, %{"q" => <<>>})
    end
  end

  describe "datetimes" do
    test "conversions agree with numpy" do
      values = [0, 1, -1, 86_399, 1_577_836_800_123, -62_135_596_800_000, DType.nat()]

      units = [
        {"ms", 1},
        {"s", 1},
        {"us", 3},
        {"ns", 1},
        {"m", 1},
        {"h", 5},
        {"D", 1},
        {"W", 1},
        {"M", 1},
        {"Y", 1}
      ]

      code = """
      import sys, json, numpy as np
      out = []
      for u in json.loads(sys.argv[1]):
          for v in json.loads(sys.argv[2]):
              d = np.array([v], dtype=f"M8[{u}]")
              try:
                  out.append(np.datetime_as_string(d.astype("M8[us]"))[0])
              except Exception:
                  out.append(None)
      print(json.dumps(out))
      """

      unit_names = Enum.map(units, fn {u, s} -> if s == 1, do: u, else: "#{s}#{u}" end)
      {:ok, out} = Python.run(code, [:jiffy.encode(unit_names), :jiffy.encode(values)])
      numpy = out |> String.trim() |> :jiffy.decode()

      ours =
        for {unit, scale} <- units, v <- values do
          case Datetime.to_naive(v, {:datetime64, unit, scale}) do
            {:ok, nil} -> "NaT"
            {:ok, naive} -> naive |> NaiveDateTime.truncate(:microsecond) |> iso_us()
            {:error, {:out_of_range, _}} -> :out_of_range
          end
        end

      pairs = Enum.zip(numpy, ours)
      assert length(pairs) == length(units) * length(values)

      # Where numpy gives a date in years 1..9999 we give the same; outside them (numpy's
      # int64 overflow or years Elixir's calendar does not handle) we give an error.
      for {n, o} <- pairs do
        if is_binary(n) and n != "NaT" and year_in_range?(n),
          do: assert(n == o),
          else: assert(o in [n, :out_of_range], inspect({n, o}))
      end
    end

    test "to and from Elixir values floor to the unit and keep NaT" do
      dtype = {:datetime64, "ms", 1}
      assert Datetime.from_datetime(~N[1969-12-31 23:59:59.9995], dtype) == {:ok, -1}
      assert Datetime.from_datetime(~U[2000-01-01 00:00:00Z], {:datetime64, "M", 1}) == {:ok, 360}
      assert Datetime.from_datetime(nil, dtype) == {:ok, DType.nat()}
      assert Datetime.to_datetime(DType.nat(), dtype) == {:ok, nil}

      assert Datetime.to_naive(-1, {:datetime64, "ns", 1}) ==
               {:ok, ~N[1969-12-31 23:59:59.999999]}

      assert {:error, {:out_of_range, _}} = Datetime.to_naive(10 ** 15, {:datetime64, "D", 1})

      assert {:error, {:out_of_range, _}} =
               Datetime.from_datetime(~N[2300-01-01 00:00:00], {:datetime64, "ns", 1})

      {:ok, packed} = Datetime.pack([~N[2020-01-01 00:00:00], nil, 5], dtype)

      assert Datetime.unpack(packed, dtype, as: :integer) ==
               {:ok, [1_577_836_800_000, DType.nat(), 5]}

      assert Datetime.unpack(packed, dtype, as: :datetime) |> elem(1) |> hd() ==
               ~U[2020-01-01 00:00:00.000Z]

      assert {:error, {:invalid_value, "x"}} = Datetime.pack(["x"], dtype)
      assert {:error, {:wrong_data_size, _}} = Datetime.unpack("abc", dtype)

      td = {:timedelta64, "us", 250}
      assert Datetime.timedelta_to(-3, td, :millisecond) == {:ok, -1}
      assert Datetime.timedelta_from(1, :millisecond, td) == {:ok, 4}
      assert Datetime.timedelta_to(DType.nat(), td, :second) == {:ok, nil}

      assert Datetime.timedelta_to(1, {:timedelta64, "M", 1}, :second) ==
               {:error, {:calendar_unit, "M"}}
    end
  end

  defp iso_us(naive) do
    {us, _} = naive.microsecond
    naive |> Map.put(:microsecond, {us, 6}) |> NaiveDateTime.to_iso8601()
  end

  defp year_in_range?(iso) do
    case Integer.parse(iso) do
      {year, "-" <> _} -> year >= 1 and year <= 9999
      _ -> false
    end
  end
end
