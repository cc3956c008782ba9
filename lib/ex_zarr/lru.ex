defmodule ExZarr.LRU do
  @moduledoc false
  # A byte-bounded least-recently-used table in ETS, the core of `ExZarr.ChunkCache` (decoded
  # chunks) and `ExZarr.Storage.Cache` (stored values). Readers read it directly: a hit is an
  # ETS lookup in the reader's process, no message. Every change of contents (fills,
  # invalidations, evictions) is made by the owning process, one at a time, so that the byte
  # count stays exact and a fill can never bring back a value that a write has replaced.
  #
  # Tables (all public):
  #   * `data`: `{key, value, size, last_used, meta}`,
  #   * `index`: an ordered set of `{last_used, key}`, oldest first; readers add fresh entries
  #     on hits, and leftover entries whose `last_used` no longer matches `data` are dropped
  #     when eviction meets them,
  #   * `pending`: `{key, token}` for reads in flight; a write removes the key's entry, and a
  #     fill is only accepted while its token is still there.
  # Counters: 1 hits, 2 misses, 3 bytes cached, 4 evictions.
  use GenServer, restart: :temporary

  @enforce_keys [:server, :data, :index, :pending, :counters]
  defstruct [:server, :data, :index, :pending, :counters]

  @type t :: %__MODULE__{
          server: pid(),
          data: :ets.tid(),
          index: :ets.tid(),
          pending: :ets.tid(),
          counters: :counters.counters_ref()
        }

  @type stats :: %{
          hits: non_neg_integer(),
          misses: non_neg_integer(),
          evictions: non_neg_integer(),
          bytes: non_neg_integer(),
          entries: non_neg_integer()
        }

  @doc false
  # Options: `max_bytes:` (required), `owner:` (a pid: the table goes when it exits), `name:`.
  @spec start_link(keyword()) :: GenServer.on_start()
  def start_link(opts) do
    case Keyword.get(opts, :name) do
      nil -> GenServer.start_link(__MODULE__, opts)
      name -> GenServer.start_link(__MODULE__, opts, name: name)
    end
  end

  @doc false
  # The handle readers use.
  @spec handle(GenServer.server()) :: t()
  def handle(server), do: GenServer.call(server, :handle)

  @doc false
  # The value cached for `key` and its meta (the caller counts the hit or miss).
  @spec lookup(t(), term()) :: {:ok, term(), term()} | :miss
  def lookup(%__MODULE__{} = lru, key) do
    case :ets.lookup(lru.data, key) do
      [{_, value, _size, tick, meta}] ->
        touch(lru, key, tick)
        {:ok, value, meta}

      [] ->
        :miss
    end
  rescue
    ArgumentError -> :miss
  end

  @doc false
  # Whether a value is cached for `key` (no hit counted, its recency unchanged).
  @spec member?(t(), term()) :: boolean()
  def member?(%__MODULE__{data: data}, key) do
    :ets.member(data, key)
  rescue
    ArgumentError -> false
  end

  @doc false
  # Counts a lookup as a hit or a miss.
  @spec count(t(), :hit | :miss) :: :ok
  def count(%__MODULE__{counters: counters}, :hit), do: :counters.add(counters, 1, 1)
  def count(%__MODULE__{counters: counters}, :miss), do: :counters.add(counters, 2, 1)

  defp touch(lru, key, tick) do
    now = System.unique_integer([:monotonic])

    if :ets.update_element(lru.data, key, {4, now}) do
      :ets.delete(lru.index, tick)
      :ets.insert(lru.index, {now, key})
    end
  end

  @doc false
  # Replaces the meta of a cached entry (a revalidated one).
  @spec set_meta(t(), term(), term()) :: :ok
  def set_meta(%__MODULE__{} = lru, key, meta) do
    :ets.update_element(lru.data, key, {5, meta})
    :ok
  rescue
    ArgumentError -> :ok
  end

  @doc false
  # Registers a read of `key` about to go to the store; the token then lets `fill/6` cache
  # what it read, unless a write of the key happened in between. nil when the cache is gone.
  @spec register(t(), term()) :: reference() | nil
  def register(%__MODULE__{} = lru, key) do
    token = make_ref()
    :ets.insert(lru.pending, {key, token})
    token
  rescue
    ArgumentError -> nil
  end

  @doc false
  # Caches `value` (`size` bytes) for `key` if no write happened since `token` was registered.
  @spec fill(t(), term(), term(), non_neg_integer(), term(), reference() | nil) :: :ok
  def fill(_lru, _key, _value, _size, _meta, nil), do: :ok

  def fill(%__MODULE__{} = lru, key, value, size, meta, token),
    do: call(lru, {:fill, key, value, size, meta, token})

  @doc false
  # Withdraws a read registered with `register/2` that will not fill.
  @spec unregister(t(), term(), reference() | nil) :: :ok
  def unregister(_lru, _key, nil), do: :ok

  def unregister(%__MODULE__{} = lru, key, token) do
    :ets.delete_object(lru.pending, {key, token})
    :ok
  rescue
    ArgumentError -> :ok
  end

  @doc false
  # Registers a read of `key`, runs it (`{:ok, value, size, meta}` or an error) and caches its
  # value unless a write of the key happened meanwhile; `{:ok, value}` or the error.
  @spec read_through(t(), term(), (() -> {:ok, term(), non_neg_integer(), term()} | term())) ::
          {:ok, term()} | term()
  def read_through(%__MODULE__{} = lru, key, read) do
    token = register(lru, key)

    case read.() do
      {:ok, value, size, meta} ->
        fill(lru, key, value, size, meta, token)
        {:ok, value}

      error ->
        unregister(lru, key, token)
        error
    end
  end

  @doc false
  # Caches the value a write just stored, replacing any entry and any read in flight.
  @spec put(t(), term(), term(), non_neg_integer(), term()) :: :ok
  def put(%__MODULE__{} = lru, key, value, size, meta),
    do: call(lru, {:put, key, value, size, meta})

  @doc false
  # Forgets `key` and any read of it in flight (after a write or delete of the key).
  @spec invalidate(t(), term()) :: :ok
  def invalidate(%__MODULE__{} = lru, key), do: call(lru, {:invalidate, key})

  @doc false
  @spec stats(t()) :: stats()
  def stats(%__MODULE__{} = lru) do
    entries = :ets.info(lru.data, :size)

    %{
      hits: :counters.get(lru.counters, 1),
      misses: :counters.get(lru.counters, 2),
      evictions: :counters.get(lru.counters, 4),
      bytes: :counters.get(lru.counters, 3),
      entries: if(entries == :undefined, do: 0, else: entries)
    }
  end

  # A call to a cache process that has stopped is not an error: the cache is just off.
  defp call(lru, message) do
    GenServer.call(lru.server, message)
  catch
    :exit, _ -> :ok
  end

  @impl true
  def init(opts) do
    if owner = Keyword.get(opts, :owner), do: Process.monitor(owner)

    lru = %__MODULE__{
      server: self(),
      data:
        :ets.new(__MODULE__, [:set, :public, read_concurrency: true, write_concurrency: true]),
      index: :ets.new(__MODULE__, [:ordered_set, :public, write_concurrency: true]),
      pending: :ets.new(__MODULE__, [:set, :public, write_concurrency: true]),
      counters: :counters.new(4, [:write_concurrency])
    }

    {:ok, %{lru: lru, max_bytes: Keyword.fetch!(opts, :max_bytes)}}
  end

  @impl true
  def handle_call(:handle, _from, state), do: {:reply, state.lru, state}

  def handle_call({:fill, key, value, size, meta, token}, _from, %{lru: lru} = state) do
    if :ets.lookup(lru.pending, key) == [{key, token}] do
      forget(lru, key)
      store(state, key, value, size, meta)
    end

    {:reply, :ok, state}
  end

  def handle_call({:put, key, value, size, meta}, _from, %{lru: lru} = state) do
    forget(lru, key)
    store(state, key, value, size, meta)
    {:reply, :ok, state}
  end

  def handle_call({:invalidate, key}, _from, %{lru: lru} = state) do
    forget(lru, key)
    {:reply, :ok, state}
  end

  @impl true
  def handle_info({:DOWN, _ref, :process, _pid, _reason}, state), do: {:stop, :normal, state}

  defp store(state, _key, _value, size, _meta) when size > state.max_bytes, do: :ok

  defp store(%{lru: lru} = state, key, value, size, meta) do
    tick = System.unique_integer([:monotonic])
    :ets.insert(lru.data, {key, value, size, tick, meta})
    :ets.insert(lru.index, {tick, key})
    :counters.add(lru.counters, 3, size)
    evict(state)
  end

  # Drops the key's entry and any read of it in flight (whose fill would bring back the old value).
  defp forget(lru, key) do
    :ets.delete(lru.pending, key)

    case :ets.take(lru.data, key) do
      [{_, _, size, tick, _}] ->
        :ets.delete(lru.index, tick)
        :counters.sub(lru.counters, 3, size)

      [] ->
        :ok
    end
  end

  defp evict(%{lru: lru} = state) do
    with true <- :counters.get(lru.counters, 3) > state.max_bytes,
         tick when is_integer(tick) <- :ets.first(lru.index) do
      with [{_, key}] <- :ets.take(lru.index, tick),
           [{_, _, size, ^tick, _}] <- :ets.lookup(lru.data, key) do
        :ets.delete(lru.data, key)
        :counters.sub(lru.counters, 3, size)
        :counters.add(lru.counters, 4, 1)
      end

      evict(state)
    else
      _ -> :ok
    end
  end
end
