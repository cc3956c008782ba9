defmodule ExZarr.Storage.CacheTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage
  alias ExZarr.Storage.Cache

  use ExZarr.StorageConformance,
    backend: Cache,
    opts: fn _ctx -> [inner: {:memory, owner: self()}, owner: self(), max_bytes: 64_000_000] end

  defp cache(inner, max_bytes) do
    {:ok, store} = Storage.new(Cache, inner: inner, owner: self(), max_bytes: max_bytes)
    store
  end

  defp cached_keys(store) do
    store.state.lru.data |> :ets.select([{{:"$1", :_, :_, :_, :_}, [], [:"$1"]}]) |> Enum.sort()
  end

  setup do
    {:ok, inner} = Storage.new(:memory, owner: self())
    %{inner: inner}
  end

  test "hits are served from memory, without the inner store", %{inner: inner} do
    store = cache(inner, 1000)
    :ok = Storage.put(store, "k", "v1")
    assert Storage.get(store, "k") == {:ok, "v1"}
    # Change the inner store behind the cache's back: the cached value is what we get.
    :ok = Storage.put(inner, "k", "changed")
    assert Storage.get(store, "k") == {:ok, "v1"}
    assert Storage.get(store, "k", {:suffix, 1}) == {:ok, "1"}
    assert Storage.get_ranges(store, "k", [{0, 1}, {1, 1}]) == {:ok, ["v", "1"]}
    assert %{hits: 3, misses: 1, bytes: 2, entries: 1} = Cache.stats(store.state)
  end

  test "writes and deletes go through and invalidate", %{inner: inner} do
    store = cache(inner, 1000)
    :ok = Storage.put(store, "k", "v1")
    {:ok, "v1"} = Storage.get(store, "k")
    :ok = Storage.put(store, "k", "v2")
    assert Storage.get(inner, "k") == {:ok, "v2"}
    assert Storage.get(store, "k") == {:ok, "v2"}
    :ok = Storage.delete(store, "k")
    assert Storage.get(inner, "k") == {:error, :not_found}
    assert Storage.get(store, "k") == {:error, :not_found}
    assert %{bytes: 0, entries: 0} = Cache.stats(store.state)
  end

  test "bounded by bytes, least recently used evicted first", %{inner: inner} do
    store = cache(inner, 300)
    for k <- ~w(a b c), do: :ok = Storage.put(inner, k, :binary.copy(k, 100))
    for k <- ~w(a b c), do: {:ok, _} = Storage.get(store, k)
    assert %{bytes: 300, entries: 3} = Cache.stats(store.state)
    # Use "a" so that "b" is now the least recently used; adding "d" evicts "b".
    {:ok, _} = Storage.get(store, "a")
    :ok = Storage.put(inner, "d", :binary.copy("d", 100))
    {:ok, _} = Storage.get(store, "d")
    assert %{bytes: 300, entries: 3} = Cache.stats(store.state)

    assert cached_keys(store) == ~w(a c d)
    # A write to a cached key frees its bytes.
    :ok = Storage.put(store, "c", "new")
    assert cached_keys(store) == ~w(a d)
    assert %{bytes: 200} = Cache.stats(store.state)
  end

  test "values bigger than the cache are not cached", %{inner: inner} do
    store = cache(inner, 10)
    :ok = Storage.put(store, "big", :binary.copy("x", 11))
    {:ok, _} = Storage.get(store, "big")
    assert %{bytes: 0, entries: 0} = Cache.stats(store.state)
  end

  test "ranged misses go to the inner store and do not fill", %{inner: inner} do
    store = cache(inner, 1000)
    :ok = Storage.put(store, "k", "0123456789")
    assert Storage.get(store, "k", {2, 3}) == {:ok, "234"}
    assert %{entries: 0, misses: 1} = Cache.stats(store.state)
  end

  test "a read in flight during a write does not cache the old value", %{inner: inner} do
    store = cache(inner, 1000)
    :ok = Storage.put(inner, "k", "old")
    lru = store.state.lru
    # Replay the interleaving: a reader registers and fetches "old", a write lands, then the
    # reader's fill arrives.
    token = ExZarr.LRU.register(lru, "k")
    :ok = Storage.put(store, "k", "new")
    :ok = ExZarr.LRU.fill(lru, "k", "old", 3, nil, token)
    assert Storage.get(store, "k") == {:ok, "new"}
  end

  test "many readers and writers keep the cache consistent with the inner store", %{inner: inner} do
    store = cache(inner, 2_000)
    keys = for i <- 1..20, do: "c/#{i}"
    for k <- keys, do: :ok = Storage.put(store, k, k <> ":0")

    1..400
    |> Task.async_stream(
      fn i ->
        key = Enum.at(keys, rem(i * 7, 20))

        if rem(i, 5) == 0,
          do: Storage.put(store, key, "#{key}:#{i}"),
          else: Storage.get(store, key)
      end,
      max_concurrency: 8
    )
    |> Stream.run()

    for k <- keys, do: assert(Storage.get(store, k) == Storage.get(inner, k))
    stats = Cache.stats(store.state)
    assert stats.bytes <= 2_000

    assert stats.bytes ==
             :ets.select(store.state.lru.data, [{{:_, :_, :"$1", :_, :_}, [], [:"$1"]}])
             |> Enum.sum()
  end

  test "when the cache process is gone the store reads the inner store", %{inner: inner} do
    store = cache(inner, 1000)
    :ok = Storage.put(store, "k", "v")
    {:ok, "v"} = Storage.get(store, "k")
    :ok = Cache.close(store.state)
    refute Process.alive?(store.state.lru.server)
    :ok = Storage.put(store, "k", "v2")
    assert Storage.get(store, "k") == {:ok, "v2"}
    assert Storage.list(store) == {:ok, ["k"]}
  end

  test "the cache stops with its owner", %{inner: inner} do
    owner = spawn(fn -> receive do: (:stop -> :ok) end)
    {:ok, store} = Storage.new(Cache, inner: inner, owner: owner)
    ref = Process.monitor(store.state.lru.server)
    send(owner, :stop)
    assert_receive {:DOWN, ^ref, :process, _, :normal}
  end

  @tag :tmp_dir
  test "an open store or backend options as the inner store; bad options", %{tmp_dir: dir} do
    {:ok, store} = Storage.new(Cache, inner: {:filesystem, path: dir}, owner: self())
    :ok = Storage.put(store, "a/b", "v")
    assert File.read!(Path.join(dir, "a/b")) == "v"
    assert Storage.supports_ranges?(store)

    assert Storage.new(Cache, []) == {:error, {:missing_option, :inner}}
    assert Storage.new(Cache, inner: :memory) == {:error, {:invalid_option, :inner, :memory}}

    assert Storage.new(Cache, inner: {:filesystem, []}) ==
             {:error, {:inner_store, {:missing_option, :path}}}

    assert Storage.new(Cache, inner: {:memory, []}, max_bytes: 0) ==
             {:error, {:invalid_option, :max_bytes, 0}}
  end
end

defmodule ExZarr.Storage.CacheOverFilesystemTest do
  # A tiny cache over the filesystem: most values are evicted or too big, so the conformance
  # tests exercise the eviction and pass-through paths.
  use ExUnit.Case, async: true
  @moduletag :tmp_dir

  use ExZarr.StorageConformance,
    backend: ExZarr.Storage.Cache,
    opts: fn ctx -> [inner: {:filesystem, path: ctx.tmp_dir}, owner: self(), max_bytes: 5_000] end
end
