defmodule ExZarr.Codecs.Lz4Test do
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.Lz4

  import ExZarr.Test.Codecs, only: [round_trip: 3]
  alias ExZarr.Codecs.Lz4

  test "a little-endian decoded length, then one LZ4 block" do
    {:ok, s} = Lz4.init(%{}, %{decoded_size: nil})
    data = :binary.copy("hello ", 100)
    {encoded, decoded} = round_trip(Lz4, s, data)
    assert <<600::32-little, block::binary>> = encoded
    assert byte_size(block) < 600
    assert decoded == {:ok, data}
  end

  test "any acceleration gives data that decodes the same" do
    data = :crypto.strong_rand_bytes(1000) <> :binary.copy(<<0>>, 3000)

    for acceleration <- [1, 20, 65_537] do
      {:ok, s} = Lz4.init(%{"acceleration" => acceleration}, %{decoded_size: 4000})
      assert {_, {:ok, ^data}} = round_trip(Lz4, s, data)
    end
  end

  test "a header that claims more than the chunk holds is refused before decoding" do
    {:ok, big} = Lz4.init(%{}, %{decoded_size: nil})
    {:ok, <<_::32, block::binary>>} = Lz4.encode(:binary.copy("a", 100), big)
    {:ok, s} = Lz4.init(%{}, %{decoded_size: 100})
    assert {:error, _} = Lz4.decode(<<101::32-little, block::binary>>, s)
    assert {:error, _} = Lz4.decode(<<100::32-little, binary_part(block, 0, 3)::binary>>, s)
    assert {:error, _} = Lz4.decode(<<1, 2>>, s)
  end
end
