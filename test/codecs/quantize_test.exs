defmodule ExZarr.Codecs.QuantizeTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [spec: 2, round_trip: 3]
  alias ExZarr.Codecs.Quantize

  defp f64(list), do: for(x <- list, into: <<>>, do: <<x::float-64-little>>)

  test "rounds to a power-of-two grid fine enough for the digits" do
    {:ok, s} = Quantize.init(%{"digits" => 1, "dtype" => "<f8"}, spec({3}, :float64))
    # 10^-1 needs a grid of 2^-4 = 0.0625 (the first power of two below 0.1)
    {encoded, decoded} = round_trip(Quantize, s, f64([0.11, 1.0, -0.3]))
    assert encoded == f64([0.125, 1.0, -0.3125])
    assert decoded == {:ok, encoded}
  end

  test "stored as astype, read back as dtype" do
    config = %{"digits" => 2, "dtype" => "<f8", "astype" => "<f4"}
    {:ok, s} = Quantize.init(config, spec({1}, :float64))
    {encoded, {:ok, decoded}} = round_trip(Quantize, s, f64([0.5]))
    assert encoded == <<0.5::float-32-little>>
    assert decoded == f64([0.5])
  end

  test "a float dtype and digits are required" do
    assert {:error, _} = Quantize.init(%{"digits" => 2}, spec({1}, :int32))
    assert {:error, _} = Quantize.init(%{"dtype" => "<f8"}, spec({1}, :float64))
  end
end
