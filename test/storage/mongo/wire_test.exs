defmodule ExZarr.Storage.Mongo.WireTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Mongo.{BSON, Wire}

  doctest Wire

  describe "OP_MSG replies" do
    defp body(doc), do: IO.iodata_to_binary(BSON.encode(doc))

    test "document sequences are skipped, a checksum is ignored" do
      sequence =
        <<1, 4 + 5 + byte_size(body(%{"x" => 1}))::little-32, "docs", 0>> <> body(%{"x" => 1})

      assert Wire.decode_body(<<0::32>> <> sequence <> <<0>> <> body(%{"ok" => 1})) ==
               {:ok, %{"ok" => 1}}

      assert Wire.decode_body(<<1::little-32, 0>> <> body(%{"ok" => 1}) <> <<1, 2, 3, 4>>) ==
               {:ok, %{"ok" => 1}}
    end

    test "malformed replies are protocol errors" do
      ok = body(%{"ok" => 1})

      for {bytes, what} <- [
            {<<0::32>>, :no_body},
            {<<0, 0>>, :truncated},
            {<<2::little-32, 0>> <> ok, :more_to_come},
            {<<0::32, 0>> <> ok <> <<0>> <> ok, :bad_section},
            {<<0::32, 7>> <> ok, :bad_section},
            {<<0::32, 1, 200::little-32, "x">>, :bad_section}
          ] do
        assert Wire.decode_body(bytes) == {:error, {:protocol, what}}, inspect(bytes)
      end

      assert {:error, {:protocol, {:invalid_bson, _}}} = Wire.decode_body(<<0::32, 0, 1, 2, 3>>)
      assert Wire.header(<<3::little-32, 0::96>>) == {:error, {:protocol, :bad_header}}
    end
  end
end
