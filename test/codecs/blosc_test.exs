defmodule ExZarr.Codecs.BloscTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [round_trip: 3]
  alias ExZarr.Codecs.Blosc

  doctest Blosc

  @data for i <- 1..2000, into: <<>>, do: <<i::64-little>>

  test "every compressor and shuffle round-trips" do
    for cname <- ~w(blosclz lz4 lz4hc zlib zstd), shuffle <- ~w(noshuffle shuffle bitshuffle) do
      config = %{"cname" => cname, "shuffle" => shuffle, "typesize" => 8, "clevel" => 5}
      {:ok, s} = Blosc.init(config, %{decoded_size: byte_size(@data)})
      {encoded, decoded} = round_trip(Blosc, s, @data)
      assert decoded == {:ok, @data}, inspect(config)
      assert byte_size(encoded) < byte_size(@data)
    end
  end

  test "defaults: zstd, level 5, shuffle by the element size" do
    {:ok, s} = Blosc.init(%{}, %{decoded_size: nil, dtype: :int32})

    assert %{"cname" => "zstd", "clevel" => 5, "shuffle" => "shuffle", "typesize" => 4} =
             Blosc.configuration(s)

    {:ok, s} = Blosc.init(%{}, %{decoded_size: nil, dtype: :uint8})
    assert %{"shuffle" => "bitshuffle", "typesize" => 1} = Blosc.configuration(s)
  end

  test "out-of-range settings are refused at init" do
    for bad <- [
          %{"cname" => "brotli"},
          %{"clevel" => 10},
          %{"shuffle" => "twice"},
          %{"typesize" => 0},
          %{"blocksize" => -1}
        ] do
      assert {:error, _} = Blosc.init(bad, %{decoded_size: nil}), inspect(bad)
    end
  end

  test "a header lying about sizes is an error before c-blosc runs" do
    {:ok, s} = Blosc.init(%{"cname" => "lz4", "typesize" => 8}, %{decoded_size: byte_size(@data)})
    {:ok, encoded} = Blosc.encode(@data, s)
    encoded = IO.iodata_to_binary(encoded)
    <<head::binary-size(4), _nbytes::32-little, rest::binary>> = encoded
    assert {:error, _} = Blosc.decode(<<head::binary, 0x7FFFFFFF::32-little, rest::binary>>, s)
    assert {:error, _} = Blosc.decode(binary_part(encoded, 0, 10), s)
    assert {:error, _} = Blosc.decode(binary_part(encoded, 0, byte_size(encoded) - 1), s)
  end
end
