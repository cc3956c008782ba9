defmodule ExZarr.Codecs.DeltaTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [spec: 2, round_trip: 3]
  alias ExZarr.Codecs.Delta

  defp ints(list, bits), do: for(i <- list, into: <<>>, do: <<i::signed-little-size(bits)>>)

  test "the first element, then differences; decoding is the running sum" do
    {:ok, s} = Delta.init(%{"dtype" => "<i4"}, spec({4}, :int32))
    {encoded, decoded} = round_trip(Delta, s, ints([10, 11, 13, 7], 32))
    assert encoded == ints([10, 1, 2, -6], 32)
    assert decoded == {:ok, ints([10, 11, 13, 7], 32)}
  end

  test "differences stored in a narrower type wrap as numpy's do" do
    {:ok, s} = Delta.init(%{"dtype" => "<i4", "astype" => "<i1"}, spec({3}, :int32))
    {encoded, decoded} = round_trip(Delta, s, ints([10, 11, 13], 32))
    assert encoded == <<10, 1, 2>>
    assert decoded == {:ok, ints([10, 11, 13], 32)}
    assert Delta.resolve_spec(spec({3}, :int32), s).dtype == :int8
    # numpy names one-byte types without a byte order
    assert Delta.configuration(s) == %{"dtype" => "<i4", "astype" => "|i1"}
  end

  test "the dtype must be the chunk's, a number type" do
    assert {:error, _} = Delta.init(%{"dtype" => "<i4"}, spec({3}, :int16))
    assert {:error, _} = Delta.init(%{"dtype" => "|b1"}, spec({3}, :bool))
    {:ok, s} = Delta.init(%{"dtype" => "<i4"}, spec({2}, :int32))
    assert {:error, {:delta, _}} = Delta.decode("abcde", s)
  end
end
