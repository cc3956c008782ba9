defmodule ExZarr.DType.StringsTest do
  use ExUnit.Case, async: true

  alias ExZarr.DType.Strings

  doctest Strings

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
end
