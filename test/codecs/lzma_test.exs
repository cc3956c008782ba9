defmodule ExZarr.Codecs.LzmaTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.Lzma

  defp codec(v2_config, decoded_size), do: ExZarr.Test.Codecs.from_v2(v2_config, decoded_size)

  test "lzma refuses headers that ask for a huge dictionary" do
    {lzma, s} = codec(%{"id" => "lzma", "format" => 2, "preset" => 1}, 5)
    {:ok, <<props, _dict::32-little, rest::binary>>} = lzma.encode("hello", s)
    assert {:error, {:lzma, msg}} = lzma.decode(<<props, 0xFFFFFFFF::32-little, rest::binary>>, s)
    assert msg =~ "memory"
  end
end
