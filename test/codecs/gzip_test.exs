defmodule ExZarr.Codecs.GzipTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.Gzip

  defp codec(v2_config, decoded_size), do: ExZarr.Test.Codecs.from_v2(v2_config, decoded_size)

  test "concatenated gzip members decode as one, as Python does" do
    {gzip, s6} = codec(%{"id" => "gzip"}, 6)
    {_, unknown} = codec(%{"id" => "gzip"}, nil)
    two = IO.iodata_to_binary([:zlib.gzip("abc"), <<0, 0>>, :zlib.gzip("def")])
    assert gzip.decode(two, s6) == {:ok, "abcdef"}
    assert gzip.decode(two, unknown) == {:ok, "abcdef"}
    assert {:error, _} = gzip.decode(:zlib.gzip("abc") <> "junk", unknown)
  end
end
