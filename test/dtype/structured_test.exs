defmodule ExZarr.DType.StructuredTest do
  use ExUnit.Case, async: true

  alias ExZarr.DType.Structured

  doctest Structured

  @rec {:structured,
        [
          {"a", :int32, :big, {}},
          {"b", :float64, :little, {2}},
          {"c", {:fixed_bytes, 2}, nil, {}},
          {"d", {:structured, [{"x", :uint8, nil, {}}]}, nil, {}}
        ]}

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
end
