defmodule ExZarr.Codecs.VlenUtf8Test do
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.VlenUtf8

  alias ExZarr.Codecs.VlenUtf8

  defp spec(dtype), do: %{shape: {1}, dtype: dtype, fill_value: "", decoded_size: nil}

  test "checks UTF-8 both ways" do
    {:ok, s} = VlenUtf8.init(%{}, spec(:string))
    bad = ExZarr.Test.Codecs.vlen_layout([<<0xFF>>])
    assert {:error, {:invalid_utf8, <<0xFF>>}} = VlenUtf8.decode(bad, s)
    assert {:error, {:invalid_item, 0, <<0xFF>>}} = VlenUtf8.encode([<<0xFF>>], s)

    {:ok, encoded} = VlenUtf8.encode(["é"], s)
    assert VlenUtf8.decode(IO.iodata_to_binary(encoded), s) == {:ok, {"é"}}
  end

  test "takes only strings and no configuration" do
    assert {:error, {:unsupported_codec, _}} = VlenUtf8.init(%{}, spec(:bytes))

    assert {:error, {:invalid_codec_config, "vlen-utf8", {:unknown_key, "x"}}} =
             ExZarr.Codec.Pipeline.new(
               [%{name: "vlen-utf8", configuration: %{"x" => 1}}],
               spec(:string)
             )
  end
end
