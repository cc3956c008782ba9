defmodule ExZarr.Native.BufpoolTest do
  # The pool of large outputs (c_src/bufpool.c) behind ExZarr.Native.outbuf_*, gathered chunks
  # and the codecs' outputs: results of exactly the size asked for whatever buffer they reuse,
  # reuse of a freed buffer, its bounds (128 KiB and more, 256 buffers, 256 MiB, 5 s idle),
  # many processes at once. The pool is global: not async.
  use ExUnit.Case, async: false

  import Bitwise, only: [<<<: 2]

  alias ExZarr.Native

  @mib 1 <<< 20
  @kib 1 <<< 10
  @min_pooled 128 * @kib
  @max_buffers 256
  @max_bytes 256 * @mib

  # An outbuf result of n bytes all `byte`, made in a process that then exits (so that its
  # memory goes back to the pool); returns whether it had exactly n bytes, all `byte`.
  defp result_ok?(n, byte) do
    Task.async(fn ->
      {:ok, buf} = Native.outbuf_new({n}, 1)
      :ok = Native.outbuf_fill(buf, <<byte>>, {{0}, {n}})
      {:ok, bin} = Native.outbuf_finish(buf)
      byte_size(bin) == n and bin == :binary.copy(<<byte>>, n)
    end)
    |> Task.await(30_000)
  end

  # Waits (a resource's destructor may run a little after its last reference goes) until the
  # pool holds what `fun` accepts; the last {buffers, bytes} seen.
  defp until_pool(fun, tries \\ 100) do
    poll(
      fn ->
        :erlang.garbage_collect()
        Native.bufpool_info()
      end,
      fun,
      tries,
      20
    )
  end

  # Calls `probe` every `interval` ms until `accept` takes its value (returned), at most `tries`
  # times.
  defp poll(probe, accept, tries, interval) do
    value = probe.()

    cond do
      accept.(value) ->
        value

      tries == 0 ->
        flunk("still #{inspect(value)} after the last try")

      true ->
        Process.sleep(interval)
        poll(probe, accept, tries - 1, interval)
    end
  end

  defp drain, do: until_pool(&(&1 == {0, 0}), 400)

  @tag timeout: 60_000
  test "a result has exactly the size asked for, also in a larger pooled buffer" do
    drain()
    assert result_ok?(4 * @mib, 1)
    assert {1, bytes} = until_pool(&(elem(&1, 0) == 1))
    assert bytes == 4 * @mib
    # 3.5 MiB fits the 4 MiB buffer (a quarter of it wasted at most): taken, then given back
    assert result_ok?(3 * @mib + div(@mib, 2), 2)
    assert until_pool(&(elem(&1, 0) == 1)) == {1, 4 * @mib}
    # 2 MiB would waste half of it: a buffer of its own
    assert result_ok?(2 * @mib, 3)
    assert until_pool(&(elem(&1, 0) == 2)) == {2, 6 * @mib}
  end

  test "outputs under 128 KiB and empty outputs are not pooled" do
    {n0, b0} = Native.bufpool_info()
    assert result_ok?(@min_pooled - 1, 4)
    assert result_ok?(0, 5)
    :erlang.garbage_collect()
    Process.sleep(50)
    # nothing added (the idle trim may have taken some away meanwhile)
    {n1, b1} = Native.bufpool_info()
    assert n1 <= n0 and b1 <= b0
  end

  test "at most 256 buffers, however many results are freed at once" do
    # 300 live decoded chunks of 128 KiB, then all freed together (the frame's encoder took a
    # pooled buffer of its bound: drained first)
    frame = :binary.copy(<<9>>, @min_pooled) |> Native.zstd_compress(1, false) |> elem(1)
    drain()

    Task.async(fn ->
      chunks = for _ <- 1..300, do: elem(Native.zstd_decompress(frame, @min_pooled, true), 1)
      assert Enum.all?(chunks, &(&1 == :binary.copy(<<9>>, @min_pooled)))
    end)
    |> Task.await(30_000)

    assert until_pool(&(elem(&1, 0) == @max_buffers)) ==
             {@max_buffers, @max_buffers * @min_pooled}
  end

  test "at most 256 MiB, however many results are freed at once" do
    drain()
    # 12 live results of 40 MiB (480 MiB), then all freed together
    parent = self()

    holders =
      for i <- 1..12 do
        spawn(fn ->
          {:ok, buf} = Native.outbuf_new({40 * @mib}, 1)
          :ok = Native.outbuf_fill(buf, <<i>>, {{0}, {40 * @mib}})
          {:ok, bin} = Native.outbuf_finish(buf)
          send(parent, {:made, byte_size(bin)})
          receive do: (:go -> :ok)
        end)
      end

    for _ <- holders, do: assert_receive({:made, n} when n == 40 * @mib, 30_000)
    Enum.each(holders, &send(&1, :go))
    {n, bytes} = until_pool(&(elem(&1, 1) >= 6 * 40 * @mib))
    # the newest six 40 MiB buffers stay (older ones went first to make room)
    assert n <= 6 and bytes <= @max_bytes
    assert bytes >= 6 * 40 * @mib
  end

  test "a decoded chunk of 128 KiB and more takes pooled memory and gives it back" do
    data = :crypto.strong_rand_bytes(256 * @kib)
    {:ok, frame} = Native.zstd_compress(data, 1, false)
    drain()
    decode = fn -> Native.zstd_decompress(frame, byte_size(data), true) end
    assert Task.async(decode) |> Task.await() == {:ok, data}
    assert until_pool(&(&1 == {1, 256 * @kib})) == {1, 256 * @kib}
    # the next one takes that buffer while it lives (a list of decoded chunks kept by the
    # caller no longer needs fresh pages for each chunk)
    assert Task.async(fn -> {decode.(), Native.bufpool_info()} end) |> Task.await() ==
             {{:ok, data}, {0, 0}}
  end

  test "a compressed chunk moves from a pooled buffer of its bound to one of its size" do
    drain()
    data = :crypto.strong_rand_bytes(@mib) <> :binary.copy(<<0>>, @mib)
    {:ok, frame} = Native.zstd_compress(data, 1, false)
    # while the frame lives, the bound-sized buffer is back in the pool, at once (not when the
    # VM gets round to a destructor: the next chunk's encoder wants it)
    assert {1, bound} = Native.bufpool_info()
    assert bound > byte_size(data)
    assert byte_size(frame) > @min_pooled and byte_size(frame) < div(bound * 3, 4)
    assert Native.zstd_decompress(frame, byte_size(data), true) == {:ok, data}
  end

  test "a compressed chunk with a bound of 8 MiB and more stays in that buffer" do
    drain()
    data = :crypto.strong_rand_bytes(4 * @mib) <> :binary.copy(<<0>>, 8 * @mib)

    {size, pooled, decoded?} =
      Task.async(fn ->
        {:ok, frame} = Native.zstd_compress(data, 1, false)
        # no second output: the bound-sized buffer is not back in the pool
        pooled = Native.bufpool_info()

        {byte_size(frame), pooled,
         Native.zstd_decompress(frame, byte_size(data), true) == {:ok, data}}
      end)
      |> Task.await(30_000)

    assert pooled == {0, 0}
    assert size < div(byte_size(data), 2) and decoded?
    # with the task gone, the frame's buffer of its bound and the decoded chunk's go back
    assert {2, bytes} = until_pool(&(elem(&1, 0) == 2))
    assert bytes > 2 * byte_size(data)
  end

  # Decoded data whose size the codec learns as it goes: into an output first sized from the
  # input, grown, and shrunk in place or moved to a smaller one at the end.
  test "decoders streaming into pooled memory give exactly the decoded bytes" do
    shapes = [
      # grown from 800 KiB to its 2.2 MiB, then moved to an output of its size
      :crypto.strong_rand_bytes(200 * @kib) <> :binary.copy(<<0>>, 2 * @mib),
      # a 400 KiB first guess moved to 100 KiB (under the pooled size)
      :crypto.strong_rand_bytes(100 * @kib),
      # a 1.4 MiB first guess moved to a 350 KiB pooled output
      :crypto.strong_rand_bytes(350 * @kib)
    ]

    for data <- shapes,
        {compress, decompress} <- [
          {&Native.gzip_compress(&1, 1), &Native.gzip_decompress/3},
          {&Native.zlib_compress(&1, 1), &Native.zlib_decompress/3},
          {&Native.bz2_compress(&1, 1), &Native.bz2_decompress/3}
        ] do
      {:ok, packed} = compress.(data)
      assert decompress.(packed, 8 * @mib, false) == {:ok, data}
      assert decompress.(packed, byte_size(data), true) == {:ok, data}
    end

    # a zstd frame without a content size into a 1.1x output: shrunk in place
    blocks = for _ <- 1..3, do: :crypto.strong_rand_bytes(100 * @kib)
    frame = ExZarr.Test.Codecs.zstd_stream_frame(Enum.map(blocks, &{:raw, &1}))
    data = IO.iodata_to_binary(blocks)
    assert Native.zstd_decompress(frame, div(byte_size(data) * 11, 10), false) == {:ok, data}
  end

  test "many processes reading and freeing at once get their own bytes" do
    sizes = [@mib, 2 * @mib, 3 * @mib, 5 * @mib, 9 * @mib]

    results =
      1..64
      |> Task.async_stream(fn i -> result_ok?(Enum.at(sizes, rem(i, 5)), rem(i, 251)) end,
        max_concurrency: 16,
        timeout: 60_000
      )
      |> Enum.map(fn {:ok, ok?} -> ok? end)

    assert Enum.all?(results)
    {n, bytes} = Native.bufpool_info()
    assert n <= @max_buffers and bytes <= @max_bytes
  end

  @tag timeout: 60_000
  test "buffers unused for 5 seconds are freed" do
    assert result_ok?(2 * @mib, 6)
    assert {n, _} = until_pool(&(elem(&1, 0) >= 1))
    assert n >= 1
    assert drain() == {0, 0}
  end

  test "a result's memory goes back when the result is garbage, though its buffer term lives" do
    drain()
    {:ok, buf} = Native.outbuf_new({2 * @mib}, 1)
    :ok = Native.outbuf_fill(buf, <<7>>, {{0}, {2 * @mib}})
    {:ok, bin} = Native.outbuf_finish(buf)
    assert byte_size(bin) == 2 * @mib
    # (as tasks that wrote into it may hold the term a while after the read)
    holder = spawn(fn -> receive do: (:go -> send(self(), buf)) end)
    assert until_pool(&(&1 == {1, 2 * @mib})) == {1, 2 * @mib}
    assert {:error, _} = Native.outbuf_fill(buf, <<8>>, {{0}, {1}})
    send(holder, :go)
  end

  # An 8 MiB array on disk, read in a loop by a new process after `setup` ran in it: each
  # read must reuse the last (dead) result's memory, leaving no buffer in the pool.
  defp read_in_loop(setup) do
    data = :crypto.strong_rand_bytes(8 * @mib)
    path = ExZarr.Test.Tmp.path("bufpool_")

    try do
      array =
        ExZarr.create!(
          shape: {8 * @mib},
          chunks: {2 * @mib},
          dtype: :uint8,
          storage: :filesystem,
          path: path
        )

      :ok = ExZarr.Array.set_slice(array, data)

      Task.async(fn ->
        kept = setup.()
        drain()

        for _ <- 1..4 do
          assert ExZarr.Array.get_slice!(array) == data
          {n, _} = Native.bufpool_info()
          assert n == 0
        end

        kept
      end)
      |> Task.await(60_000)
    after
      File.rm_rf!(path)
    end
  end

  test "reads in a loop in one process reuse the last result's memory" do
    # without a collection, this process would still hold each dead result when the next
    # read allocates: one buffer per read would be in use, not one in all
    read_in_loop(fn -> nil end)
  end

  test "reads in a loop reuse the last result's memory in a process with a large old heap" do
    # a heap too large for a full collection before each read (9 MB, most of it old): the
    # dead result is in the young heap, which a minor collection frees
    read_in_loop(fn ->
      kept = Enum.to_list(1..300_000)
      :erlang.garbage_collect(self(), type: :minor)
      :erlang.garbage_collect(self(), type: :minor)

      [total_heap_size: total, heap_size: young] =
        Process.info(self(), [:total_heap_size, :heap_size])

      assert total * 64 > 8 * @mib and young * 16 <= 8 * @mib
      kept
    end)
  end

  test "a gathered chunk of 1 MiB and more comes from the pool and goes back to it" do
    drain()
    n = 2 * @mib
    data = :crypto.strong_rand_bytes(2 * n)

    gathered =
      Task.async(fn ->
        # the second half of each 4 KiB row: a 1024 x 2048 box of a 1024 x 4096 source
        piece = {data, {1024, 4096}, {0, 2048}, {0, 0}, {1024, 2048}}
        {:ok, bin} = Native.copy_regions({1024, 2048}, 1, {:fill, <<0>>}, [piece])
        expected = for <<_::binary-2048, half::binary-2048 <- data>>, into: <<>>, do: half
        bin == expected
      end)
      |> Task.await(30_000)

    assert gathered
    assert until_pool(&(&1 == {1, n})) == {1, n}
  end

  @tag timeout: 60_000
  test "pcodec's working memory goes back once unused for 5 seconds" do
    data = for i <- 1..(1 <<< 20), into: <<>>, do: <<:math.sin(i / 100)::float-64-little>>

    case Native.pco_compress(data, 9, {8, 0, 0, 0, 262_144}) do
      {:ok, packed} ->
        assert {:ok, ^data} = Native.pco_decompress(packed, 9, byte_size(data))
        assert Native.pco_kept_bytes() > 0
        assert poll(&Native.pco_kept_bytes/0, &(&1 == 0), 150, 100) == 0

      {:error, {:pcodec, _}} ->
        # built without pcodec (no cargo): nothing is kept
        assert Native.pco_kept_bytes() == 0
    end
  end

  test "a full read reuses the pool: same bytes as written, read after read" do
    data = :crypto.strong_rand_bytes(8 * @mib)
    path = ExZarr.Test.Tmp.path("bufpool_")

    try do
      array =
        ExZarr.create!(
          shape: {@mib},
          chunks: {div(@mib, 4)},
          dtype: :float64,
          storage: :filesystem,
          path: path,
          compressor: %{id: "zstd", level: 1}
        )

      :ok = ExZarr.Array.set_slice(array, data)

      for _ <- 1..4 do
        assert Task.async(fn -> ExZarr.Array.get_slice!(array) == data end) |> Task.await()
        assert {n, _} = until_pool(&(elem(&1, 0) >= 1))
        assert n <= @max_buffers
      end
    after
      File.rm_rf!(path)
    end
  end
end
