defmodule ExZarr.Storage.Cache do
  @moduledoc """
  A read cache in memory in front of any other store: bounded by bytes, least recently used
  values evicted first, read concurrently by any number of processes.

      {:ok, store} =
        ExZarr.Storage.new(ExZarr.Storage.Cache,
          inner: {:filesystem, path: "/data/a.zarr"},
          max_bytes: 256 * 1024 * 1024
        )

  This is the two-tier layout (memory in front of a slow store such as S3) as one store: the
  array engine sees a single `ExZarr.Storage`.

  Options:
    * `:inner` (required) - the store behind the cache: `{backend, options}` as given to
      `ExZarr.Storage.new/2`, or an open `ExZarr.Storage`.
    * `:max_bytes` - the most value bytes kept (default 128 MiB). A value bigger than this is
      never cached.
    * `:owner` - a pid; the cache process stops when it exits. Without it, the cache lives until
      `close/1` (the inner store stays usable either way).

  Behaviour:
    * Reads of whole values are cached. A hit is served from an ETS table in the reader's
      process (no message to any process); a miss reads the inner store and then caches the
      value. Ranged reads are served from a cached value when there is one and otherwise go to
      the inner store without filling the cache (a shard read by ranges is not pulled whole).
    * Writes (conditional ones too) and deletes go to the inner store first (write-through);
      the key is then dropped from the cache, and the next read fetches it again. Reads with
      a generation always ask the inner store. A read that was in flight while a
      write happened does not put its (old) value into the cache.
    * Missing keys are not cached. `list` and `list_dir` always ask the inner store.
    * When the cache process is gone (closed, or its owner exited), the store keeps working and
      reads go straight to the inner store.
  """
  @behaviour ExZarr.Storage

  alias ExZarr.{LRU, Storage}
  alias ExZarr.Storage.{Keys, Range}

  @supervisor ExZarr.Storage.Supervisor
  @default_max_bytes 128 * 1024 * 1024

  @enforce_keys [:inner, :lru]
  defstruct [:inner, :lru]

  @type t :: %__MODULE__{inner: Storage.t(), lru: LRU.t()}

  @impl true
  def options, do: [:inner, :max_bytes, :owner]

  @impl true
  def init(opts) do
    with {:ok, inner} <- inner_store(Keyword.get(opts, :inner)),
         {:ok, max_bytes} <- max_bytes(Keyword.get(opts, :max_bytes, @default_max_bytes)),
         {:ok, owner} <- owner(Keyword.get(opts, :owner)),
         {:ok, server} <- start_server(max_bytes, owner) do
      {:ok, %__MODULE__{inner: inner, lru: LRU.handle(server)}}
    end
  end

  defp inner_store(%Storage{} = store), do: {:ok, store}

  defp inner_store({backend, opts}) when is_list(opts) do
    case Storage.new(backend, opts) do
      {:ok, store} -> {:ok, store}
      {:error, reason} -> {:error, {:inner_store, reason}}
    end
  end

  defp inner_store(nil), do: {:error, {:missing_option, :inner}}
  defp inner_store(other), do: {:error, {:invalid_option, :inner, other}}

  defp max_bytes(n) when is_integer(n) and n > 0, do: {:ok, n}
  defp max_bytes(other), do: {:error, {:invalid_option, :max_bytes, other}}

  defp owner(owner) when is_nil(owner) or is_pid(owner), do: {:ok, owner}
  defp owner(other), do: {:error, {:invalid_option, :owner, other}}

  defp start_server(max_bytes, owner) do
    case DynamicSupervisor.start_child(@supervisor, {LRU, max_bytes: max_bytes, owner: owner}) do
      {:ok, pid} -> {:ok, pid}
      {:error, reason} -> {:error, {:cache_not_started, reason}}
    end
  catch
    :exit, _ -> {:error, {:cache_not_started, {:no_supervisor, @supervisor}}}
  end

  @impl true
  def get(%__MODULE__{} = cache, key, nil),
    do: cached(cache, key, nil, fn -> fetch(cache, key) end)

  def get(%__MODULE__{inner: inner} = cache, key, range),
    do: cached(cache, key, range, fn -> Storage.get(inner, key, range) end)

  @doc "Several ranges of one value: sliced from the cached value, or read from the inner store."
  @impl true
  def get_ranges(%__MODULE__{inner: inner} = cache, key, ranges),
    do: cached(cache, key, ranges, fn -> Storage.get_ranges(inner, key, ranges) end)

  @doc "Ranges with their generation come from the inner store (the cache keeps no generations)."
  @impl true
  def get_ranges_with_generation(%__MODULE__{inner: inner}, key, ranges, expected),
    do: Storage.get_ranges_with_generation(inner, key, ranges, expected)

  @doc "The inner store's object: the cache is a view of it."
  @impl true
  def identity(%__MODULE__{inner: inner}, key), do: Storage.identity(inner, key)

  defp cached(%__MODULE__{lru: lru}, key, ranges, on_miss) do
    case LRU.lookup(lru, key) do
      {:ok, value, _meta} ->
        LRU.count(lru, :hit)
        {:ok, Range.slice(value, ranges)}

      :miss ->
        LRU.count(lru, :miss)
        on_miss.()
    end
  end

  defp fetch(%__MODULE__{inner: inner, lru: lru}, key) do
    LRU.read_through(lru, key, fn ->
      # A value that is a slice of a larger binary (a response buffer) is cached as a copy:
      # the cache's byte bound counts what it really keeps.
      with {:ok, value} <- Storage.get(inner, key),
           do: {:ok, Keys.owned(value), byte_size(value), nil}
    end)
  end

  @impl true
  def put(%__MODULE__{inner: inner, lru: lru}, key, value) do
    Storage.put(inner, key, value) |> invalidating(lru, key)
  end

  @doc "A conditional put of the inner store; the key is then dropped from the cache."
  @impl true
  def put_if(%__MODULE__{inner: inner, lru: lru}, key, value, condition) do
    Storage.put_if(inner, key, value, condition) |> invalidating(lru, key)
  end

  @impl true
  def conditional_writes?(%__MODULE__{inner: inner}), do: Storage.conditional_writes?(inner)

  @impl true
  def delete(%__MODULE__{inner: inner, lru: lru}, key) do
    Storage.delete(inner, key) |> invalidating(lru, key)
  end

  @doc "A conditional delete of the inner store; the key is then dropped from the cache."
  @impl true
  def delete_if(%__MODULE__{inner: inner, lru: lru}, key, generation) do
    Storage.delete_if(inner, key, generation) |> invalidating(lru, key)
  end

  @impl true
  def conditional_deletes?(%__MODULE__{inner: inner}), do: Storage.conditional_deletes?(inner)

  # A write's result, once the key is dropped from the cache.
  defp invalidating(result, lru, key) do
    LRU.invalidate(lru, key)
    result
  end

  @impl true
  def list(%__MODULE__{inner: inner}, prefix), do: Storage.list(inner, prefix)

  @impl true
  def list_dir(%__MODULE__{inner: inner}, prefix), do: Storage.list_dir(inner, prefix)

  @impl true
  def describe(%__MODULE__{inner: inner}), do: "cache:" <> Storage.describe(inner)

  @impl true
  def supports_ranges?(%__MODULE__{inner: inner}), do: Storage.supports_ranges?(inner)

  @impl true
  def multi_range?(%__MODULE__{inner: inner}), do: Storage.multi_range?(inner)

  @doc """
  Counters of a cache: `hits`, `misses` (reads served by the inner store), and the `bytes`
  and `entries` currently cached.
  """
  @spec stats(t()) :: %{
          hits: non_neg_integer(),
          misses: non_neg_integer(),
          bytes: non_neg_integer(),
          entries: non_neg_integer()
        }
  def stats(%__MODULE__{lru: lru}),
    do: lru |> LRU.stats() |> Map.take([:hits, :misses, :bytes, :entries])

  @doc "Stops the cache process and frees its memory; the store then reads the inner store."
  @impl true
  @spec close(t()) :: :ok
  def close(%__MODULE__{lru: lru}) do
    DynamicSupervisor.terminate_child(@supervisor, lru.server)
    :ok
  end
end
