defmodule ExZarr.Codecs.BitroundTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [spec: 2, round_trip: 3]
  alias ExZarr.Codecs.Bitround

  defp f32(list), do: for(x <- list, into: <<>>, do: <<x::float-32-little>>)

  test "keeps keepbits of the mantissa, rounding half to even; decoding is the identity" do
    {:ok, s} = Bitround.init(%{"keepbits" => 2}, spec({3}, :float32))
    # 1.3 = 1.0100110..b -> 1.01b; 1.375 = 1.011b is a tie -> 1.10b; 1.125 = 1.001b -> 1.00b
    {encoded, decoded} = round_trip(Bitround, s, f32([1.3, 1.375, 1.125]))
    assert encoded == f32([1.25, 1.5, 1.0])
    assert decoded == {:ok, encoded}
  end

  test "all mantissa bits keep the data as it is" do
    {:ok, s} = Bitround.init(%{"keepbits" => 23}, spec({2}, :float32))
    data = f32([1.3, -7.1])
    assert {^data, _} = round_trip(Bitround, s, data)
  end

  test "keepbits within the mantissa of a float type" do
    assert {:error, _} = Bitround.init(%{"keepbits" => 24}, spec({1}, :float32))
    assert {:error, _} = Bitround.init(%{"keepbits" => -1}, spec({1}, :float64))
    assert {:error, _} = Bitround.init(%{"keepbits" => 3}, spec({1}, :int32))
    assert {:ok, _} = Bitround.init(%{"keepbits" => 52}, spec({1}, :float64))
  end
end
