defmodule ExZarr.Codecs.BytesTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codecs.Bytes

  defp init(config, dtype, shape \\ {3}),
    do: Bytes.init(config, %{shape: shape, dtype: dtype, fill_value: 0, decoded_size: nil})

  test "big-endian elements are byte-swapped per element, both ways" do
    for {dtype, element, swapped, unit} <- [
          {:uint16, <<1, 2>>, <<2, 1>>, 2},
          {:int32, <<1, 2, 3, 4>>, <<4, 3, 2, 1>>, 4},
          {:float64, <<1, 2, 3, 4, 5, 6, 7, 8>>, <<8, 7, 6, 5, 4, 3, 2, 1>>, 8},
          # complex numbers swap each of their two parts
          {:complex64, <<1, 2, 3, 4, 5, 6, 7, 8>>, <<4, 3, 2, 1, 8, 7, 6, 5>>, 4}
        ] do
      {:ok, s} = init(%{"endian" => "big"}, dtype)
      data = :binary.copy(element, 3)
      assert {:ok, encoded} = Bytes.encode(data, s)
      assert IO.iodata_to_binary(encoded) == :binary.copy(swapped, 3)
      assert Bytes.decode(IO.iodata_to_binary(encoded), s) == {:ok, data}

      assert Bytes.native_decoder(s) == {:raw, unit}
    end
  end

  test "little-endian data and one-byte types pass through without a copy" do
    {:ok, s} = init(%{"endian" => "little"}, :int16)
    data = <<1, 0, 2, 0, 3, 0>>
    assert Bytes.encode(data, s) == {:ok, data}
    assert Bytes.native_decoder(s) == :raw

    {:ok, one} = init(%{}, :uint8)
    assert Bytes.decode("abc", one) == {:ok, "abc"}
    assert Bytes.configuration(one) == %{}
    assert Bytes.configuration(s) == %{"endian" => "little"}
  end

  test "decoding checks the stored size is the chunk's" do
    {:ok, s} = init(%{"endian" => "little"}, :int16)
    assert Bytes.decode(<<1, 2, 3>>, s) == {:error, {:wrong_chunk_size, expected: 6, got: 3}}
    assert Bytes.decode(<<>>, s) == {:error, {:wrong_chunk_size, expected: 6, got: 0}}
  end

  test "the endian is required for multi-byte types and must be little or big" do
    assert init(%{}, :int16) == {:error, {:missing_key, "endian"}}
    assert {:error, _} = init(%{"endian" => "middle"}, :int16)
    assert {:error, _} = init(%{"endian" => 1}, :uint8)
  end

  test "a chunk over the byte limit is refused at init" do
    assert {:error, {:too_large, :chunk, _, _}} =
             init(%{"endian" => "little"}, :float64, {Bitwise.bsl(1, 40)})
  end
end
