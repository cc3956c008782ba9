defmodule ExZarr.Storage.ETS do
  @moduledoc """
  A store in a named, shared ETS table (`storage: :ets, table_name: :my_arrays`).

  Where `:memory` gives every store its own anonymous table, `:ets` opens the table by name,
  so any process on the node can open the same store again with the same name and see the same
  values, without passing a handle around. Reads and writes run in the caller's process against
  the public table (read and write concurrency on), exactly as in `ExZarr.Storage.Memory`.

  Lifetime: a missing table is created by `ExZarr.Storage.TableOwner`, a supervised process of
  the ExZarr application, so it survives the process that opened it. It lives until `drop/1`
  is called with its name, or until the ExZarr application stops (then all values are gone:
  use `:filesystem`, `:zip` or `:mnesia` for data that must outlive the node). A public `:set`
  table of that name created by your own code is used as is and keeps your process as owner.

  Options:
    * `:table_name` (required) - an atom.

      {:ok, store} = ExZarr.Storage.new(ExZarr.Storage.ETS, table_name: :my_arrays)
      :ok = ExZarr.Storage.put(store, "zarr.json", "{}")
      {:ok, again} = ExZarr.Storage.new(ExZarr.Storage.ETS, table_name: :my_arrays)
      {:ok, "{}"} = ExZarr.Storage.get(again, "zarr.json")
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage.{Memory, TableOwner}

  @impl true
  def options, do: [:table_name]

  @impl true
  def init(opts) do
    case Keyword.fetch(opts, :table_name) do
      {:ok, name} when is_atom(name) and name not in [nil, true, false] -> open(name)
      {:ok, name} -> {:error, {:invalid_table_name, name}}
      :error -> {:error, {:missing_option, :table_name}}
    end
  end

  defp open(name) do
    case {:ets.info(name, :type), :ets.info(name, :protection)} do
      {:set, :public} ->
        {:ok, %Memory{table: name}}

      {:undefined, _} ->
        with {:ok, table} <- TableOwner.create(name: name), do: {:ok, %Memory{table: table}}

      {type, protection} ->
        {:error, {:unusable_table, name, type, protection}}
    end
  end

  @impl true
  defdelegate get(state, key, range), to: Memory
  @impl true
  defdelegate get_ranges(state, key, ranges), to: Memory
  @impl true
  defdelegate put(state, key, value), to: Memory
  @impl true
  defdelegate delete(state, key), to: Memory
  @impl true
  defdelegate list(state, prefix), to: Memory
  @impl true
  defdelegate supports_ranges?(state), to: Memory
  @impl true
  defdelegate get_ranges_with_generation(state, key, ranges, expected), to: Memory
  @impl true
  defdelegate identity(state, key), to: Memory
  @impl true
  defdelegate put_if(state, key, value, condition), to: Memory
  @impl true
  defdelegate delete_if(state, key, generation), to: Memory

  @doc "Deletes the named table (created by this module) and every value in it."
  @spec drop(atom()) :: :ok
  def drop(name) when is_atom(name), do: TableOwner.drop(name)
end
