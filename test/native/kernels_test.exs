defmodule ExZarr.Native.KernelsTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Native
  import Bitwise

  alias ExZarr.Native

  # Reference implementations over lists of element binaries, for small shapes only.
  defp indices(shape) do
    shape
    |> Tuple.to_list()
    |> Enum.reduce([[]], fn n, acc -> for i <- acc, j <- 0..(n - 1)//1, do: i ++ [j] end)
  end

  defp linear(idx, shape) do
    idx
    |> Enum.zip(Tuple.to_list(shape))
    |> Enum.reduce(0, fn {i, n}, acc -> acc * n + i end)
  end

  # Position i along an axis: from the start, or from an index list.
  defp at(i, start) when is_integer(start), do: start + i
  defp at(i, list), do: :binary.decode_unsigned(binary_part(list, 8 * i, 8), :little)

  defp elements(bin, itemsize), do: for(<<e::binary-size(itemsize) <- bin>>, do: e)

  defp ref_copy(dst_shape, itemsize, base, pieces) do
    dst = elements(base, itemsize) |> Enum.with_index() |> Map.new(fn {e, i} -> {i, e} end)

    pieces
    |> Enum.reduce(dst, fn {src, src_shape, src_start, dst_start, count}, acc ->
      src_elems = elements(src, itemsize) |> List.to_tuple()

      Enum.reduce(indices(count), acc, fn idx, acc2 ->
        s = Enum.zip_with(idx, Tuple.to_list(src_start), &at/2)
        d = Enum.zip_with(idx, Tuple.to_list(dst_start), &at/2)
        Map.put(acc2, linear(d, dst_shape), elem(src_elems, linear(s, src_shape)))
      end)
    end)
    |> Enum.sort()
    |> Enum.map_join(fn {_, e} -> e end)
  end

  defp rand_bin(n), do: :crypto.strong_rand_bytes(n)

  defp rand_shape(ndim, max), do: List.to_tuple(for _ <- 1..ndim//1, do: :rand.uniform(max))

  defp rand_piece(dst_shape, itemsize) do
    ndim = tuple_size(dst_shape)
    count = for k <- 0..(ndim - 1)//1, do: :rand.uniform(elem(dst_shape, k) + 1) - 1

    dst_start =
      for {c, k} <- Enum.with_index(count), do: :rand.uniform(elem(dst_shape, k) - c + 1) - 1

    src_shape = for c <- count, do: c + :rand.uniform(3) - 1
    src_start = for {c, s} <- Enum.zip(count, src_shape), do: :rand.uniform(s - c + 1) - 1
    src_shape = List.to_tuple(src_shape)
    size = Enum.product(Tuple.to_list(src_shape)) * itemsize

    {rand_bin(size), src_shape, List.to_tuple(src_start), List.to_tuple(dst_start),
     List.to_tuple(count)}
  end

  # Some axes of a start replaced by an index list of `count` random positions (repeats too).
  defp listed(start, shape, count) do
    for k <- 0..(tuple_size(start) - 1)//1 do
      if :rand.uniform(2) == 1 and elem(shape, k) > 0,
        do:
          for(
            _ <- 1..elem(count, k)//1,
            into: <<>>,
            do: <<:rand.uniform(elem(shape, k)) - 1::64-little>>
          ),
        else: elem(start, k)
    end
    |> List.to_tuple()
  end

  describe "copy_regions/4" do
    test "matches a reference implementation on random boxes" do
      for _ <- 1..300 do
        ndim = :rand.uniform(5) - 1
        itemsize = Enum.random([1, 2, 3, 4, 8, 16])
        dst_shape = rand_shape(ndim, 5)
        total = Enum.product(Tuple.to_list(dst_shape)) * itemsize
        base = rand_bin(total)
        pieces = for _ <- 1..:rand.uniform(4), do: rand_piece(dst_shape, itemsize)

        assert Native.copy_regions(dst_shape, itemsize, base, pieces) ==
                 {:ok, ref_copy(dst_shape, itemsize, base, pieces)}
      end
    end

    test "index lists on either side gather and scatter as the reference does" do
      for _ <- 1..300 do
        ndim = :rand.uniform(4)
        itemsize = Enum.random([1, 2, 3, 4, 8, 16])
        dst_shape = rand_shape(ndim, 5)
        base = rand_bin(Enum.product(Tuple.to_list(dst_shape)) * itemsize)

        pieces =
          for _ <- 1..:rand.uniform(3) do
            {src, src_shape, src_start, dst_start, count} = rand_piece(dst_shape, itemsize)

            {src, src_shape, listed(src_start, src_shape, count),
             listed(dst_start, dst_shape, count), count}
          end

        assert Native.copy_regions(dst_shape, itemsize, base, pieces) ==
                 {:ok, ref_copy(dst_shape, itemsize, base, pieces)}
      end
    end

    test "index lists out of bounds or of the wrong length are errors" do
      list = fn l -> for i <- l, into: <<>>, do: <<i::64-little>> end

      assert {:error, {:copy_regions, "piece 0: index is out of the source bounds"}} =
               Native.copy_regions({2}, 1, {:fill, "z"}, [{"ab", {2}, {list.([0, 2])}, {0}, {2}}])

      assert {:error, {:copy_regions, "piece 0: index is out of the destination bounds"}} =
               Native.copy_regions({2}, 1, {:fill, "z"}, [{"ab", {2}, {0}, {list.([5, 0])}, {2}}])

      assert {:error, {:copy_regions, "piece 0 is not" <> _}} =
               Native.copy_regions({2}, 1, {:fill, "z"}, [{"ab", {2}, {list.([0])}, {0}, {2}}])

      assert {:error, {:copy_regions, "piece 0 is not" <> _}} =
               Native.copy_regions({2}, 1, {:fill, "z"}, [{"ab", {2}, {"abc"}, {0}, {2}}])
    end

    test "fills with a repeated element" do
      assert Native.copy_regions({2, 2}, 2, {:fill, <<1, 2>>}, []) ==
               {:ok, <<1, 2, 1, 2, 1, 2, 1, 2>>}

      assert Native.copy_regions({3}, 4, {:fill, <<0, 0, 0, 0>>}, []) == {:ok, <<0::96>>}
      assert Native.copy_regions({0, 5}, 8, {:fill, <<1::64>>}, []) == {:ok, ""}
    end

    test "pieces whose sizes add up to the destination but overlap keep the base elsewhere" do
      # Volumes sum to the destination's 4 elements, yet index 3 is never written.
      pieces = [{"ab", {2}, {0}, {0}, {2}}, {"cd", {2}, {0}, {1}, {2}}]
      assert Native.copy_regions({4}, 1, {:fill, "z"}, pieces) == {:ok, "acdz"}
      assert Native.copy_regions({4}, 1, "wxyz", pieces) == {:ok, "acdz"}
      # Disjoint tiles cover everything.
      tiles = [{"ab", {2}, {0}, {0}, {2}}, {"cd", {2}, {0}, {2}, {2}}]
      assert Native.copy_regions({4}, 1, {:fill, "z"}, tiles) == {:ok, "abcd"}
    end

    test "0-d shapes are one element" do
      assert Native.copy_regions({}, 4, {:fill, "abcd"}, [{"wxyz", {}, {}, {}, {}}]) ==
               {:ok, "wxyz"}
    end

    test "assembles a large region from chunks (dirty scheduler path)" do
      # 4 chunks of 256x256 float64 into a 512x512 array, then an unaligned extraction back.
      chunks =
        for i <- 0..1, j <- 0..1, into: %{} do
          {{i, j}, :binary.copy(<<i * 2 + j::float-64-little>>, 256 * 256)}
        end

      pieces =
        for {{i, j}, bin} <- chunks,
            do: {bin, {256, 256}, {0, 0}, {i * 256, j * 256}, {256, 256}}

      {:ok, full} = Native.copy_regions({512, 512}, 8, {:fill, <<0::64>>}, pieces)
      assert byte_size(full) == 512 * 512 * 8

      for r <- [0, 255, 256, 511] do
        row = binary_part(full, r * 512 * 8, 512 * 8)
        i = div(r, 256)

        assert row ==
                 :binary.copy(<<i * 2::float-64-little>>, 256) <>
                   :binary.copy(<<i * 2 + 1::float-64-little>>, 256)
      end

      {:ok, sub} =
        Native.copy_regions({2, 3}, 8, {:fill, <<0::64>>}, [
          {full, {512, 512}, {255, 254}, {0, 0}, {2, 3}}
        ])

      values = for <<v::float-64-little <- sub>>, do: v
      assert values == [0.0, 0.0, 1.0, 2.0, 2.0, 3.0]
    end

    test "rejects inconsistent arguments with a reason" do
      src = rand_bin(6)
      ok_piece = {src, {2, 3}, {0, 0}, {0, 0}, {2, 3}}
      assert {:ok, _} = Native.copy_regions({2, 3}, 1, {:fill, "x"}, [ok_piece])

      bad = [
        {src, {2, 3, 1}, {0, 0, 0}, {0, 0, 0}, {2, 3, 1}},
        {src, {3, 3}, {0, 0}, {0, 0}, {2, 3}},
        {src, {2, 3}, {1, 0}, {0, 0}, {2, 3}},
        {src, {2, 3}, {0, 0}, {0, 1}, {2, 3}},
        {src, {2, 3}, {0, 0}, {0, 0}, {3, 3}},
        {src, {2, 3}, {0, 0xFFFFFFFFFFFFFFFF}, {0, 0}, {2, 3}},
        {src, {2, 0xFFFFFFFFFFFFFFFF}, {0, 0}, {0, 0}, {2, 3}},
        {src, {2, 3}, {0, 0}, {0, 0}},
        :not_a_piece
      ]

      for piece <- bad do
        assert {:error, {:copy_regions, msg}} =
                 Native.copy_regions({2, 3}, 1, {:fill, "x"}, [ok_piece, piece])

        assert msg =~ "piece 1"
      end

      assert {:error, {:copy_regions, _}} = Native.copy_regions({2, 3}, 2, {:fill, "x"}, [])
      assert {:error, {:copy_regions, _}} = Native.copy_regions({2, 3}, 1, "short", [])
      assert {:error, {:copy_regions, _}} = Native.copy_regions({2, 3}, 0, "", [])

      assert {:error, {:copy_regions, _}} =
               Native.copy_regions({1 <<< 40, 1 <<< 40}, 8, {:fill, <<0::64>>}, [])

      assert_raise ArgumentError, fn -> Native.copy_regions([2, 3], 1, {:fill, "x"}, []) end
      assert_raise ArgumentError, fn -> Native.copy_regions({2, -3}, 1, {:fill, "x"}, []) end
      assert_raise ArgumentError, fn -> Native.copy_regions({2, 3}, 1, {:fill, "x"}, :x) end
    end
  end

  describe "transpose/4" do
    defp ref_transpose(data, shape, itemsize, perm) do
      elems = elements(data, itemsize) |> List.to_tuple()
      perm = Tuple.to_list(perm)
      out_shape = List.to_tuple(for p <- perm, do: elem(shape, p))

      for idx <- indices(out_shape), into: "" do
        in_idx =
          for a <- 0..(length(perm) - 1)//1, do: Enum.at(idx, Enum.find_index(perm, &(&1 == a)))

        elem(elems, linear(in_idx, shape))
      end
    end

    test "matches numpy transpose semantics on random shapes" do
      for _ <- 1..200 do
        ndim = :rand.uniform(5) - 1
        itemsize = Enum.random([1, 2, 4, 8, 12])
        shape = rand_shape(ndim, 4)
        data = rand_bin(Enum.product(Tuple.to_list(shape)) * itemsize)
        perm = Enum.shuffle(0..(ndim - 1)//1) |> List.to_tuple()

        assert Native.transpose(data, shape, itemsize, perm) ==
                 {:ok, ref_transpose(data, shape, itemsize, perm)}
      end
    end

    test "shapes spanning several cache tiles" do
      for {shape, perm} <- [
            {{70, 3, 90}, {2, 0, 1}},
            {{130, 67}, {1, 0}},
            {{5, 40, 33}, {1, 2, 0}}
          ],
          itemsize <- [1, 8] do
        data = rand_bin(Tuple.product(shape) * itemsize)

        assert Native.transpose(data, shape, itemsize, perm) ==
                 {:ok, ref_transpose(data, shape, itemsize, perm)}
      end
    end

    test "large 2-d transpose" do
      data = for i <- 0..(300 * 400 - 1), into: "", do: <<i::32-little>>
      {:ok, t} = Native.transpose(data, {300, 400}, 4, {1, 0})
      # t[j][i] == i * 400 + j
      assert binary_part(t, (7 * 300 + 11) * 4, 4) == <<11 * 400 + 7::32-little>>
      assert Native.transpose(t, {400, 300}, 4, {1, 0}) == {:ok, data}
    end

    test "rejects bad permutations and sizes" do
      assert {:error, {:transpose, _}} = Native.transpose("abcdef", {2, 3}, 1, {0, 0})
      assert {:error, {:transpose, _}} = Native.transpose("abcdef", {2, 3}, 1, {0, 2})
      assert {:error, {:transpose, _}} = Native.transpose("abcdef", {2, 3}, 1, {0})
      assert {:error, {:transpose, _}} = Native.transpose("abcde", {2, 3}, 1, {1, 0})
      assert {:error, {:transpose, _}} = Native.transpose("abcdef", {2, 3}, 0, {1, 0})
    end
  end

  describe "byteswap/2" do
    test "reverses each element" do
      data = rand_bin(8 * 20_000)

      for size <- [2, 4, 8] do
        expected = for <<x::binary-size(size) <- data>>, into: "", do: reverse(x)
        assert Native.byteswap(data, size) == {:ok, expected}
      end

      assert Native.byteswap(data, 1) == {:ok, data}
    end

    test "rejects odd sizes" do
      assert {:error, {:byteswap, _}} = Native.byteswap("abc", 2)
      assert {:error, {:byteswap, _}} = Native.byteswap("abcdef", 3)
      assert {:error, {:byteswap, _}} = Native.byteswap("abcd", 0)
    end

    defp reverse(x), do: x |> :binary.bin_to_list() |> Enum.reverse() |> :binary.list_to_bin()
  end

  describe "all_equal/2 and all_nan/2" do
    test "all_equal" do
      big = :binary.copy(<<1, 2, 3>>, 100_000)
      assert Native.all_equal(big, <<1, 2, 3>>)
      refute Native.all_equal(big, <<1, 2, 4>>)
      refute Native.all_equal(big <> <<1, 2, 4>>, <<1, 2, 3>>)
      refute Native.all_equal(<<1, 2, 3, 2, 2, 3>>, <<1, 2, 3>>)
      assert Native.all_equal("", <<0>>)
      assert_raise ArgumentError, fn -> Native.all_equal("abcd", "abc") end
    end

    test "large data: a difference at the start, at the end, or an element wider than the start" do
      # (the first 4 KiB are looked at on the calling scheduler, the rest on a dirty one)
      big = :binary.copy(<<7>>, 1_000_000)
      refute Native.all_equal(<<6>> <> big, <<7>>)
      refute Native.all_equal(big <> <<6>>, <<7>>)
      wide = :binary.copy(<<1, 2, 3, 4, 5>>, 1000)
      assert Native.all_equal(:binary.copy(wide, 300), wide)
      refute Native.all_equal(:binary.copy(wide, 299) <> :binary.copy(<<0>>, 5000), wide)
      assert_raise ArgumentError, fn -> Native.all_equal(big <> <<7>>, <<7, 7>>) end
      nan32 = <<0, 0, 0xC0, 0x7F>>
      refute Native.all_nan(<<1.0::float-32-little>> <> :binary.copy(nan32, 100_000), 4)
      refute Native.all_nan(:binary.copy(nan32, 100_000) <> <<1.0::float-32-little>>, 4)
      assert_raise ArgumentError, fn -> Native.all_nan(:binary.copy(nan32, 2000), 3) end
    end

    test "all_nan" do
      nan64 = <<0, 0, 0, 0, 0, 0, 0xF8, 0x7F>>
      other_nan64 = <<1, 0, 0, 0, 0, 0, 0xF0, 0xFF>>
      inf64 = <<0, 0, 0, 0, 0, 0, 0xF0, 0x7F>>
      big = :binary.copy(nan64 <> other_nan64, 50_000)
      assert Native.all_nan(big, 8)
      refute Native.all_nan(big <> inf64, 8)
      refute Native.all_nan(<<1.0::float-64-little>>, 8)
      assert Native.all_nan(<<0, 0, 0xC0, 0x7F, 1, 0, 0x80, 0xFF>>, 4)
      refute Native.all_nan(<<0, 0, 0x80, 0x7F>>, 4)
      assert Native.all_nan(<<0x00, 0x7E, 0x01, 0xFC>>, 2)
      refute Native.all_nan(<<0x00, 0x7C>>, 2)
      assert_raise ArgumentError, fn -> Native.all_nan("abc", 2) end
      assert_raise ArgumentError, fn -> Native.all_nan("abc", 3) end
    end
  end

  describe "crc32c/1" do
    test "known vectors (RFC 3720)" do
      assert Native.crc32c("123456789") == 0xE3069283
      assert Native.crc32c(<<0::256>>) == 0x8A9136AA
      assert Native.crc32c(:binary.copy(<<0xFF>>, 32)) == 0x62A8AB43
      assert Native.crc32c(Enum.to_list(0..31)) == 0x46DD794E
      assert Native.crc32c("") == 0
    end

    test "the interleaved lanes used on long inputs agree with byte-at-a-time" do
      for size <- [3 * 1024, 3 * 1024 + 5, 10_000, 50_001] do
        data = rand_bin(size)
        assert Native.crc32c(data) == Native.crc32c(:binary.bin_to_list(data)), "size #{size}"
      end
    end

    test "iodata of any shape gives the CRC of its flattening" do
      data = rand_bin(200_000)
      <<a::binary-size(77), b::binary-size(100_000), c::binary>> = data
      expected = Native.crc32c(data)
      assert Native.crc32c([a, [b], c]) == expected

      assert Native.crc32c([
               [[a | b]],
               :binary.bin_to_list(binary_part(c, 0, 5)) | binary_part(c, 5, byte_size(c) - 5)
             ]) == expected

      deep = Enum.reduce(1..200, data, fn _, acc -> [acc] end)
      assert Native.crc32c(deep) == expected
      assert_raise ArgumentError, fn -> Native.crc32c([1, 256]) end
      assert_raise ArgumentError, fn -> Native.crc32c(:atom) end
    end
  end
end
