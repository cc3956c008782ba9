defmodule ExZarr.Codecs.VlenLayoutTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codecs.VlenLayout

  doctest VlenLayout

  test "encodes the numcodecs layout" do
    assert IO.iodata_to_binary(VlenLayout.encode(["a", "bc", ""])) ==
             <<3::little-32, 1::little-32, "a", 2::little-32, "bc", 0::little-32>>

    assert IO.iodata_to_binary(VlenLayout.encode([])) == <<0, 0, 0, 0>>
  end

  test "decoded items are sub-binaries of the chunk" do
    chunk = IO.iodata_to_binary(VlenLayout.encode([String.duplicate("x", 100)]))
    {:ok, {item}} = VlenLayout.decode(chunk, 1)
    assert :binary.referenced_byte_size(item) == byte_size(chunk)
  end

  test "corrupt layouts are errors" do
    good = IO.iodata_to_binary(VlenLayout.encode(["ab", "c"]))

    assert VlenLayout.decode(good, 2) == {:ok, {"ab", "c"}}
    assert {:error, {:wrong_item_count, expected: 3, got: 2}} = VlenLayout.decode(good, 3)
    assert {:error, {:truncated, _}} = VlenLayout.decode(<<2, 0, 0>>, 2)
    assert {:error, {:truncated, _}} = VlenLayout.decode(binary_part(good, 0, 12), 2)
    assert {:error, {:trailing_bytes, 1}} = VlenLayout.decode(good <> "!", 2)
    # a length that runs past the end of the chunk
    lying = <<1::little-32, 1000::little-32, "abc">>
    assert {:error, {:truncated, item: 0}} = VlenLayout.decode(lying, 1)
    # a count that cannot fit: rejected before walking
    huge = <<0xFFFFFFFF::little-32, 0::little-32>>
    assert {:error, {:truncated, item_count: _}} = VlenLayout.decode(huge, 0xFFFFFFFF)
  end

  test "every cut or corruption of a layout is an error or the layout's own items" do
    :rand.seed(:exsss, {7, 7, 7})

    for _ <- 1..300 do
      items = for _ <- 1..:rand.uniform(6), do: :crypto.strong_rand_bytes(:rand.uniform(5) - 1)
      good = VlenLayout.encode(items)
      at = :rand.uniform(byte_size(good)) - 1
      <<head::binary-size(at), byte, tail::binary>> = good

      for bad <- [
            binary_part(good, 0, at),
            head <> <<Bitwise.bxor(byte, :rand.uniform(255))>> <> tail,
            good <> :binary.copy(<<0>>, :rand.uniform(3))
          ],
          expected <- [length(items), length(items) + 1] do
        case VlenLayout.decode(bad, expected) do
          {:ok, decoded} ->
            assert IO.iodata_to_binary(VlenLayout.encode(Tuple.to_list(decoded))) == bad
            assert tuple_size(decoded) == expected

          {:error, _why} ->
            assert ExZarr.Native.vlen_split(bad, expected, false) == {:error, :malformed_layout}
        end
      end
    end
  end

  test "the native UTF-8 check agrees with String.valid? on any bytes" do
    :rand.seed(:exsss, {8, 8, 8})
    # lead bytes, continuation bytes and the edges around them
    bytes =
      [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF] ++
        [0xE0, 0xED, 0xEE, 0xEF, 0xF0, 0xF3, 0xF4, 0xF5, 0xFF]

    items =
      for _ <- 1..3000 do
        for _ <- 1..:rand.uniform(6), into: <<>>, do: <<Enum.random(bytes)>>
      end ++ ["", "ascii", "é", "€", "😀", <<0xED, 0xA0, 0x80>>, <<0xF4, 0x90, 0x80, 0x80>>]

    for item <- items do
      layout = VlenLayout.encode([item])
      native = match?({:ok, _}, ExZarr.Native.vlen_split(layout, 1, true))
      assert native == String.valid?(item), "#{inspect(item)}"
    end
  end

  test "an item that is not UTF-8 is named in the error of a utf8 decode" do
    layout = VlenLayout.encode(["ok", <<0xC0, 0x80>>, "fine"])
    assert VlenLayout.decode(layout, 3, true) == {:error, {:invalid_utf8, <<0xC0, 0x80>>}}
    assert {:ok, {"ok", <<0xC0, 0x80>>, "fine"}} = VlenLayout.decode(layout, 3)
  end
end
