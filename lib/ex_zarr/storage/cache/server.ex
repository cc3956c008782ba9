defmodule ExZarr.Storage.Cache.Server do
  @moduledoc """
  The process behind one `ExZarr.Storage.Cache`: it owns the cache's ETS tables and makes every
  change to their contents (fills, invalidations, evictions), one at a time, so that the byte
  count stays exact and a fill can never bring back a value that a write has replaced.
  Readers never call it on a hit: they read the tables directly.

  Tables (all public):
    * `data` - `{key, value, byte_size, last_used}`,
    * `index` - an ordered set of `{last_used, key}`, oldest first; readers add fresh entries
      on hits, and leftover entries whose `last_used` no longer matches `data` are dropped
      when eviction meets them,
    * `pending` - `{key, token}` for reads in flight; a write removes the key's entry, and a
      fill is only accepted while its token is still there.

  Counters: 1 hits, 2 misses, 3 bytes cached.
  """
  use GenServer, restart: :temporary

  @type tables :: %{
          data: :ets.tid(),
          index: :ets.tid(),
          pending: :ets.tid(),
          counters: :counters.counters_ref()
        }

  @doc false
  @spec start_link({pos_integer(), pid() | nil}) :: GenServer.on_start()
  def start_link({max_bytes, owner}), do: GenServer.start_link(__MODULE__, {max_bytes, owner})

  @doc "The tables and counters readers use."
  @spec tables(pid()) :: tables()
  def tables(server), do: GenServer.call(server, :tables)

  @doc "Caches `value` for `key` if no write happened since the read registered `token`."
  @spec fill(pid(), String.t(), binary(), reference()) :: :ok
  def fill(server, key, value, token), do: GenServer.call(server, {:fill, key, value, token})

  @doc "Forgets `key` and any read of it in flight (after a write or delete of the key)."
  @spec invalidate(pid(), String.t()) :: :ok
  def invalidate(server, key), do: GenServer.call(server, {:invalidate, key})

  @impl true
  def init({max_bytes, owner}) do
    if owner, do: Process.monitor(owner)

    tables = %{
      data:
        :ets.new(:ex_zarr_cache, [:set, :public, read_concurrency: true, write_concurrency: true]),
      index: :ets.new(:ex_zarr_cache_lru, [:ordered_set, :public, write_concurrency: true]),
      pending: :ets.new(:ex_zarr_cache_pending, [:set, :public, write_concurrency: true]),
      counters: :counters.new(3, [:write_concurrency])
    }

    {:ok, Map.put(tables, :max_bytes, max_bytes)}
  end

  @impl true
  def handle_call(:tables, _from, state), do: {:reply, Map.delete(state, :max_bytes), state}

  def handle_call({:fill, key, value, token}, _from, state) do
    if :ets.lookup(state.pending, key) == [{key, token}] do
      :ets.delete(state.pending, key)
      remove(state, key)
      store(state, key, value)
    end

    {:reply, :ok, state}
  end

  def handle_call({:invalidate, key}, _from, state) do
    :ets.delete(state.pending, key)
    remove(state, key)
    {:reply, :ok, state}
  end

  @impl true
  def handle_info({:DOWN, _ref, :process, _pid, _reason}, state), do: {:stop, :normal, state}

  defp store(state, _key, value) when byte_size(value) > state.max_bytes, do: :ok

  defp store(state, key, value) do
    size = byte_size(value)
    tick = System.unique_integer([:monotonic])
    :ets.insert(state.data, {key, value, size, tick})
    :ets.insert(state.index, {tick, key})
    :counters.add(state.counters, 3, size)
    evict(state)
  end

  defp remove(state, key) do
    case :ets.take(state.data, key) do
      [{_, _, size, tick}] ->
        :ets.delete(state.index, tick)
        :counters.sub(state.counters, 3, size)

      [] ->
        :ok
    end
  end

  defp evict(state) do
    with true <- :counters.get(state.counters, 3) > state.max_bytes,
         tick when is_integer(tick) <- :ets.first(state.index) do
      with [{_, key}] <- :ets.take(state.index, tick),
           [{_, _, size, ^tick}] <- :ets.lookup(state.data, key) do
        :ets.delete(state.data, key)
        :counters.sub(state.counters, 3, size)
      end

      evict(state)
    else
      _ -> :ok
    end
  end
end
