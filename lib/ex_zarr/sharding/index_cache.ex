defmodule ExZarr.Sharding.IndexCache do
  @moduledoc """
  Decoded shard indexes, cached per open array handle, shared by every process that uses
  the handle.

  One public ETS table (created through `ExZarr.Storage.TableOwner`, so it outlives the
  processes that open arrays) holds `{{handle_ref, shard_key}, index}`. Each handle has its own
  reference, so handles never see each other's entries. The table is bounded: once about
  64 MiB of indexes have been added it is emptied (entries of handles that are gone leave
  that way).
  When the table is unavailable (the application is not started) nothing is cached.

  Readers add entries with `put_new/4`; a writer, holding the shard's lock, overwrites the
  entry with `put/4` after the shard is stored, so an index read before the write can never
  replace the one written after it.
  """

  alias ExZarr.Storage.TableOwner

  @table __MODULE__
  @max_bytes 64 * 1024 * 1024
  # The row counting the index bytes added since the table was last emptied.
  @bytes_key :bytes_added

  @typedoc "The cache table, or nil when caching is off."
  @type table :: atom() | nil

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

  @doc "The cached index of a shard, or `:error`."
  @spec fetch(table(), reference(), String.t()) :: {:ok, binary()} | :error
  def fetch(nil, _ref, _key), do: :error

  def fetch(table, ref, key) do
    case :ets.lookup(table, {ref, key}) do
      [{_, index}] -> {:ok, index}
      [] -> :error
    end
  rescue
    ArgumentError -> :error
  end

  @doc "Caches an index read from storage unless an entry is already there."
  @spec put_new(table(), reference(), String.t(), binary()) :: :ok
  def put_new(table, ref, key, index), do: write(table, &:ets.insert_new/2, {{ref, key}, index})

  @doc "Caches the index of a shard just written (replacing any entry)."
  @spec put(table(), reference(), String.t(), binary()) :: :ok
  def put(table, ref, key, index), do: write(table, &:ets.insert/2, {{ref, key}, index})

  @doc "Forgets a shard's index."
  @spec delete(table(), reference(), String.t()) :: :ok
  def delete(nil, _ref, _key), do: :ok

  def delete(table, ref, key) do
    :ets.delete(table, {ref, key})
    :ok
  rescue
    ArgumentError -> :ok
  end

  defp write(nil, _fun, _entry), do: :ok

  defp write(table, fun, {_key, index} = entry) do
    added = :ets.update_counter(table, @bytes_key, byte_size(index), {@bytes_key, 0})
    if added > @max_bytes, do: :ets.delete_all_objects(table)
    fun.(table, entry)
    :ok
  rescue
    ArgumentError -> :ok
  end
end
