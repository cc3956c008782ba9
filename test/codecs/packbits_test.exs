defmodule ExZarr.Codecs.PackbitsTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [spec: 2, round_trip: 3]
  alias ExZarr.Codecs.Packbits

  test "the padding count, then eight booleans per byte, most significant bit first" do
    for n <- [1, 7, 8, 9, 17] do
      {:ok, s} = Packbits.init(%{}, spec({n}, :bool))
      bools = for i <- 1..n, into: <<>>, do: <<rem(i * 7, 3) |> min(1)>>
      {encoded, decoded} = round_trip(Packbits, s, bools)
      padding = rem(8 - rem(n, 8), 8)
      bits = for <<b <- bools>>, into: <<>>, do: <<b::1>>
      assert encoded == <<padding, bits::bitstring, 0::size(padding)>>
      assert decoded == {:ok, bools}
      assert %{shape: {size}, dtype: :uint8} = Packbits.resolve_spec(spec({n}, :bool), s)
      assert size == byte_size(encoded)
    end
  end

  test "only booleans; a wrong padding count or length is an error" do
    assert {:error, {:unsupported_dtype, :uint8}} = Packbits.init(%{}, spec({4}, :uint8))
    {:ok, s} = Packbits.init(%{}, spec({10}, :bool))
    assert {:error, {:packbits, _}} = Packbits.decode(<<9, 0, 0>>, s)
    assert {:error, {:packbits, _}} = Packbits.decode(<<6, 0>>, s)
  end
end
