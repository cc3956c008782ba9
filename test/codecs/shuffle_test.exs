defmodule ExZarr.Codecs.ShuffleTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [round_trip: 3]
  alias ExZarr.Codecs.Shuffle

  test "the k-th bytes of all elements together" do
    {:ok, s} = Shuffle.init(%{"elementsize" => 4}, %{decoded_size: nil})
    {encoded, decoded} = round_trip(Shuffle, s, "abcdABCD")
    assert encoded == "aAbBcCdD"
    assert decoded == {:ok, "abcdABCD"}
    assert Shuffle.encoded_size(8, s) == 8
  end

  test "the element size defaults to the chunk's, else 4" do
    {:ok, s} = Shuffle.init(%{}, %{decoded_size: nil, dtype: :int16})
    assert Shuffle.configuration(s)["elementsize"] == 2
    {:ok, s} = Shuffle.init(%{}, %{decoded_size: nil})
    assert Shuffle.configuration(s)["elementsize"] == 4
  end

  test "bad element sizes and inputs that are not whole elements are errors" do
    assert {:error, _} = Shuffle.init(%{"elementsize" => -1}, %{decoded_size: nil})
    {:ok, s} = Shuffle.init(%{"elementsize" => 4}, %{decoded_size: nil})
    assert {:error, {:shuffle, _}} = Shuffle.decode("abcde", s)
  end
end
