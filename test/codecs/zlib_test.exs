defmodule ExZarr.Codecs.ZlibTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.Zlib

  defp codec(v2_config, decoded_size), do: ExZarr.Test.Codecs.from_v2(v2_config, decoded_size)

  test "a zlib stream decodes; bytes after its end are an error" do
    {zlib, z3} = codec(%{"id" => "zlib"}, 3)
    assert zlib.decode(:zlib.compress("abc"), z3) == {:ok, "abc"}
    assert {:error, _} = zlib.decode(:zlib.compress("abc") <> "x", z3)
  end
end
