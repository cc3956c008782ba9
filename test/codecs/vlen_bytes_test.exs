defmodule ExZarr.Codecs.VlenBytesTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.VlenBytes

  alias ExZarr.Codecs.VlenBytes

  defp spec(dtype), do: %{shape: {1}, dtype: dtype, fill_value: "", decoded_size: nil}

  test "takes any bytes, but only binaries" do
    {:ok, b} = VlenBytes.init(%{}, spec(:bytes))
    bad_utf8 = ExZarr.Test.Codecs.vlen_layout([<<0xFF>>])
    assert {:ok, {<<0xFF>>}} = VlenBytes.decode(bad_utf8, b)
    assert {:error, {:invalid_item, 0, nil}} = VlenBytes.encode([nil], b)
  end

  test "takes only the bytes type and no configuration" do
    assert {:error, {:unsupported_codec, _}} = VlenBytes.init(%{}, spec(:int8))

    assert {:error, {:invalid_codec_config, "vlen-bytes", {:unknown_key, "x"}}} =
             ExZarr.Codec.Pipeline.new(
               [%{name: "vlen-bytes", configuration: %{"x" => 1}}],
               spec(:bytes)
             )
  end
end
