defmodule ExZarr.Native.OutbufTest do
  # The output buffer of multi-chunk reads (c_src/outbuf.c): results against copy_regions on
  # random plans, every codec and byte swap, concurrent writers, coverage checks, and bad
  # arguments of every kind (errors or ArgumentError, never a crash).
  use ExUnit.Case, async: true
  import Bitwise

  alias ExZarr.{Indexing, Native, Shape}
  alias ExZarr.Test.Schedulers

  @codecs [:raw, :zstd, :blosc, :lz4, :gzip, :zlib, :bz2]

  defp encode(:raw, data), do: data
  defp encode(:zstd, data), do: ok(Native.zstd_compress(data, 1, false))
  defp encode(:blosc, data), do: ok(Native.blosc_compress(data, "lz4", 5, 1, 8, 0))
  defp encode(:lz4, data), do: ok(Native.lz4_compress(data, 1))
  defp encode(:gzip, data), do: ok(Native.gzip_compress(data, 1))
  defp encode(:zlib, data), do: ok(Native.zlib_compress(data, 1))
  defp encode(:bz2, data), do: ok(Native.bz2_compress(data, 1))

  defp ok({:ok, v}), do: v

  defp swap_bytes(data, n), do: for(<<u::binary-size(n) <- data>>, into: <<>>, do: reverse(u))
  defp reverse(bin), do: bin |> :binary.bin_to_list() |> Enum.reverse() |> :binary.list_to_bin()

  defp rand_tuple(ndim, fun), do: List.to_tuple(for _ <- 1..ndim//1, do: fun.())

  # A random array, chunking and selection; the plan's parts, each with its chunk's data.
  defp random_read(itemsize) do
    ndim = Enum.random(1..4)
    shape = rand_tuple(ndim, fn -> Enum.random(1..9) end)
    chunks = rand_tuple(ndim, fn -> Enum.random(1..5) end)
    start = for k <- 0..(ndim - 1), do: Enum.random(0..(elem(shape, k) - 1))
    stop = for {s, k} <- Enum.with_index(start), do: Enum.random((s + 1)..elem(shape, k))
    {:ok, sel} = Indexing.selection(shape, start: List.to_tuple(start), stop: List.to_tuple(stop))
    chunk_bytes = Shape.product(chunks) * itemsize

    parts =
      for part <- Indexing.plan(sel, chunks),
          do: Map.put(part, :data, :crypto.strong_rand_bytes(chunk_bytes))

    {sel, chunks, parts}
  end

  # The whole of an array of `shape`: the plan's parts, each with random chunk data.
  defp full_read(shape, chunks, itemsize) do
    {:ok, sel} = Indexing.selection(shape, [])
    bytes = Shape.product(chunks) * itemsize

    {sel,
     for(p <- Indexing.plan(sel, chunks), do: Map.put(p, :data, :crypto.strong_rand_bytes(bytes)))}
  end

  defp reference(sel, chunks, itemsize, fill, parts) do
    pieces =
      for p <- parts, p.data != nil, do: {p.data, chunks, p.chunk_start, p.out_start, p.count}

    ok(Native.copy_regions(sel.shape, itemsize, {:fill, fill}, pieces))
  end

  defp put(buf, part, chunks, codec, swap) do
    box = {chunks, part.chunk_start, part.out_start, part.count}

    stored =
      if swap == 1, do: encode(codec, part.data), else: encode(codec, swap_bytes(part.data, swap))

    Native.outbuf_put(buf, stored, if(swap == 1, do: codec, else: {codec, swap}), box)
  end

  describe "a read assembled in the buffer" do
    test "equals copy_regions on random plans, codecs, byte swaps and missing chunks" do
      for _ <- 1..150 do
        itemsize = Enum.random([1, 2, 4, 8, 16])
        fill = :crypto.strong_rand_bytes(itemsize)
        {sel, chunks, parts} = random_read(itemsize)
        parts = Enum.map(parts, &if(:rand.uniform(5) == 1, do: %{&1 | data: nil}, else: &1))
        {:ok, buf} = Native.outbuf_new(sel.shape, itemsize)

        for part <- parts do
          if part.data == nil do
            assert :ok = Native.outbuf_fill(buf, fill, {part.out_start, part.count})
          else
            swap = Enum.random(Enum.filter([1, 2, 4, 8], &(rem(itemsize, &1) == 0)))
            assert :ok = put(buf, part, chunks, Enum.random(@codecs), swap)
          end
        end

        assert Native.outbuf_finish(buf) == {:ok, reference(sel, chunks, itemsize, fill, parts)}
      end
    end

    test "whole chunks that are runs of the output (decoded in place) and edge chunks" do
      # 10 x 6 of rows-of-4 chunks: chunks 0 and 1 are whole runs, chunk 2 is an edge chunk.
      chunks = {4, 6}
      {sel, parts} = full_read({10, 6}, chunks, 8)

      for codec <- @codecs do
        {:ok, buf} = Native.outbuf_new({10, 6}, 8)
        Enum.each(parts, &(:ok = put(buf, &1, chunks, codec, 1)))
        assert Native.outbuf_finish(buf) == {:ok, reference(sel, chunks, 8, <<0::64>>, parts)}
      end
    end

    test "zstd boxes ending anywhere in a chunk of many compressed blocks" do
      # {512, 256} float64 (1 MiB, 8 blocks of 128 KiB), compressible: matches reach back
      # across blocks, so the decoded prefix is the window
      chunk =
        for i <- 0..(512 * 256 - 1), into: <<>>, do: <<rem(i * 7, 1000) / 8::float-64-little>>

      frame = encode(:zstd, chunk)
      assert byte_size(frame) < div(byte_size(chunk), 4)

      for last_row <- [0, 1, 50, 255, 447, 448, 500, 511] do
        rows = 3
        first = max(last_row - rows + 1, 0)
        count = last_row - first + 1
        {:ok, buf} = Native.outbuf_new({count, 256}, 8)

        assert :ok =
                 Native.outbuf_put(
                   buf,
                   frame,
                   :zstd,
                   {{512, 256}, {first, 0}, {0, 0}, {count, 256}}
                 )

        assert Native.outbuf_finish(buf) == {:ok, binary_part(chunk, first * 2048, count * 2048)}
      end
    end

    test "zstd boxes near a chunk's start: decoded partly, yet damaged frames are refused" do
      chunk = :crypto.strong_rand_bytes(64 * 1024 * 8)
      # Rows 2..4 of a {64, 1024} float64 chunk: the first 5 rows suffice.
      box = {{64, 1024}, {2, 0}, {0, 0}, {3, 1024}}
      expected = binary_part(chunk, 2 * 8192, 3 * 8192)
      frame = encode(:zstd, chunk)
      {:ok, checked} = Native.zstd_compress(chunk, 1, true)
      split = binary_part(chunk, 0, 8192 * 10)
      rest = binary_part(chunk, 8192 * 10, byte_size(chunk) - 8192 * 10)
      two_frames = encode(:zstd, split) <> encode(:zstd, rest)

      for data <- [frame, checked, two_frames] do
        {:ok, buf} = Native.outbuf_new({3, 1024}, 8)
        assert :ok = Native.outbuf_put(buf, data, :zstd, box)
        assert Native.outbuf_finish(buf) == {:ok, expected}
      end

      {:ok, buf} = Native.outbuf_new({3, 1024}, 8)
      cut = binary_part(frame, 0, byte_size(frame) - 100)
      assert {:error, {:zstd, _}} = Native.outbuf_put(buf, cut, :zstd, box)
      assert {:error, {:zstd, _}} = Native.outbuf_put(buf, frame <> <<0>>, :zstd, box)
      # (a byte flipped, not set: setting it to a value it may already hold would change nothing)
      <<head::binary-size(20), byte, tail::binary>> = checked
      damaged = head <> <<Bitwise.bxor(byte, 0xFF)>> <> tail
      assert {:error, {:zstd, _}} = Native.outbuf_put(buf, damaged, :zstd, box)
      # A frame of another size is refused even when its start would do.
      assert {:error, {:zstd, _}} =
               Native.outbuf_put(buf, encode(:zstd, chunk <> chunk), :zstd, box)

      assert {:error, {:outbuf, _}} = Native.outbuf_finish(buf)
    end

    test "processes writing disjoint boxes at once" do
      chunks = {8, 16}
      {sel, parts} = full_read({64, 64}, chunks, 4)

      {:ok, buf} = Native.outbuf_new({64, 64}, 4)

      parts
      |> Task.async_stream(&put(buf, &1, chunks, :zstd, 1), max_concurrency: 8)
      |> Enum.each(&assert(&1 == {:ok, :ok}))

      assert Native.outbuf_finish(buf) == {:ok, reference(sel, chunks, 4, <<0::32>>, parts)}
    end

    test "the result outlives the buffer's reference and later writes" do
      {:ok, buf} = Native.outbuf_new({4}, 2)
      :ok = Native.outbuf_put(buf, <<1, 2, 3, 4, 5, 6, 7, 8>>, :raw, {{4}, {0}, {0}, {4}})
      {:ok, bin} = Native.outbuf_finish(buf)
      assert {:error, {:outbuf, _}} = Native.outbuf_fill(buf, <<0, 0>>, {{0}, {4}})

      assert {:error, {:outbuf, _}} =
               Native.outbuf_put(buf, <<0::64>>, :raw, {{4}, {0}, {0}, {4}})

      assert {:error, {:outbuf, _}} = Native.outbuf_finish(buf)
      part = binary_part(bin, 2, 4)
      :erlang.garbage_collect()
      assert bin == <<1, 2, 3, 4, 5, 6, 7, 8>> and part == <<3, 4, 5, 6>>
    end

    test "empty and zero-dimensional outputs" do
      {:ok, buf} = Native.outbuf_new({0, 5}, 8)
      assert Native.outbuf_finish(buf) == {:ok, ""}

      {:ok, buf} = Native.outbuf_new({}, 4)
      :ok = Native.outbuf_put(buf, encode(:zstd, <<1, 2, 3, 4>>), :zstd, {{}, {}, {}, {}})
      assert Native.outbuf_finish(buf) == {:ok, <<1, 2, 3, 4>>}
    end
  end

  describe "coverage" do
    setup do
      {:ok, buf} = Native.outbuf_new({4, 4}, 1)
      %{buf: buf}
    end

    test "nothing written", %{buf: buf} do
      assert {:error, {:outbuf, msg}} = Native.outbuf_finish(buf)
      assert msg =~ "cover"
    end

    test "a gap", %{buf: buf} do
      :ok = Native.outbuf_fill(buf, <<1>>, {{0, 0}, {3, 4}})
      assert {:error, {:outbuf, _}} = Native.outbuf_finish(buf)
    end

    test "overlapping boxes whose volumes add up", %{buf: buf} do
      :ok = Native.outbuf_fill(buf, <<1>>, {{0, 0}, {2, 4}})
      :ok = Native.outbuf_fill(buf, <<2>>, {{1, 0}, {2, 4}})
      :ok = Native.outbuf_fill(buf, <<3>>, {{0, 0}, {0, 4}})
      assert {:error, {:outbuf, _}} = Native.outbuf_finish(buf)
    end

    test "the same box twice", %{buf: buf} do
      :ok = Native.outbuf_fill(buf, <<1>>, {{0, 0}, {2, 4}})
      :ok = Native.outbuf_fill(buf, <<1>>, {{0, 0}, {2, 4}})
      assert {:error, {:outbuf, _}} = Native.outbuf_finish(buf)
    end

    test "a chunk that fails to decode leaves its box unwritten", %{buf: buf} do
      :ok = Native.outbuf_fill(buf, <<1>>, {{0, 0}, {2, 4}})
      bad = binary_part(encode(:zstd, :binary.copy(<<7>>, 8)), 0, 6)

      assert {:error, {:zstd, _}} =
               Native.outbuf_put(buf, bad, :zstd, {{2, 4}, {0, 0}, {2, 0}, {2, 4}})

      assert {:error, {:outbuf, _}} = Native.outbuf_finish(buf)
    end

    test "more than 256 boxes must form a grid" do
      {:ok, buf} = Native.outbuf_new({300, 2}, 1)
      for i <- 0..299, do: :ok = Native.outbuf_fill(buf, <<i>>, {{i, 0}, {1, 2}})
      assert {:ok, bin} = Native.outbuf_finish(buf)
      assert bin == for(i <- 0..299, into: <<>>, do: <<i, i>>)

      {:ok, buf} = Native.outbuf_new({300, 2}, 1)
      :ok = Native.outbuf_fill(buf, <<0>>, {{0, 0}, {1, 1}})
      :ok = Native.outbuf_fill(buf, <<0>>, {{0, 1}, {2, 1}})
      :ok = Native.outbuf_fill(buf, <<0>>, {{1, 0}, {1, 1}})
      for i <- 2..299, do: :ok = Native.outbuf_fill(buf, <<i>>, {{i, 0}, {1, 2}})
      assert {:error, {:outbuf, _}} = Native.outbuf_finish(buf)
    end
  end

  describe "bad arguments" do
    setup do
      {:ok, buf} = Native.outbuf_new({4, 6}, 2)
      %{buf: buf, chunk: :crypto.strong_rand_bytes(24)}
    end

    test "outbuf_new" do
      assert {:error, {:outbuf, _}} = Native.outbuf_new({4}, 0)
      assert {:error, {:outbuf, _}} = Native.outbuf_new({1 <<< 40, 1 <<< 40}, 8)
      assert {:error, {:outbuf, _}} = Native.outbuf_new({0xFFFFFFFFFFFFFFFF}, 2)
      # Larger than the machine's memory: refused by the allocator, not a VM abort.
      assert {:error, {:memory, _}} = Native.outbuf_new({1 <<< 47}, 1)
      assert_raise ArgumentError, fn -> Native.outbuf_new({-1}, 1) end
      assert_raise ArgumentError, fn -> Native.outbuf_new([4], 1) end

      assert_raise ArgumentError, fn ->
        Native.outbuf_new(List.to_tuple(List.duplicate(1, 65)), 1)
      end

      assert_raise ArgumentError, fn -> Native.outbuf_new({4}, -1) end
      assert_raise ArgumentError, fn -> Native.outbuf_new({4}, 1 <<< 64) end
    end

    test "outbuf_put: boxes out of bounds or the wrong size", %{buf: buf, chunk: chunk} do
      for box <- [
            {{2, 6}, {0, 0}, {3, 0}, {2, 6}},
            {{2, 6}, {1, 0}, {0, 0}, {2, 6}},
            {{2, 6}, {0, 1}, {0, 0}, {2, 6}},
            {{2, 6}, {0, 0}, {0, 0}, {3, 6}},
            {{2, 6}, {0, 0xFFFFFFFFFFFFFFFF}, {0, 0}, {2, 1}},
            {{2, 6}, {0, 0}, {0, 0xFFFFFFFFFFFFFFFF}, {2, 1}},
            {{2, 0xFFFFFFFFFFFFFFFF}, {0, 0}, {0, 0}, {2, 6}},
            {{1 <<< 33, 1 <<< 33}, {0, 0}, {0, 0}, {2, 6}},
            {{3, 6}, {0, 0}, {0, 0}, {2, 6}}
          ],
          codec <- [:raw, :zstd] do
        data = if codec == :raw, do: chunk, else: encode(:zstd, chunk)
        assert {:error, {_, _}} = Native.outbuf_put(buf, data, codec, box), inspect({box, codec})
      end

      assert {:error, {:outbuf, _}} =
               Native.outbuf_put(buf, chunk <> <<0>>, :raw, {{2, 6}, {0, 0}, {0, 0}, {2, 6}})
    end

    test "outbuf_put: data that decodes to another size or not at all", %{buf: buf, chunk: chunk} do
      box = {{2, 6}, {0, 0}, {0, 0}, {2, 6}}
      partial = {{2, 6}, {0, 0}, {0, 0}, {2, 5}}

      for codec <- @codecs -- [:raw], b <- [box, partial] do
        assert {:error, {^codec, _}} =
                 Native.outbuf_put(buf, encode(codec, chunk <> <<1, 2>>), codec, b)

        assert {:error, {^codec, _}} =
                 Native.outbuf_put(buf, encode(codec, binary_part(chunk, 0, 20)), codec, b)

        assert {:error, {^codec, _}} =
                 Native.outbuf_put(buf, "not compressed data at all", codec, b)

        assert {:error, {^codec, _}} = Native.outbuf_put(buf, "", codec, b)
      end

      assert {:error, {:raw, _}} = Native.outbuf_put(buf, <<1, 2>>, {:raw, 2}, box)
      assert {:error, {:outbuf, _}} = Native.outbuf_finish(buf)
    end

    test "outbuf_put: malformed terms", %{buf: buf, chunk: chunk} do
      box = {{2, 6}, {0, 0}, {0, 0}, {2, 6}}

      for {b, data, codec, bx} <- [
            {make_ref(), chunk, :raw, box},
            {:buf, chunk, :raw, box},
            {buf, [chunk], :raw, box},
            {buf, chunk, :lzma, box},
            {buf, chunk, "zstd", box},
            {buf, chunk, {:raw, 3}, box},
            {buf, chunk, {:raw, 16}, box},
            {buf, chunk, {:raw, 2, 1}, box},
            {buf, chunk, {:raw, -1}, box},
            {buf, chunk, :raw, {{2, 6}, {0, 0}, {0, 0}}},
            {buf, chunk, :raw, {{2, 6}, {0, 0}, {0, 0}, {2}}},
            {buf, chunk, :raw, {{2, 6}, {0, 0}, {0, -1}, {2, 6}}},
            {buf, chunk, :raw, [{2, 6}, {0, 0}, {0, 0}, {2, 6}]}
          ] do
        assert_raise ArgumentError, fn -> Native.outbuf_put(b, data, codec, bx) end
      end

      # A swap unit that does not divide the itemsize
      {:ok, buf1} = Native.outbuf_new({4}, 2)

      assert {:error, {:outbuf, _}} =
               Native.outbuf_put(buf1, <<0::64>>, {:raw, 4}, {{4}, {0}, {0}, {4}})
    end

    test "outbuf_fill", %{buf: buf} do
      assert {:error, {:outbuf, _}} = Native.outbuf_fill(buf, <<1>>, {{0, 0}, {1, 1}})
      assert {:error, {:outbuf, _}} = Native.outbuf_fill(buf, <<1, 2, 3>>, {{0, 0}, {1, 1}})
      assert {:error, {:outbuf, _}} = Native.outbuf_fill(buf, <<1, 2>>, {{4, 0}, {1, 1}})
      assert {:error, {:outbuf, _}} = Native.outbuf_fill(buf, <<1, 2>>, {{0, 0}, {5, 1}})

      assert {:error, {:outbuf, _}} =
               Native.outbuf_fill(buf, <<1, 2>>, {{0, 0xFFFFFFFFFFFFFFFF}, {1, 2}})

      assert {:error, {:outbuf, _}} =
               Native.outbuf_fill(buf, <<1, 2>>, {{0, 0}, {1 <<< 40, 1 <<< 40}})

      assert_raise ArgumentError, fn -> Native.outbuf_fill(buf, <<1, 2>>, {{0}, {1}}) end

      assert_raise ArgumentError, fn ->
        Native.outbuf_fill(buf, <<1, 2>>, {{0, 0}, {1, 1}, {1, 1}})
      end

      assert_raise ArgumentError, fn -> Native.outbuf_fill(buf, 12, {{0, 0}, {1, 1}}) end
      assert_raise ArgumentError, fn -> Native.outbuf_fill(self(), <<1, 2>>, {{0, 0}, {1, 1}}) end
    end

    test "outbuf_finish" do
      assert_raise ArgumentError, fn -> Native.outbuf_finish(make_ref()) end
      assert_raise ArgumentError, fn -> Native.outbuf_finish("buffer") end
    end

    test "random terms never crash the VM", %{chunk: chunk} do
      terms = fn ->
        Enum.random([
          -1,
          0,
          3,
          1 <<< 64,
          :raw,
          :zstd,
          {:zstd, 8},
          "",
          chunk,
          encode(:zstd, chunk),
          {},
          {2, 6},
          {0, 0},
          {1 <<< 62, 4},
          {{2, 6}, {0, 0}, {0, 0}, {2, 6}},
          {{2, 6}, {0, 0}},
          [1, 2],
          make_ref()
        ])
      end

      for _ <- 1..2000 do
        {:ok, buf} = Native.outbuf_new({4, 6}, 2)
        args = [buf | for(_ <- 1..3, do: terms.())]

        for {fun, arity} <- [outbuf_put: 4, outbuf_fill: 3] do
          try do
            case apply(Native, fun, Enum.take(args, arity)) do
              :ok -> :ok
              {:error, {tag, msg}} when is_atom(tag) and is_binary(msg) -> :ok
            end
          rescue
            ArgumentError -> :ok
          end
        end

        result = Native.outbuf_finish(buf)
        assert match?({:error, {:outbuf, _}}, result) or match?({:ok, <<_::binary-48>>}, result)
      end
    end
  end

  describe "index lists" do
    defp list(l), do: for(i <- l, into: <<>>, do: <<i::64-little>>)

    test "a box taken by index lists from a raw or compressed chunk" do
      chunk = for i <- 0..15, into: <<>>, do: <<i>>
      {:ok, z} = Native.zstd_compress(chunk, 1, false)

      for {data, codec} <- [{chunk, :raw}, {z, :zstd}] do
        {:ok, buf} = Native.outbuf_new({2, 3}, 1)
        box = {{4, 4}, {list([3, 0]), list([1, 1, 2])}, {0, 0}, {2, 3}}
        assert :ok = Native.outbuf_put(buf, data, codec, box)
        assert {:ok, <<13, 13, 14, 1, 1, 2>>} = Native.outbuf_finish(buf)
      end
    end

    test "points of a chunk taken as one flat axis, the chunk's size counted whole" do
      {:ok, buf} = Native.outbuf_new({3}, 2)
      chunk = for i <- 0..5, into: <<>>, do: <<i::16-little>>
      assert :ok = Native.outbuf_put(buf, chunk, :raw, {{6}, {list([5, 0, 5])}, {0}, {3}})
      assert {:ok, <<5::16-little, 0::16-little, 5::16-little>>} = Native.outbuf_finish(buf)

      {:ok, buf} = Native.outbuf_new({2}, 2)

      assert {:error, {:outbuf, "index is out of the source bounds"}} =
               Native.outbuf_put(buf, chunk, :raw, {{6}, {list([6, 0])}, {0}, {2}})

      assert {:error, {:outbuf, "source size does not match its shape and itemsize"}} =
               Native.outbuf_put(
                 buf,
                 binary_part(chunk, 0, 10),
                 :raw,
                 {{6}, {list([1, 0])}, {0}, {2}}
               )
    end
  end

  describe "where the work runs" do
    # A row of 64 chunks of 64x64 float64 (32 KiB each, 2 MiB in all): a {64, 4096} array,
    # read whole or as its first row (each chunk's first row, a thin box of 512 bytes).
    setup do
      chunks = for _ <- 1..64, do: :crypto.strong_rand_bytes(64 * 64 * 8)
      %{chunks: chunks}
    end

    test "a small box of a large raw chunk is copied on the calling scheduler; decoding goes dirty" do
      chunk = :crypto.strong_rand_bytes(512 * 512 * 8)
      box = {{512, 512}, {0, 0}, {0, 0}, {10, 10}}

      for {codec, data, dirty} <- [{:raw, chunk, false}, {:zstd, encode(:zstd, chunk), true}] do
        {:ok, buf} = Native.outbuf_new({10, 10}, 8)

        assert {^dirty, :ok} =
                 Schedulers.dirty?(fn -> Native.outbuf_put(buf, data, codec, box) end)
      end
    end

    test "a batch costs the boxes of raw chunks and fills, the chunks it decodes", %{
      chunks: chunks
    } do
      thin = fn data, j -> {data, {0, 0}, {0, j * 64}, {1, 64}} end

      cases = [
        # raw and missing chunks: 64 boxes of 512 bytes
        {:raw, Enum.with_index(chunks, &thin.(&1, &2)), {1, 4096}, false},
        {:raw, for(j <- 0..63, do: thin.(nil, j)), {1, 4096}, false},
        # decoding: 64 whole chunks
        {:zstd, Enum.with_index(chunks, &thin.(encode(:zstd, &1), &2)), {1, 4096}, true},
        # raw chunks copied whole: 2 MiB
        {:raw, for({c, j} <- Enum.with_index(chunks), do: {c, {0, 0}, {0, j * 64}, {64, 64}}),
         {64, 4096}, true}
      ]

      for {codec, jobs, shape, dirty} <- cases do
        {:ok, buf} = Native.outbuf_new(shape, 8)

        assert {^dirty, :ok} =
                 Schedulers.dirty?(fn ->
                   Native.outbuf_put_batch(buf, <<0::64>>, codec, {64, 64}, jobs, 1)
                 end)
      end
    end
  end
end
