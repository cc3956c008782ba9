defmodule ExZarr.Storage.Memory do
  @moduledoc """
  An in-memory store (`storage: :memory`) in a public ETS table.

  Reads and writes run in the caller's process, straight against the table (created with
  read and write concurrency), so many processes can read and write chunks at once. Values are
  stored as one binary: a binary given to `put` is stored as is, iodata is joined once, and a
  binary that is part of a larger one (a slice of a caller's buffer) is copied, so that the
  store never keeps the larger buffer alive. Ranged reads return sub-binaries of the stored
  value, so they copy nothing. Rows are `{key, value, generation}`, the generation a number
  unique on the node, new at each write (see "Generations" in `ExZarr.Storage`); rows
  `{key, value}` put there by other code read with the generation `nil`. Conditional puts
  (`put_if/4`) are compare-and-swaps on the row.

  The table is created by `ExZarr.Storage.TableOwner`, so it outlives the process that opened
  the store. It lives until `drop/1` is called, until the process given as `:owner` exits, or
  until the application stops.

  Options:
    * `:table` - an existing table (tid or name) to use instead of creating one; several stores
      can then share it.
    * `:owner` - a pid whose exit drops the new table (ignored with `:table`).

      {:ok, store} = ExZarr.Storage.new(:memory, [])
      :ok = ExZarr.Storage.put(store, "c/0", ["ab", "cd"])
      {:ok, "bc"} = ExZarr.Storage.get(store, "c/0", {1, 2})
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage.{Keys, Range, TableOwner}

  @enforce_keys [:table]
  defstruct [:table]

  @type t :: %__MODULE__{table: :ets.tid() | atom()}

  @impl true
  def options, do: [:table, :owner]

  @impl true
  def init(opts) do
    case Keyword.fetch(opts, :table) do
      {:ok, table} ->
        existing_table(table)

      :error ->
        with {:ok, table} <- TableOwner.create(owner: opts[:owner]),
             do: {:ok, %__MODULE__{table: table}}
    end
  end

  defp existing_table(table) when is_atom(table) or is_reference(table) do
    case :ets.info(table, :type) do
      :set -> {:ok, %__MODULE__{table: table}}
      :undefined -> {:error, {:no_such_table, table}}
      type -> {:error, {:unsupported_table_type, type}}
    end
  rescue
    # a reference that is not a table id
    ArgumentError -> {:error, {:no_such_table, table}}
  end

  defp existing_table(table), do: {:error, {:no_such_table, table}}

  @impl true
  def get(state, key, range) do
    with {:ok, bytes, _generation} <- lookup(state, key, range), do: {:ok, bytes}
  end

  @doc "Several ranges of one value, sliced from a single lookup."
  @impl true
  def get_ranges(state, key, ranges), do: get(state, key, ranges)

  @doc "Several ranges of one value and its generation, from a single lookup."
  @impl true
  def get_ranges_with_generation(state, key, ranges, _expected), do: lookup(state, key, ranges)

  defp lookup(%__MODULE__{table: table}, key, ranges) do
    case :ets.lookup(table, key) do
      [{_, value, generation}] -> {:ok, Range.slice(value, ranges), generation}
      [{_, value}] -> {:ok, Range.slice(value, ranges), nil}
      [] -> {:error, :not_found}
    end
  rescue
    ArgumentError -> {:error, {:table_gone, table}}
  end

  @doc "The table (by its id, also when opened by name) and the key."
  @impl true
  def identity(%__MODULE__{table: table}, key), do: {__MODULE__, table_id(table), key}

  defp table_id(name) when is_atom(name), do: :ets.whereis(name)
  defp table_id(tid), do: tid

  @impl true
  def put(%__MODULE__{table: table}, key, value) do
    with {:ok, binary} <- Keys.to_owned_binary(value) do
      :ets.insert(table, {key, binary, :erlang.unique_integer([:positive])})
      :ok
    end
  rescue
    ArgumentError -> {:error, {:table_gone, table}}
  end

  @doc """
  A compare-and-swap on the row: `:ets.insert_new/2` for `:absent`, `:ets.select_replace/2`
  matching the generation otherwise, so the check and the write are one step for every
  process of the node.
  """
  @impl true
  def put_if(%__MODULE__{table: table}, key, value, condition) do
    with {:ok, binary} <- Keys.to_owned_binary(value) do
      generation = :erlang.unique_integer([:positive])
      row = {key, binary, generation}

      if swap(table, key, row, condition),
        do: {:ok, generation},
        else: {:error, :generation_mismatch}
    end
  rescue
    ArgumentError -> {:error, {:table_gone, table}}
  end

  defp swap(table, _key, row, :any), do: :ets.insert(table, row)
  defp swap(table, _key, row, :absent), do: :ets.insert_new(table, row)

  # Generations are integers: anything else was never one of this store's.
  defp swap(table, key, {_, binary, generation}, expected) when is_integer(expected) do
    new = {{:const, key}, {:const, binary}, generation}
    :ets.select_replace(table, [{{key, :_, expected}, [], [{new}]}]) == 1
  end

  defp swap(_table, _key, _row, _expected), do: false

  @doc "Deletes the row only while it holds `generation` (`:ets.select_delete/2`, one step)."
  @impl true
  def delete_if(%__MODULE__{table: table}, key, generation) when is_integer(generation) do
    case :ets.select_delete(table, [{{key, :_, generation}, [], [true]}]) do
      1 -> :ok
      0 -> {:error, :generation_mismatch}
    end
  rescue
    ArgumentError -> {:error, {:table_gone, table}}
  end

  def delete_if(%__MODULE__{}, _key, _generation), do: {:error, :generation_mismatch}

  @impl true
  def delete(%__MODULE__{table: table}, key) do
    :ets.delete(table, key)
    :ok
  rescue
    ArgumentError -> {:error, {:table_gone, table}}
  end

  @impl true
  def list(%__MODULE__{table: table}, prefix) do
    rows = [{{:"$1", :_, :_}, [], [:"$1"]}, {{:"$1", :_}, [], [:"$1"]}]
    {:ok, Keys.under(:ets.select(table, rows), prefix)}
  rescue
    ArgumentError -> {:error, {:table_gone, table}}
  end

  @doc "`\"memory\"`, or `\"ets:<name>\"` for a named table (`ExZarr.Storage.ETS`)."
  @impl true
  def describe(%__MODULE__{table: name}) when is_atom(name), do: "ets:#{name}"
  def describe(%__MODULE__{}), do: "memory"

  @impl true
  def supports_ranges?(_state), do: true

  @doc "Deletes the store's table and everything in it."
  @spec drop(t()) :: :ok
  def drop(%__MODULE__{table: table}), do: TableOwner.drop(table)
end
