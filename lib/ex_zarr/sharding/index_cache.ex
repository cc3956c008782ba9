defmodule ExZarr.Sharding.IndexCache do
  @moduledoc false
  # Decoded shard indexes, cached per open array handle with the generation of the shard they
  # were read from (see "Generations" in `ExZarr.Storage`), shared by every process that uses
  # the handle.
  #
  # An entry is only a hint: a reader fetches inner chunks with a cached index on the condition
  # that the shard is still at the entry's generation, and drops the entry and reads the index
  # again when it is not (`ExZarr.Codecs.ShardingIndexed`), so an index cached before another handle or
  # program rewrote the shard is never applied to the new shard. Indexes read from a store that
  # has no generations are not cached.
  #
  # One public ETS table (created through `ExZarr.Storage.TableOwner`, so it outlives the
  # processes that open arrays) holds `{{handle_ref, shard_key}, {index, generation}}`. Each
  # handle has its own reference, so handles never see each other's entries. The table is
  # bounded: once about 64 MiB of indexes have been added it is emptied (entries of handles
  # that are gone leave that way). When the table is unavailable (the application is not
  # started) nothing is cached.

  alias ExZarr.Storage.TableOwner

  @table __MODULE__
  @max_bytes 64 * 1024 * 1024
  # The row counting the index bytes added since the table was last emptied.
  @bytes_key :bytes_added

  @typedoc "The cache table, or nil when caching is off."
  @type table :: atom() | nil

  @typedoc "A decoded index and the generation of the shard it was read from."
  @type entry :: {binary(), ExZarr.Storage.generation()}

  @doc "The shared cache table (created on first use), or nil when it cannot be created."
  @spec table() :: table()
  def table do
    case TableOwner.create(name: @table) do
      {:ok, table} -> table
      {:error, _} -> nil
    end
  catch
    :exit, _ -> nil
  end

  @doc "The cached index of a shard and its generation, or `:error`."
  @spec fetch(table(), reference(), String.t()) :: {:ok, entry()} | :error
  def fetch(nil, _ref, _key), do: :error

  def fetch(table, ref, key) do
    case :ets.lookup(table, {ref, key}) do
      [{_, entry}] -> {:ok, entry}
      [] -> :error
    end
  rescue
    ArgumentError -> :error
  end

  @doc """
  Caches an index read from storage, replacing any entry (the latest read is the most likely
  to be current). Indexes of unknown generation (`nil`) are not cached.
  """
  @spec put(table(), reference(), String.t(), entry()) :: :ok
  def put(nil, _ref, _key, _entry), do: :ok
  def put(_table, _ref, _key, {_index, nil}), do: :ok

  def put(table, ref, key, {index, _generation} = entry) do
    added = :ets.update_counter(table, @bytes_key, byte_size(index), {@bytes_key, 0})
    if added > @max_bytes, do: :ets.delete_all_objects(table)
    :ets.insert(table, {{ref, key}, entry})
    :ok
  rescue
    ArgumentError -> :ok
  end

  @doc "Forgets a shard's index (a writer that rewrote the shard, a reader that found it stale)."
  @spec delete(table(), reference(), String.t()) :: :ok
  def delete(nil, _ref, _key), do: :ok

  def delete(table, ref, key) do
    :ets.delete(table, {ref, key})
    :ok
  rescue
    ArgumentError -> :ok
  end
end
