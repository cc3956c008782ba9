defmodule ExZarr.Native.DecodeIntoTest do
  use ExUnit.Case, async: true
  import Bitwise

  alias ExZarr.Native
  alias ExZarr.Test.Schedulers

  # The chunks of a `shape` array cut in `chunk_shape` chunks (edge chunks padded with
  # garbage, as stored chunks are), as {chunk_bytes, src_start, dst_start, count} plus the
  # array itself; `missing` of them (by position) are not stored and read as `fill`.
  defp chunked(shape, chunk_shape, itemsize, fill, missing \\ []) do
    dims = Tuple.to_list(shape)
    cdims = Tuple.to_list(chunk_shape)
    grid = Enum.zip_with(dims, cdims, &div(&1 + &2 - 1, &2))
    chunk_bytes = Enum.product(cdims) * itemsize
    coords = Enum.reduce(grid, [[]], fn g, acc -> for c <- acc, i <- 0..(g - 1), do: c ++ [i] end)

    chunks =
      coords
      |> Enum.with_index()
      |> Enum.map(fn {c, n} ->
        origin = Enum.zip_with(c, cdims, &(&1 * &2))
        count = Enum.zip_with([origin, cdims, dims], fn [o, cd, d] -> min(cd, d - o) end)
        bytes = if n in missing, do: nil, else: :crypto.strong_rand_bytes(chunk_bytes)
        zeros = List.to_tuple(List.duplicate(0, length(dims)))
        {bytes, zeros, List.to_tuple(origin), List.to_tuple(count)}
      end)

    pieces =
      for {bytes, src_start, dst_start, count} <- chunks,
          bytes != nil,
          do: {bytes, chunk_shape, src_start, dst_start, count}

    {:ok, expected} = Native.copy_regions(shape, itemsize, {:fill, fill}, pieces)
    {chunks, expected}
  end

  defp encode(chunks, fun), do: for({b, s, d, c} <- chunks, do: {b && ok!(fun.(b)), s, d, c})

  defp ok!({:ok, v}), do: IO.iodata_to_binary(v)

  # A random array cut in chunks (5 of them missing): shapes, itemsize, fill, chunks, expected.
  defp random_chunked do
    ndim = :rand.uniform(3)
    itemsize = Enum.random([1, 2, 4, 8])
    shape = List.to_tuple(for _ <- 1..ndim, do: :rand.uniform(20))
    chunk_shape = List.to_tuple(for _ <- 1..ndim, do: :rand.uniform(6))
    fill = :crypto.strong_rand_bytes(itemsize)
    {chunks, expected} = chunked(shape, chunk_shape, itemsize, fill, Enum.take_random(0..50, 5))
    {shape, chunk_shape, itemsize, fill, chunks, expected}
  end

  test "places raw chunks as copy_regions does, missing chunks as fill" do
    :rand.seed(:exsss, {7, 7, 7})

    for _ <- 1..30 do
      {shape, chunk_shape, itemsize, fill, chunks, expected} = random_chunked()

      for threads <- [1, 3] do
        assert Native.decode_into(shape, itemsize, fill, :raw, chunk_shape, chunks, threads) ==
                 {:ok, expected}
      end
    end
  end

  test "runs each codec's decoder, on several threads for large batches" do
    # 4096 chunks of 4 KiB: enough work for extra threads
    shape = {256, 256, 256}
    chunk_shape = {16, 16, 16}
    {chunks, expected} = chunked(shape, chunk_shape, 1, <<0>>, [5, 4000])

    codecs = [
      blosc: &Native.blosc_compress(&1, "lz4", 5, 1, 1, 0),
      zstd: &Native.zstd_compress(&1, 1, false),
      lz4: &Native.lz4_compress(&1, 1),
      zlib: &Native.zlib_compress(&1, 1)
    ]

    for {codec, fun} <- codecs do
      encoded = encode(chunks, fun)

      for threads <- [1, 4] do
        assert {:ok, ^expected} =
                 Native.decode_into(shape, 1, <<0>>, codec, chunk_shape, encoded, threads)
      end
    end

    small = Enum.take(chunks, 3) |> Enum.map(fn {b, s, d, _} -> {b, s, d, chunk_shape} end)

    for {codec, fun} <- [gzip: &Native.gzip_compress(&1, 1), bz2: &Native.bz2_compress(&1, 1)] do
      assert Native.decode_into({48, 16, 16}, 1, <<0>>, codec, chunk_shape, encode(small, fun), 2) ==
               Native.decode_into({48, 16, 16}, 1, <<0>>, :raw, chunk_shape, small, 2)
    end
  end

  test "a few large chunks (work for several threads, fewer jobs than a thread claims)" do
    # 3 zstd chunks of 8 MiB: more than a thread's share of bytes, so 2 threads split them
    {chunks, expected} = chunked({3 * 2048, 4096}, {2048, 4096}, 1, <<0>>)
    encoded = encode(chunks, &Native.zstd_compress(&1, 1, false))

    for threads <- [1, 2, 3] do
      assert {:ok, ^expected} =
               Native.decode_into(
                 {3 * 2048, 4096},
                 1,
                 <<0>>,
                 :zstd,
                 {2048, 4096},
                 encoded,
                 threads
               )
    end
  end

  test "no chunks: all fill; a 0-d array" do
    assert Native.decode_into({2, 3}, 2, <<1, 2>>, :raw, {1, 1}, [], 2) ==
             {:ok, :binary.copy(<<1, 2>>, 6)}

    assert Native.decode_into({}, 4, <<0, 0, 0, 0>>, :raw, {}, [{"abcd", {}, {}, {}}], 1) ==
             {:ok, "abcd"}
  end

  test "overlapping boxes on one thread are copied in order over the fill" do
    chunks = [{"abcd", {0}, {0}, {4}}, {"wxyz", {1}, {2}, {3}}]
    assert Native.decode_into({6}, 1, <<?.>>, :raw, {4}, chunks, 1) == {:ok, "abxyz."}
  end

  test "raw chunks cost their boxes, decoded ones their chunks, when choosing a dirty scheduler" do
    # a row of 64 chunks of 64x64 float64 (2 MiB): the first row of each (512 bytes), or all
    chunks = for _ <- 1..64, do: :crypto.strong_rand_bytes(64 * 64 * 8)
    {:ok, z} = Native.zstd_compress(hd(chunks), 1, false)

    jobs = fn data, rows ->
      for {c, j} <- Enum.with_index(data), do: {c, {0, 0}, {0, j * 64}, {rows, 64}}
    end

    for {codec, data, rows, dirty} <- [
          {:raw, chunks, 1, false},
          {:zstd, List.duplicate(IO.iodata_to_binary(z), 64), 1, true},
          {:raw, chunks, 64, true}
        ] do
      assert {^dirty, {:ok, _}} =
               Schedulers.dirty?(fn ->
                 Native.decode_into(
                   {rows, 4096},
                   8,
                   <<0::64>>,
                   codec,
                   {64, 64},
                   jobs.(data, rows),
                   1
                 )
               end)
    end
  end

  describe "bad input gives an error, never a crash" do
    setup do
      shape = {128, 128, 128}
      chunk_shape = {16, 16, 16}
      {chunks, _} = chunked(shape, chunk_shape, 1, <<0>>)
      # compressible chunks (random ones would be stored as they are)
      chunks = for {b, s, d, c} <- chunks, do: {:binary.copy(binary_part(b, 0, 16), 256), s, d, c}
      encoded = encode(chunks, &Native.blosc_compress(&1, "lz4", 5, 1, 1, 0))
      %{shape: shape, chunk_shape: chunk_shape, chunks: encoded}
    end

    test "a corrupt, truncated or wrong-size chunk among many", ctx do
      %{shape: shape, chunk_shape: cs, chunks: chunks} = ctx
      {b, s, d, c} = Enum.at(chunks, 300)
      <<head::binary-size(16), rest::binary>> = b
      other = ok!(Native.blosc_compress(:binary.copy(<<1>>, 100), "lz4", 5, 1, 1, 0))

      for bad <- [
            head <> :binary.copy(<<0xFF>>, byte_size(rest)),
            binary_part(b, 0, div(byte_size(b), 2)),
            "",
            other,
            :crypto.strong_rand_bytes(200)
          ] do
        chunks = List.replace_at(chunks, 300, {bad, s, d, c})

        for threads <- [1, 4] do
          assert {:error, {:corrupt_chunk, msg}} =
                   Native.decode_into(shape, 1, <<0>>, :blosc, cs, chunks, threads)

          assert msg =~ "chunk 300:"
        end
      end
    end

    test "raw chunks of the wrong size" do
      assert {:error, {:corrupt_chunk, "chunk 1: stored as 3 bytes, expected 4"}} =
               Native.decode_into(
                 {8},
                 1,
                 <<0>>,
                 :raw,
                 {4},
                 [{"abcd", {0}, {0}, {4}}, {"abc", {0}, {4}, {4}}],
                 1
               )
    end

    test "boxes outside the chunk or the destination" do
      for {src, dst, count} <- [
            {{1}, {0}, {4}},
            {{0}, {5}, {4}},
            {{0}, {0}, {9}},
            {{0xFFFFFFFFFFFFFFFF}, {0}, {1}},
            {{0}, {0xFFFFFFFFFFFFFFFE}, {4}}
          ] do
        assert {:error, {:decode_into, msg}} =
                 Native.decode_into({8}, 1, <<0>>, :raw, {4}, [{"abcd", src, dst, count}], 1)

        assert msg =~ "chunk 0:"
      end
    end

    test "malformed arguments" do
      for {args, reason} <- [
            {[{8}, 1, <<0, 0>>, :raw, {4}, [], 1], ~r/fill element/},
            {[{8}, 1, <<0>>, :raw, {4, 1}, [], 1], ~r/axes/},
            {[{8}, 1, <<0>>, :raw, {4}, [{"abcd", {0}, {0}}], 1], ~r/chunk 0 is not/},
            {[{8}, 1, <<0>>, :raw, {4}, [{:abcd, {0}, {0}, {4}}], 1], ~r/chunk 0 is not/},
            {[{8}, 1, <<0>>, :raw, {4}, [{"abcd", {0, 0}, {0}, {4}}], 1], ~r/chunk 0 is not/},
            {[{1 <<< 40, 1 <<< 40}, 8, <<0::64>>, :raw, {1, 1}, [], 1], ~r/too large/},
            {[{8}, 1, <<0>>, :raw, {1 <<< 40, 1 <<< 40}, [], 1], ~r/axes/}
          ] do
        assert {:error, {_, msg}} = apply(Native, :decode_into, args)
        assert msg =~ reason
      end

      for args <- [
            [{8}, 1, <<0>>, :brotli, {4}, [], 1],
            [[8], 1, <<0>>, :raw, {4}, [], 1],
            [{8}, 1, <<0>>, :raw, {4}, :not_a_list, 1],
            [{8}, 1, <<0>>, :raw, {4}, [], :many],
            [{-1}, 1, <<0>>, :raw, {4}, [], 1]
          ] do
        assert_raise ArgumentError, fn -> apply(Native, :decode_into, args) end
      end
    end

    test "a chunk shape too large to allocate" do
      assert {:error, {:decode_into, msg}} =
               Native.decode_into({8}, 8, <<0::64>>, :raw, {1 <<< 62}, [{"x", {0}, {0}, {1}}], 1)

      assert msg =~ "too large"
    end
  end

  describe "outbuf_put_batch" do
    test "places the chunks into an output buffer as decode_into builds them, beside other writes" do
      :rand.seed(:exsss, {3, 1, 4})

      for _ <- 1..30 do
        {shape, chunk_shape, itemsize, fill, chunks, expected} = random_chunked()

        codec = Enum.random([:raw, :zstd, :lz4])

        encoded =
          case codec do
            :raw -> chunks
            :zstd -> encode(chunks, &Native.zstd_compress(&1, 1, false))
            :lz4 -> encode(chunks, &Native.lz4_compress(&1, 1))
          end

        # the first chunk through outbuf_put, the rest in two batches
        [{first, src, dst, count} | rest] = chunks
        {a, b} = Enum.split(tl(encoded), div(length(rest), 2))
        {:ok, buf} = Native.outbuf_new(shape, itemsize)

        if first,
          do: :ok = Native.outbuf_put(buf, first, :raw, {chunk_shape, src, dst, count}),
          else: :ok = Native.outbuf_fill(buf, fill, {dst, count})

        for batch <- [a, b], threads = Enum.random([1, 3]) do
          assert Native.outbuf_put_batch(buf, fill, codec, chunk_shape, batch, threads) == :ok
        end

        assert Native.outbuf_finish(buf) == {:ok, expected}
      end
    end

    test "a failed batch writes nothing the buffer counts: it may be run again" do
      {chunks, expected} = chunked({8, 8}, {4, 4}, 1, <<0>>)
      encoded = encode(chunks, &Native.zstd_compress(&1, 1, false))
      [{bytes, s, d, c} | rest] = encoded
      bad = [{binary_part(bytes, 0, div(byte_size(bytes), 2)), s, d, c} | rest]
      {:ok, buf} = Native.outbuf_new({8, 8}, 1)

      assert {:error, {:corrupt_chunk, "chunk 0: " <> _}} =
               Native.outbuf_put_batch(buf, <<0>>, :zstd, {4, 4}, bad, 1)

      assert {:error, {:outbuf, _}} = Native.outbuf_finish(buf)
      {:ok, buf} = Native.outbuf_new({8, 8}, 1)
      assert {:error, _} = Native.outbuf_put_batch(buf, <<0>>, :zstd, {4, 4}, bad, 2)
      assert :ok = Native.outbuf_put_batch(buf, <<0>>, :zstd, {4, 4}, encoded, 2)
      assert Native.outbuf_finish(buf) == {:ok, expected}
    end

    test "bad arguments are errors, never a write outside the buffer" do
      {:ok, buf} = Native.outbuf_new({4}, 2)
      assert {:error, {:outbuf, _}} = Native.outbuf_put_batch(buf, <<0>>, :raw, {2}, [], 1)
      assert {:error, {:outbuf, _}} = Native.outbuf_put_batch(buf, <<0, 0>>, :raw, {2, 2}, [], 1)

      assert {:error, {:outbuf, _}} =
               Native.outbuf_put_batch(buf, <<0, 0>>, :raw, {2}, [{"abcd", {0}, {3}, {2}}], 1)

      assert {:error, {:decode_into, _}} =
               Native.outbuf_put_batch(buf, <<0, 0>>, :raw, {2}, [{"abcd", {0}}], 1)

      assert_raise ArgumentError, fn ->
        Native.outbuf_put_batch(buf, <<0, 0>>, :nope, {2}, [], 1)
      end

      assert :ok =
               Native.outbuf_put_batch(
                 buf,
                 <<0, 0>>,
                 :raw,
                 {2},
                 [{"abcd", {0}, {0}, {2}}, {nil, {0}, {2}, {2}}],
                 1
               )

      assert Native.outbuf_finish(buf) == {:ok, "abcd" <> <<0, 0, 0, 0>>}
      assert {:error, {:outbuf, _}} = Native.outbuf_put_batch(buf, <<0, 0>>, :raw, {2}, [], 1)
    end
  end
end
