defmodule ExZarr.Codecs.Bz2Test do
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.Bz2

  defp codec(v2_config, decoded_size), do: ExZarr.Test.Codecs.from_v2(v2_config, decoded_size)

  test "concatenated bz2 streams decode as one, as Python does" do
    {bz2, b6} = codec(%{"id" => "bz2"}, 6)
    {:ok, abc} = bz2.encode("abc", b6)
    {:ok, def} = bz2.encode("def", b6)
    assert bz2.decode(abc <> def, b6) == {:ok, "abcdef"}
    assert {:error, _} = bz2.decode(abc <> "junk", b6)
  end
end
