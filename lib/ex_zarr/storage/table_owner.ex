defmodule ExZarr.Storage.TableOwner do
  @moduledoc false
  # Creates and owns the ETS tables behind the `:memory` and `:ets` backends.
  #
  # An ETS table dies with the process that owns it. Stores are often created by short-lived
  # processes (a `Task`, a request handler) and used by others, so the tables are created by this
  # process instead, which `ExZarr.Application` starts under its supervisor. A table lives until
  # one of:
  #
  #   * `drop/1` is called for it,
  #   * the process given as `:owner` to `create/1` exits (when one was given),
  #   * the ExZarr application stops (the owner process exits and takes every table with it).
  #
  # Tables are public, so every process reads and writes them directly; only creating and
  # dropping go through this process.
  #
  #     {:ok, table} = ExZarr.Storage.TableOwner.create([])
  #     true = :ets.insert(table, {"k", "v"})
  #     :ok = ExZarr.Storage.TableOwner.drop(table)
  use GenServer

  @table_options [:set, :public, read_concurrency: true, write_concurrency: true]

  @doc false
  @spec start_link(keyword()) :: GenServer.on_start()
  def start_link(_opts), do: GenServer.start_link(__MODULE__, :ok, name: __MODULE__)

  @doc """
  Creates a table: `:set`, `:public`, with read and write concurrency.

  Options:
    * `:name` - an atom: creates a named table, or returns the existing table of that name when
      this process already owns one (so several callers can share it). A name taken by a table
      that ExZarr does not own gives `{:error, {:table_name_taken, name}}`.
    * `:owner` - a pid: the table is dropped when that process exits. Without it the table
      lives until `drop/1` or until the application stops.
  """
  @spec create(keyword()) :: {:ok, :ets.tid() | atom()} | {:error, term()}
  def create(opts) do
    name = Keyword.get(opts, :name)
    owner = Keyword.get(opts, :owner)

    cond do
      not is_atom(name) -> {:error, {:invalid_table_name, name}}
      not (is_nil(owner) or is_pid(owner)) -> {:error, {:invalid_owner, owner}}
      true -> GenServer.call(__MODULE__, {:create, name, owner})
    end
  end

  @doc "Deletes a table created by `create/1`. Dropping an unknown or gone table is `:ok`."
  @spec drop(:ets.tid() | atom()) :: :ok
  def drop(table) when is_atom(table) or is_reference(table),
    do: GenServer.call(__MODULE__, {:drop, table})

  @impl true
  def init(:ok), do: {:ok, %{tables: %{}, refs: %{}}}

  @impl true
  def handle_call({:create, nil, owner}, _from, state) do
    table = :ets.new(__MODULE__, @table_options)
    {:reply, {:ok, table}, watch(state, owner, table)}
  end

  def handle_call({:create, name, owner}, _from, state) do
    case :ets.info(name, :owner) do
      :undefined ->
        table = :ets.new(name, [:named_table | @table_options])
        {:reply, {:ok, table}, watch(state, owner, table)}

      pid when pid == self() ->
        {:reply, {:ok, name}, state}

      _other ->
        {:reply, {:error, {:table_name_taken, name}}, state}
    end
  end

  def handle_call({:drop, table}, _from, state) do
    {:reply, :ok, forget(state, table)}
  end

  @impl true
  def handle_info({:DOWN, ref, :process, _pid, _reason}, state) do
    case Map.fetch(state.refs, ref) do
      {:ok, table} -> {:noreply, forget(state, table)}
      :error -> {:noreply, state}
    end
  end

  defp watch(state, nil, _table), do: state

  defp watch(state, owner, table) do
    ref = Process.monitor(owner)
    %{tables: Map.put(state.tables, table, ref), refs: Map.put(state.refs, ref, table)}
  end

  # Deletes the table if we own it and stops watching its owner, so a later table that reuses
  # the name is not dropped when the first owner exits.
  defp forget(state, table) do
    if :ets.info(table, :owner) == self(), do: :ets.delete(table)

    case Map.pop(state.tables, table) do
      {nil, _} ->
        state

      {ref, tables} ->
        Process.demonitor(ref, [:flush])
        %{tables: tables, refs: Map.delete(state.refs, ref)}
    end
  end
end
