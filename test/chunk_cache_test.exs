Code.require_file("sharding/counting_store.exs", __DIR__)

defmodule ExZarr.ChunkCacheTest do
  use ExUnit.Case, async: true

  alias ExZarr.{Array, ChunkCache, Storage}
  alias ExZarr.Test.CountingStore

  doctest ChunkCache

  defp unique_name, do: :"chunk_cache_#{System.unique_integer([:positive])}"

  defp start_cache(max_bytes) do
    name = unique_name()
    start_supervised!({ChunkCache, name: name, max_bytes: max_bytes})
    name
  end

  # A 64x64 uint16 array in 16x16 chunks (512 bytes each) on a counting store, filled.
  defp counted_array(opts) do
    {:ok, mem} = Storage.new(:memory, [])
    {:ok, store} = Storage.new(CountingStore, inner: mem)

    {:ok, a} =
      ExZarr.create(
        [storage: store, shape: {64, 64}, chunks: {16, 16}, dtype: :uint16] ++
          Keyword.take(opts, [:shards, :compressor])
      )

    data = :crypto.strong_rand_bytes(64 * 64 * 2)
    :ok = Array.set_slice(a, data)
    {:ok, a} = Array.new(a.metadata, a.storage, Keyword.drop(opts, [:shards, :compressor]))
    CountingStore.reads(store)
    {a, store, data}
  end

  defp chunk(a, coords), do: ExZarr.Codec.Chunk.new(a.storage, Array.chunk_key(a, coords))

  defp rows(data, r0, r1), do: binary_part(data, r0 * 128, (r1 - r0) * 128)

  test "start_link and child_spec, stats, bad options" do
    name = start_cache(1_000_000)
    assert ChunkCache.stats(name) == %{hits: 0, misses: 0, evictions: 0, bytes: 0, entries: 0}
    assert %{id: {ChunkCache, ^name}} = ChunkCache.child_spec(name: name, max_bytes: 1)

    assert {:error, {:invalid_option, :max_bytes, 0}} =
             ChunkCache.start_link(name: unique_name(), max_bytes: 0)

    assert {:error, {:invalid_option, :name, "x"}} =
             ChunkCache.start_link(name: "x", max_bytes: 10)

    assert {:error, {:unknown_option, :max_byte}} =
             ChunkCache.start_link(name: unique_name(), max_bytes: 10, max_byte: 10)

    assert {:error, {:invalid_options, :nope}} = ChunkCache.start_link(:nope)

    assert {:error, {:no_chunk_cache, :no_such_cache}} =
             ExZarr.create(shape: {4}, chunks: {2}, chunk_cache: :no_such_cache)

    assert {:error, {:invalid_option, :chunk_cache, -1}} =
             ExZarr.create(shape: {4}, chunks: {2}, chunk_cache: -1)

    assert {:error, {:invalid_option, :recheck, :sometimes}} =
             ExZarr.create(shape: {4}, chunks: {2}, chunk_cache: name, recheck: :sometimes)
  end

  test "recheck: without chunk_cache: is refused, not dropped, and creates nothing" do
    dir = ExZarr.Test.Tmp.path("exzarr_recheck_")
    on_exit(fn -> File.rm_rf(dir) end)

    for recheck <- [:open, :always, :never] do
      assert {:error, {:option_requires, :recheck, :chunk_cache}} =
               ExZarr.create(path: dir, shape: {4}, chunks: {2}, recheck: recheck)

      refute File.exists?(Path.join(dir, "zarr.json"))
    end

    {:ok, _} = ExZarr.create(path: dir, shape: {4}, chunks: {2})

    assert {:error, {:option_requires, :recheck, :chunk_cache}} =
             ExZarr.open(path: dir, recheck: :always)

    assert {:ok, _} = ExZarr.open(path: dir, chunk_cache: 1_000_000, recheck: :always)
  end

  test "a name that is not a cache's is an error, and its process is not sent anything" do
    name = unique_name()
    {:ok, agent} = Agent.start_link(fn -> :state end, name: name)

    assert {:error, {:no_chunk_cache, ^name}} =
             ExZarr.create(shape: {4}, chunks: {2}, chunk_cache: name)

    assert Process.alive?(agent) and Agent.get(agent, & &1) == :state
    assert {:messages, []} = Process.info(agent, :messages)

    for other <- [name, unique_name(), "x", nil] do
      error = assert_raise ExZarr.Error, fn -> ChunkCache.stats(other) end
      assert error.reason == {:no_chunk_cache, other}
    end
  end

  test "a second read of the same chunks is served by the cache, without the store" do
    name = start_cache(1_000_000)
    {a, store, data} = counted_array(chunk_cache: name)

    assert Array.get_slice(a, start: {0, 0}, stop: {20, 64}) == {:ok, rows(data, 0, 20)}
    assert length(CountingStore.reads(store)) == 8
    assert %{misses: 8, hits: 0, entries: 8, bytes: 4096} = ChunkCache.stats(name)

    assert Array.get_slice(a, start: {4, 0}, stop: {40, 64}) == {:ok, rows(data, 4, 40)}
    # rows 32..39 are in the next row of chunks: only those 4 are read
    assert length(CountingStore.reads(store)) == 4
    assert %{hits: 8, misses: 12, entries: 12} = ChunkCache.stats(name)

    # a whole chunk, and read_chunk, hit too
    assert Array.read_chunk(a, {0, 0}) == Array.get_slice(a, start: {0, 0}, stop: {16, 16})
    assert CountingStore.reads(store) == []
  end

  test "cached?: held chunks are known without a hit counted; small reads of them need no task" do
    name = start_cache(4_000_000)
    # 256 KiB chunks: a box across four of them is a megabyte of decoding when not cached
    {:ok, a} =
      ExZarr.create(storage: :memory, shape: {1024, 1024}, chunks: {512, 512}, dtype: :uint8)

    data = :crypto.strong_rand_bytes(1024 * 1024)
    :ok = Array.set_slice(a, data)
    {:ok, a} = Array.new(a.metadata, a.storage, chunk_cache: name)
    refute ChunkCache.cached?(nil, chunk(a, {0, 0}))
    refute ChunkCache.cached?(a.chunk_cache, chunk(a, {0, 0}))
    {:ok, _} = Array.get_slice(a, start: {0, 0}, stop: {1024, 600})
    assert ChunkCache.cached?(a.chunk_cache, chunk(a, {1, 1}))
    # a key beside the grid (Array.chunk_key/2 refuses its coordinates)
    refute ChunkCache.cached?(a.chunk_cache, ExZarr.Codec.Chunk.new(a.storage, "c/0/2"))
    assert %{hits: 0, misses: 4} = ChunkCache.stats(name)

    # a small box across the four cached chunks is copied in this process: no task
    assert spawns(fn ->
             assert Array.get_slice(a, start: {500, 500}, stop: {520, 530}) ==
                      {:ok,
                       for(r <- 500..519, into: <<>>, do: binary_part(data, r * 1024 + 500, 30))}
           end) == 0

    assert %{hits: 4} = ChunkCache.stats(name)
  end

  # The processes this process spawns while running `fun`.
  defp spawns(fun) do
    tracer = spawn_link(fn -> count_spawns(0) end)
    :erlang.trace(self(), true, [:procs, {:tracer, tracer}])

    try do
      fun.()
    after
      :erlang.trace(self(), false, [:procs])
    end

    ref = :erlang.trace_delivered(self())
    assert_receive {:trace_delivered, _, ^ref}
    send(tracer, {:count, self()})
    assert_receive {:spawns, n}
    n
  end

  defp count_spawns(n) do
    receive do
      {:trace, _, :spawn, _, _} -> count_spawns(n + 1)
      {:trace, _, _, _} -> count_spawns(n)
      {:trace, _, _, _, _} -> count_spawns(n)
      {:count, from} -> send(from, {:spawns, n})
    end
  end

  test "hits are read from ETS by the caller: they work while the cache process is busy" do
    name = start_cache(1_000_000)
    {a, _store, data} = counted_array(chunk_cache: name)
    {:ok, _} = Array.get_slice(a)
    :ok = :sys.suspend(name)

    try do
      task = Task.async(fn -> Array.get_slice(a, start: {3, 3}, stop: {40, 50}) end)
      {:ok, got} = Task.await(task, 2_000)

      assert got ==
               for(r <- 3..39, into: <<>>, do: binary_part(data, r * 128 + 6, 47 * 2))
    after
      :sys.resume(name)
    end
  end

  test "bounded by bytes: the least recently used chunks are evicted" do
    name = start_cache(4 * 512)
    {a, _store, data} = counted_array(chunk_cache: name)
    assert Array.get_slice(a) == {:ok, data}
    stats = ChunkCache.stats(name)
    assert stats.bytes <= 4 * 512 and stats.entries <= 4
    assert stats.evictions >= 12
  end

  test "writes through ExZarr update the writer's cache and drop the chunks from others" do
    mine = start_cache(1_000_000)
    other = start_cache(1_000_000)
    {a, store, _data} = counted_array(chunk_cache: mine)
    {:ok, b} = Array.new(a.metadata, a.storage, chunk_cache: other)
    {:ok, _} = Array.get_slice(a)
    {:ok, _} = Array.get_slice(b)
    CountingStore.reads(store)

    :ok = Array.set_slice(a, :binary.copy(<<7, 0>>, 16 * 16), start: {0, 0}, stop: {16, 16})
    :ok = Array.set_slice(a, <<9, 0>>, start: {20, 20}, stop: {21, 21})
    # the partial write read its chunk once from the store, for its generation
    assert [{"c/1/1", nil, _}] = CountingStore.reads(store)

    {:ok, from_a} = Array.get_slice(a, start: {0, 0}, stop: {32, 32})
    assert CountingStore.reads(store) == []
    assert Array.get_slice(b, start: {0, 0}, stop: {32, 32}) == {:ok, from_a}
    # b read again the two chunks written, nothing else
    assert length(CountingStore.reads(store)) == 2
    assert binary_part(from_a, 0, 2) == <<7, 0>>
    assert binary_part(from_a, (20 * 32 + 20) * 2, 2) == <<9, 0>>
  end

  test "a chunk deleted by a write of the fill value, or by a resize, is dropped" do
    name = start_cache(1_000_000)
    {a, _store, _data} = counted_array(chunk_cache: name)
    {:ok, _} = Array.get_slice(a)
    :ok = Array.set_slice(a, :binary.copy(<<0, 0>>, 16 * 16), start: {0, 0}, stop: {16, 16})
    assert Array.read_chunk(a, {0, 0}) == {:error, :not_found}

    {:ok, small} = Array.resize(a, {16, 16})
    {:ok, big} = Array.resize(small, {64, 64})

    assert Array.get_slice(big, start: {16, 16}, stop: {64, 64}) ==
             {:ok, :binary.copy(<<0>>, 48 * 48 * 2)}
  end

  test "recheck: writers elsewhere are seen by handles opened later, unless :never" do
    name = start_cache(1_000_000)
    {a, store, data} = counted_array(chunk_cache: name)
    {:ok, _} = Array.get_slice(a)
    # another program rewrites a chunk behind ExZarr's back
    new = :binary.copy(<<1, 0>>, 16 * 16)
    {:ok, encoded} = ExZarr.Codec.Pipeline.encode(a.pipeline, new)
    :ok = Storage.put(store, "c/0/0", encoded)

    {:ok, never} = Array.new(a.metadata, store, chunk_cache: name, recheck: :never)
    assert Array.read_chunk(never, {0, 0}) == Array.read_chunk(a, {0, 0})
    assert {:ok, old} = Array.read_chunk(never, {0, 0})
    assert old != new

    for recheck <- [:open, :always] do
      {:ok, later} = Array.new(a.metadata, store, chunk_cache: name, recheck: recheck)
      assert Array.read_chunk(later, {0, 0}) == {:ok, new}, inspect(recheck)
    end

    assert binary_part(old, 0, 32) == binary_part(data, 0, 32)
  end

  test "recheck: :always checks every hit with the store's generation, :open trusts its own reads" do
    name = start_cache(1_000_000)
    {a, store, _data} = counted_array(chunk_cache: name, recheck: :always)
    {:ok, opened} = Array.new(a.metadata, store, chunk_cache: name, recheck: :open)
    {:ok, before} = Array.read_chunk(a, {0, 0})
    CountingStore.reads(store)

    # a hit costs one read of no bytes, on the generation the chunk was read from
    assert Array.read_chunk(a, {0, 0}) == {:ok, before}
    assert [{"c/0/0", {0, 0}, 0}] = CountingStore.reads(store)

    new = :binary.copy(<<1, 0>>, 16 * 16)
    {:ok, encoded} = ExZarr.Codec.Pipeline.encode(a.pipeline, new)
    :ok = Storage.put(store, "c/0/0", encoded)

    # read after that handle was opened, so trusted by :open; found stale by :always
    assert Array.read_chunk(opened, {0, 0}) == {:ok, before}
    assert Array.read_chunk(a, {0, 0}) == {:ok, new}
  end

  test "a private cache (chunk_cache: bytes) lives as long as the process that opened the array" do
    parent = self()

    pid =
      spawn(fn ->
        {:ok, a} = ExZarr.create(shape: {8}, chunks: {4}, dtype: :uint8, chunk_cache: 1024)
        :ok = Array.set_slice(a, "abcdefgh")
        {:ok, "abcdefgh"} = Array.get_slice(a)
        send(parent, {:array, a})
        receive do: (:stop -> :ok)
      end)

    assert_receive {:array, a}, 5_000
    assert %{entries: 2} = ChunkCache.stats(a.chunk_cache)
    ref = Process.monitor(a.chunk_cache.lru.server)
    send(pid, :stop)
    assert_receive {:DOWN, ^ref, :process, _, _}, 5_000
    # without its cache the array reads the store
    assert Array.get_slice(a) == {:ok, "abcdefgh"}
  end

  test "sharded arrays cache their shards' indexes" do
    name = start_cache(1_000_000)
    {a, store, data} = counted_array(chunk_cache: name, shards: {32, 32}, compressor: nil)

    assert Array.get_slice(a, start: {0, 0}, stop: {8, 8}) ==
             {:ok, for(r <- 0..7, into: <<>>, do: binary_part(data, r * 128, 16))}

    assert [{"c/0/0", {:suffix, _}, _}, _] = CountingStore.reads(store)
    assert {:ok, _} = Array.get_slice(a, start: {16, 16}, stop: {20, 20})
    assert [{"c/0/0", {_, _}, _}] = CountingStore.reads(store)
  end

  test "sharded arrays cache their inner chunks, valid with the index they were read with" do
    name = start_cache(1_000_000)
    {a, store, data} = counted_array(chunk_cache: name, shards: {32, 32}, compressor: nil)
    expected = for(r <- 0..19, into: <<>>, do: binary_part(data, r * 128, 40))
    assert Array.get_slice(a, start: {0, 0}, stop: {20, 20}) == {:ok, expected}
    assert [_index, _chunks] = CountingStore.reads(store)
    assert Array.get_slice(a, start: {0, 0}, stop: {20, 20}) == {:ok, expected}
    assert CountingStore.reads(store) == []

    # a write through another handle drops the index: the chunks are read again
    {:ok, plain} = Array.new(a.metadata, store)
    :ok = Array.set_slice(plain, <<5, 0>>, start: {0, 0}, stop: {1, 1})
    CountingStore.reads(store)
    {:ok, got} = Array.get_slice(a, start: {0, 0}, stop: {20, 20})
    assert binary_part(got, 0, 2) == <<5, 0>>
    assert [_index | _] = CountingStore.reads(store)
  end

  test "variable-length arrays are cached too" do
    name = start_cache(1_000_000)
    {:ok, a} = ExZarr.create(shape: {6}, chunks: {2}, dtype: :string, chunk_cache: name)
    :ok = Array.set_slice(a, ~w(a b c d e f))
    {:ok, a} = Array.new(a.metadata, a.storage, chunk_cache: name)
    assert Array.get_slice(a, start: {1}, stop: {5}) == {:ok, ~w(b c d e)}
    assert Array.get_slice(a, start: {1}, stop: {5}) == {:ok, ~w(b c d e)}
    assert %{hits: 3, misses: 3} = ChunkCache.stats(name)
    :ok = Array.set_slice(a, ["x"], start: {2}, stop: {3})
    assert Array.get_slice(a) == {:ok, ~w(a b x d e f)}
    # (reads cache a chunk's items as their layout)
    {:ok, a} = Array.new(a.metadata, a.storage, chunk_cache: start_cache(1_000_000))
    assert Array.read_chunk(a, {0}) == {:ok, ~w(a b)}
    assert Array.read_chunk(a, {0}) == {:ok, ~w(a b)}
    assert Array.get_slice(a, start: {1}, stop: {3}) == {:ok, ~w(b x)}
  end

  test "sharded variable-length arrays cache inner chunks; a corrupt one is an error" do
    name = start_cache(1_000_000)
    items = for i <- 1..16, do: :binary.copy(<<i>>, i)

    {:ok, a} =
      ExZarr.create(shape: {16}, chunks: {2}, shards: {8}, dtype: :bytes, compressor: nil)

    :ok = Array.set_slice(a, items)
    {:ok, a} = Array.new(a.metadata, a.storage, chunk_cache: name)

    for _ <- 1..2,
        do: assert(Array.get_slice(a, start: {3}, stop: {13}) == {:ok, Enum.slice(items, 3..12)})

    assert %{hits: hits} = ChunkCache.stats(name)
    assert hits > 0
    # a chunk whose layout is cut short is the chunk's fault, through the cache as without
    {:ok, b} = ExZarr.create(shape: {4}, chunks: {2}, dtype: :string, compressor: nil)
    :ok = Storage.put(b.storage, "c/1", <<2::little-32, 5::little-32, "ab">>)
    {:ok, cached} = Array.new(b.metadata, b.storage, chunk_cache: start_cache(1_000_000))

    for array <- [b, cached],
        do: assert({:error, {:corrupt_chunk, "c/1", _}} = Array.get_slice(array))
  end

  test "concurrent readers and writers through cached handles read what was written" do
    name = start_cache(16 * 512)
    {a, _store, _data} = counted_array(chunk_cache: name)

    1..200
    |> Task.async_stream(
      fn i ->
        r = rem(i * 7, 64)

        if rem(i, 3) == 0,
          do:
            Array.set_slice(a, :binary.copy(<<rem(i, 256), 0>>, 64),
              start: {r, 0},
              stop: {r + 1, 64}
            ),
          else: Array.get_slice(a, start: {r, 0}, stop: {r + 1, 64})
      end,
      max_concurrency: 8
    )
    |> Stream.run()

    {:ok, plain} = Array.new(a.metadata, a.storage)
    assert Array.get_slice(a) == Array.get_slice(plain)
  end
end
