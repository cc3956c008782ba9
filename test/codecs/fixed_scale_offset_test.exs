defmodule ExZarr.Codecs.FixedScaleOffsetTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [spec: 2, round_trip: 3]
  alias ExZarr.Codecs.FixedScaleOffset

  defp f64(list), do: for(x <- list, into: <<>>, do: <<x::float-64-little>>)

  test "round((x - offset) * scale) half to even, decoded as x / scale + offset" do
    config = %{"offset" => 1000, "scale" => 10, "dtype" => "<f8", "astype" => "|u1"}
    {:ok, s} = FixedScaleOffset.init(config, spec({4}, :float64))

    {encoded, {:ok, decoded}} =
      round_trip(FixedScaleOffset, s, f64([1000.0, 1001.06, 1000.25, 1000.35]))

    assert encoded == <<0, 11, 2, 4>>
    assert decoded == f64([1000.0, 1001.1, 1000.2, 1000.4])
  end

  test "offset and scale must be numbers and the dtype the chunk's" do
    assert {:error, _} =
             FixedScaleOffset.init(%{"dtype" => "<f8", "scale" => 1}, spec({1}, :float64))

    assert {:error, _} =
             FixedScaleOffset.init(%{"offset" => "a", "scale" => 1}, spec({1}, :float64))

    assert {:error, _} =
             FixedScaleOffset.init(
               %{"offset" => 0, "scale" => 1, "dtype" => "<f4"},
               spec({1}, :float64)
             )
  end
end
