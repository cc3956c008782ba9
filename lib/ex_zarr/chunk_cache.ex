defmodule ExZarr.ChunkCache do
  @moduledoc """
  A shared cache of decoded chunks and shard indexes, bounded in bytes, least recently used
  entries evicted first. Arrays opened with `chunk_cache: name` share it; a hit is read from
  ETS by the calling process (no message to any process), so any number of readers use it at
  once.

      children = [{ExZarr.ChunkCache, name: MyApp.Chunks, max_bytes: 512 * 1024 * 1024}]
      Supervisor.start_link(children, strategy: :one_for_one)

  A write fills the writer's cache; reads of the chunks written are then hits:

      iex> {:ok, _pid} = ExZarr.ChunkCache.start_link(name: MyApp.Chunks, max_bytes: 1_000_000)
      iex> {:ok, a} = ExZarr.create(shape: {100, 100}, chunks: {10, 10}, dtype: :uint8,
      ...>   storage: :memory, chunk_cache: MyApp.Chunks)
      iex> :ok = ExZarr.Array.set_slice(a, :binary.copy(<<1>>, 100 * 100))
      iex> {:ok, _} = ExZarr.Array.get_slice(a, start: {0, 0}, stop: {20, 20})
      iex> ExZarr.ChunkCache.stats(MyApp.Chunks)
      %{hits: 4, misses: 0, evictions: 0, bytes: 10_000, entries: 100}

  `chunk_cache: n` (an integer) gives the array a private cache of `n` bytes, which lives as
  long as the process that opened the array.

  What is cached: every chunk a read decodes (a sharded array's inner chunks and its shards'
  indexes), keyed by the stored object (`ExZarr.Storage.identity/2`), so two handles of one
  array share entries. Chunks that are not stored are not cached. Writes through ExZarr on the
  node update the writer's cache with what they stored and drop the entries they touch from
  every other cache.

  Staleness against writers elsewhere (other nodes, OS processes, programs) follows
  tensorstore's `recheck_cached_data`, as the `recheck:` option of `ExZarr.open/1`:

    * `:open` (default): entries read before the array was opened are checked against the
      store (the object's generation, see `ExZarr.Storage`) before use; later ones are used
      as they are.
    * `:always`: every entry is checked before use: one cheap request (a zero-byte read on the
      generation it was read from) instead of fetching and decoding the chunk.
    * `:never`: entries are used as they are.

  An entry whose generation the store cannot tell is never trusted where a check is due.
  """

  alias ExZarr.{LRU, Telemetry}
  alias ExZarr.Codec.Chunk

  @enforce_keys [:lru]
  defstruct [:lru, recheck: :open, opened_at: nil]

  @typedoc "A cache attached to an array handle: the table, and when and how to recheck."
  @type t :: %__MODULE__{lru: LRU.t(), recheck: :open | :always | :never, opened_at: integer()}

  @directory __MODULE__.Directory

  @doc """
  Starts a cache registered as `name:` (an atom) holding up to `max_bytes:` bytes of decoded
  data. Also `{ExZarr.ChunkCache, name: n, max_bytes: b}` in a supervision tree. Any other
  option is `{:error, {:unknown_option, name}}`.
  """
  @spec start_link(keyword()) :: GenServer.on_start()
  def start_link(opts) do
    with :ok <- ExZarr.Options.check(opts, [:name, :max_bytes]),
         {:ok, name} <- name(Keyword.get(opts, :name)),
         {:ok, max_bytes} <- max_bytes(Keyword.get(opts, :max_bytes)),
         {:ok, pid} <- LRU.start_link(name: name, max_bytes: max_bytes),
         {:ok, _lru} <- enlist(pid),
         do: {:ok, pid}
  end

  @doc false
  @spec child_spec(keyword()) :: Supervisor.child_spec()
  def child_spec(opts) do
    %{id: {__MODULE__, Keyword.get(opts, :name)}, start: {__MODULE__, :start_link, [opts]}}
  end

  @doc """
  Counters of a cache (by name, or attached to an array): hits, misses, evictions, bytes,
  entries. Raises `ExZarr.Error` (`{:no_chunk_cache, name}`) when no cache has that name.
  """
  @spec stats(atom() | t()) :: LRU.stats()
  def stats(%__MODULE__{lru: lru}), do: LRU.stats(lru)
  def stats(name), do: name |> lookup() |> ExZarr.Result.unwrap!() |> LRU.stats()

  @doc false
  # The cache an array opened with `chunk_cache: spec, recheck: recheck` uses: a named one, or
  # a private one of `spec` bytes owned by the calling process.
  @spec attach(atom() | pos_integer(), atom()) :: {:ok, t()} | {:error, term()}
  def attach(spec, recheck \\ :open)

  def attach(_spec, recheck) when recheck not in [:open, :always, :never],
    do: {:error, {:invalid_option, :recheck, recheck}}

  def attach(name, recheck) when is_atom(name) and name not in [nil, true, false] do
    with {:ok, lru} <- lookup(name), do: {:ok, new(lru, recheck)}
  end

  def attach(max_bytes, recheck) when is_integer(max_bytes) and max_bytes > 0 do
    spec = {LRU, max_bytes: max_bytes, owner: self()}

    case DynamicSupervisor.start_child(ExZarr.Storage.Supervisor, spec) do
      {:ok, pid} -> with {:ok, lru} <- enlist(pid), do: {:ok, new(lru, recheck)}
      {:error, reason} -> {:error, {:chunk_cache_not_started, reason}}
    end
  catch
    :exit, _ -> {:error, {:chunk_cache_not_started, :no_supervisor}}
  end

  def attach(other, _recheck), do: {:error, {:invalid_option, :chunk_cache, other}}

  defp new(lru, recheck),
    do: %__MODULE__{lru: lru, recheck: recheck, opened_at: System.monotonic_time()}

  # -- the engine's side --------------------------------------------------------------------

  @doc false
  # The cached value of `chunk` (`tag` tells its kind: `:chunk`, `:index`, `{:inner, i}`),
  # checked against the store when `recheck:` says so; `:miss` otherwise.
  @spec fetch(t(), Chunk.t(), term()) :: {:ok, term()} | :miss
  def fetch(%__MODULE__{lru: lru} = cache, chunk, tag) do
    key = key(chunk, tag)

    result =
      case LRU.lookup(lru, key) do
        {:ok, value, {generation, read_at}} ->
          cond do
            fresh?(cache, read_at) ->
              {:ok, value}

            generation != nil and Chunk.current?(chunk, generation) ->
              LRU.set_meta(lru, key, {generation, System.monotonic_time()})
              {:ok, value}

            true ->
              LRU.invalidate(lru, key)
              :miss
          end

        :miss ->
          :miss
      end

    counted(lru, chunk, result)
  end

  @doc false
  # Whether `chunk`'s decoded value is held (it may still prove stale when fetched): the
  # engine's estimate of a read's work counts a held chunk as the bytes its box copies.
  @spec cached?(t() | nil, Chunk.t()) :: boolean()
  def cached?(nil, _chunk), do: false
  def cached?(%__MODULE__{lru: lru}, chunk), do: LRU.member?(lru, key(chunk, :chunk))

  defp fresh?(%__MODULE__{recheck: :never}, _read_at), do: true
  defp fresh?(%__MODULE__{recheck: :always}, _read_at), do: false
  defp fresh?(%__MODULE__{opened_at: opened_at}, read_at), do: read_at >= opened_at

  @doc false
  # The cached value of `chunk`'s `tag` when it was read from `generation` of the stored object
  # (the inner chunks of a shard, valid with the index they were read with); `:miss` otherwise.
  @spec fetch_at(t(), Chunk.t(), term(), term()) :: {:ok, term()} | :miss
  def fetch_at(%__MODULE__{lru: lru}, chunk, tag, generation) do
    result =
      case generation != nil and LRU.lookup(lru, key(chunk, tag)) do
        {:ok, value, {^generation, _read_at}} -> {:ok, value}
        _ -> :miss
      end

    counted(lru, chunk, result)
  end

  # Counts a lookup in the cache's stats and emits `[:ex_zarr, :chunk_cache, :hit | :miss]`.
  defp counted(lru, chunk, result) do
    outcome = if result == :miss, do: :miss, else: :hit
    LRU.count(lru, outcome)

    Telemetry.execute([:ex_zarr, :chunk_cache, outcome], measurements(result), fn ->
      %{cache: cache_name(lru), key: chunk.key}
    end)

    result
  end

  defp measurements({:ok, value}) when is_binary(value), do: %{count: 1, bytes: byte_size(value)}
  defp measurements(_result), do: %{count: 1}

  # The name a shared cache was started with; the server's pid for a private one.
  defp cache_name(%LRU{server: server}) do
    case Process.info(server, :registered_name) do
      {:registered_name, name} when is_atom(name) -> name
      _private_or_gone -> server
    end
  end

  @doc false
  # Registers a read of `chunk`'s `tag` about to go to the store (see `fill/7`).
  @spec register(t(), Chunk.t(), term()) :: reference() | nil
  def register(%__MODULE__{lru: lru}, chunk, tag), do: LRU.register(lru, key(chunk, tag))

  @doc false
  # Caches what a registered read got from `generation` of the stored object (nothing when
  # the generation is unknown, or a write of it happened meanwhile).
  @spec fill(t(), Chunk.t(), term(), term(), non_neg_integer(), term(), reference() | nil) :: :ok
  def fill(%__MODULE__{lru: lru}, chunk, tag, value, bytes, generation, token) do
    if generation == nil,
      do: LRU.unregister(lru, key(chunk, tag), token),
      else:
        LRU.fill(lru, key(chunk, tag), value, bytes, {generation, System.monotonic_time()}, token)
  end

  @doc false
  # Runs `read` (`{:ok, value, generation, bytes}` or an error) and caches its value, unless a
  # write of the chunk happened meanwhile; returns `{:ok, value}` or the error.
  @spec read_through(
          t(),
          Chunk.t(),
          term(),
          (() -> {:ok, term(), term(), non_neg_integer()} | term())
        ) ::
          {:ok, term()} | term()
  def read_through(%__MODULE__{lru: lru}, chunk, tag, read) do
    read_at = System.monotonic_time()

    LRU.read_through(lru, key(chunk, tag), fn ->
      with {:ok, value, generation, bytes} <- read.(),
           do: {:ok, value, bytes, {generation, read_at}}
    end)
  end

  @doc false
  # Drops `chunk`'s `tag` from this cache (found stale).
  @spec forget(t(), Chunk.t(), term()) :: :ok
  def forget(%__MODULE__{lru: lru}, chunk, tag), do: LRU.invalidate(lru, key(chunk, tag))

  @doc false
  # After a write of `chunk` through ExZarr: the writer's cache (nil for none) holds the
  # values written (`{tag, value, bytes}`; nil values are dropped), every other cache on the
  # node forgets the tags.
  @spec written(t() | nil, Chunk.t(), [{term(), term(), non_neg_integer()} | {term(), nil}]) ::
          :ok
  def written(own, chunk, entries) do
    own_server = own && own.lru.server

    for {pid, lru} <- caches(), {tag, value, bytes} <- Enum.map(entries, &entry/1) do
      key = key(chunk, tag)

      if pid == own_server and value != nil,
        do: LRU.put(lru, key, value, bytes, {nil, System.monotonic_time()}),
        else: LRU.invalidate(lru, key)
    end

    :ok
  end

  defp entry({tag, nil}), do: {tag, nil, 0}
  defp entry({_tag, _value, _bytes} = entry), do: entry

  defp key(chunk, tag), do: {Chunk.identity(chunk), tag}

  # The live caches of the node, each `{pid, lru}` (kept in a public table; caches that have
  # stopped are dropped from it when met).
  defp caches do
    for {pid, _lru} = cache <- :ets.tab2list(@directory),
        alive?(pid),
        do: cache
  rescue
    ArgumentError -> []
  end

  defp alive?(pid) do
    Process.alive?(pid) or
      (:ets.delete(@directory, pid) && false)
  end

  # Lists a cache started by ExZarr in the directory, where writes find it; a cache that could
  # not be listed is stopped (writes would leave it stale).
  defp enlist(pid) do
    lru = LRU.handle(pid)

    case ExZarr.Storage.TableOwner.create(name: @directory) do
      {:ok, table} ->
        :ets.insert(table, {pid, lru})
        {:ok, lru}

      {:error, reason} ->
        not_started(pid, reason)
    end
  catch
    :exit, _ -> not_started(pid, :ex_zarr_not_started)
  end

  defp not_started(pid, reason) do
    GenServer.stop(pid)
    {:error, {:chunk_cache_not_started, reason}}
  catch
    :exit, _ -> {:error, {:chunk_cache_not_started, reason}}
  end

  # The cache started under `name`: only a process of the directory is asked for anything
  # (a name of another process is not a cache, and is not sent a message).
  defp lookup(name) do
    with pid when is_pid(pid) <- is_atom(name) && Process.whereis(name),
         [{^pid, lru}] <- :ets.lookup(@directory, pid) do
      {:ok, lru}
    else
      _ -> {:error, {:no_chunk_cache, name}}
    end
  rescue
    ArgumentError -> {:error, {:no_chunk_cache, name}}
  end

  defp name(name) when is_atom(name) and name not in [nil, true, false], do: {:ok, name}
  defp name(other), do: {:error, {:invalid_option, :name, other}}

  defp max_bytes(n) when is_integer(n) and n > 0, do: {:ok, n}
  defp max_bytes(other), do: {:error, {:invalid_option, :max_bytes, other}}
end
