defmodule ExZarr.Codecs.VlenLayoutTest do
  use ExUnit.Case, async: true

  import ExZarr.Test.Codecs, only: [vlen_layout: 1]

  alias ExZarr.Codecs.VlenLayout

  doctest VlenLayout

  test "encodes the numcodecs layout" do
    assert vlen_layout(["a", "bc", ""]) ==
             <<3::little-32, 1::little-32, "a", 2::little-32, "bc", 0::little-32>>

    assert vlen_layout([]) == <<0, 0, 0, 0>>
  end

  test "items are joined natively, from a list or a tuple, on the caller's scheduler or a dirty one" do
    :rand.seed(:exsss, {9, 9, 9})

    # 40,000 items, or one item of 600 KB, take the walk to a dirty scheduler
    for n <- [0, 1, 7, 40_000], big? <- [false, true] do
      items = for _ <- 1..n//1, do: :crypto.strong_rand_bytes(:rand.uniform(5) - 1)
      items = if big? and n > 0, do: [:binary.copy("x", 600_000) | tl(items)], else: items

      layout =
        for item <- items,
            into: <<n::little-32>>,
            do: <<byte_size(item)::little-32, item::binary>>

      assert VlenLayout.encode(items, n, false) == {:ok, layout}
      assert VlenLayout.encode(List.to_tuple(items), n, false) == {:ok, layout}
      assert VlenLayout.check_items(items, n, false) == :ok

      utf8 =
        case Enum.find_index(items, &(not String.valid?(&1))) do
          nil -> :ok
          i -> {:error, {:invalid_item, i, Enum.at(items, i)}}
        end

      assert VlenLayout.check_items(items, n, true) == utf8
    end
  end

  test "bad items are named, on the caller's scheduler or a dirty one" do
    for n <- [3, 40_000] do
      good = List.duplicate("ok", n)
      at = n - 2
      not_utf8 = List.replace_at(good, at, <<0xC0, 0x80>>)

      assert VlenLayout.encode(not_utf8, n, true) == {:error, {:invalid_item, at, <<0xC0, 0x80>>}}
      assert {:ok, _} = VlenLayout.encode(not_utf8, n, false)

      assert VlenLayout.check_items(List.to_tuple(not_utf8), n, true) ==
               {:error, {:invalid_item, at, <<0xC0, 0x80>>}}

      assert VlenLayout.check_items(List.replace_at(good, at, :x), n, false) ==
               {:error, {:invalid_item, at, :x}}

      for expected <- [n - 1, n + 1] do
        assert VlenLayout.check_items(good, expected, false) ==
                 {:error, {:wrong_item_count, expected: expected, got: n}}

        assert VlenLayout.encode(List.to_tuple(good), expected, false) ==
                 {:error, {:wrong_item_count, expected: expected, got: n}}
      end

      improper = good ++ "tail"

      for expected <- [1, n, n + 5] do
        assert VlenLayout.check_items(improper, expected, false) ==
                 {:error, {:not_a_list, improper}}

        assert VlenLayout.encode(improper, expected, false) == {:error, {:not_a_list, improper}}
      end
    end

    assert VlenLayout.check_items(%{}, 0, false) == {:error, {:not_a_list, %{}}}
    assert VlenLayout.encode("ab", 2, false) == {:error, {:not_a_list, "ab"}}
  end

  test "decoded items are sub-binaries of the chunk" do
    chunk = vlen_layout([String.duplicate("x", 100)])
    {:ok, {item}} = VlenLayout.decode(chunk, 1)
    assert :binary.referenced_byte_size(item) == byte_size(chunk)
  end

  test "corrupt layouts are errors" do
    good = vlen_layout(["ab", "c"])

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
      good = vlen_layout(items)
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
            assert vlen_layout(Tuple.to_list(decoded)) == bad
            assert tuple_size(decoded) == expected
            assert VlenLayout.check(bad, expected) == :ok

          {:error, _why} = error ->
            assert ExZarr.Native.vlen_split(bad, expected, false) == {:error, :malformed_layout}
            assert VlenLayout.check(bad, expected) == error
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
      layout = vlen_layout([item])
      native = match?({:ok, _}, ExZarr.Native.vlen_split(layout, 1, true))
      assert native == String.valid?(item), "#{inspect(item)}"
      assert ExZarr.Native.vlen_check_layout(layout, 1, true) == :ok == native
    end
  end

  test "an item that is not UTF-8 is named in the error of a utf8 decode" do
    layout = vlen_layout(["ok", <<0xC0, 0x80>>, "fine"])
    assert VlenLayout.decode(layout, 3, true) == {:error, {:invalid_utf8, <<0xC0, 0x80>>}}
    assert VlenLayout.check(layout, 3, true) == {:error, {:invalid_utf8, <<0xC0, 0x80>>}}
    assert {:ok, {"ok", <<0xC0, 0x80>>, "fine"}} = VlenLayout.decode(layout, 3)
  end
end
