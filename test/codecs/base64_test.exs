defmodule ExZarr.Codecs.Base64Test do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [from_v2: 2, round_trip: 3]
  alias ExZarr.Codecs.Base64

  doctest Base64

  test "Python's standard_b64encode: the standard alphabet, = padding, no line breaks" do
    for {bytes, text} <- [
          {"", ""},
          {"f", "Zg=="},
          {"fo", "Zm8="},
          {"foo", "Zm9v"},
          {<<0xFB, 0xFF, 0xBF>>, "+/+/"},
          {:binary.copy(<<0>>, 100), String.duplicate("AAAA", 33) <> "AA=="}
        ] do
      {Base64, s} = from_v2(%{"id" => "base64"}, byte_size(bytes))
      assert round_trip(Base64, s, bytes) == {text, {:ok, bytes}}
    end
  end

  test "whitespace is skipped; anything else outside the alphabet or a wrong padding is an error" do
    {Base64, s} = from_v2(%{"id" => "base64"}, 3)
    assert Base64.decode("Zm\n9v ", s) == {:ok, "foo"}

    for bad <- ["Zm9", "Zm-v", "Zm9v=", "Z===", <<0xFF, "m9v">>] do
      assert Base64.decode(bad, s) == {:error, {:base64, :invalid}}, inspect(bad)
    end
  end

  test "the decoded size must be the chunk's, or at most the bound when it is not known" do
    {Base64, s} = from_v2(%{"id" => "base64"}, 3)
    assert Base64.decode("Zm8=", s) == {:error, {:base64, {:decoded_size, 2, 3}}}
    assert Base64.decode("Zm9vYg==", s) == {:error, {:base64, {:decoded_size, 4, 3}}}

    {Base64, s} = from_v2(%{"id" => "base64"}, nil)
    assert Base64.decode("Zm8=", s) == {:ok, "fo"}
  end

  test "takes no configuration key, in v2 and v3" do
    assert {:error, {:invalid_codec_config, _, {:unknown_key, "level"}}} =
             ExZarr.create(shape: {4}, dtype: :uint8, compressor: %{id: "base64", level: 1})

    codecs = [%{name: "bytes"}, %{name: "numcodecs.base64"}]
    {:ok, a} = ExZarr.create(shape: {4}, chunks: {4}, dtype: :uint8, codecs: codecs)
    :ok = ExZarr.Array.set_slice(a, <<1, 2, 3, 4>>)
    assert ExZarr.Storage.get(a.storage, "c/0") == {:ok, "AQIDBA=="}
    assert ExZarr.Array.get_slice(a) == {:ok, <<1, 2, 3, 4>>}
  end
end
