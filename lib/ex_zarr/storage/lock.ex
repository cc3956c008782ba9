defmodule ExZarr.Storage.Lock do
  @moduledoc """
  Node-wide locks on stored objects, for read-modify-writes: a partial chunk write reads the
  chunk, merges the new elements in and stores it; two such writes of one chunk at once would
  each store the chunk without the other's elements. Every read-modify-write of a chunk or
  shard runs under the lock of its object, `ExZarr.Storage.identity/2`, which is the same for
  every handle on the node that reaches the object (two arrays opened on one directory or
  bucket), so writers serialize whichever handle they use.

      :ok = ExZarr.Storage.Lock.run(store, "c/0/0", fn -> read_merge_store() end)

  One process, started by the ExZarr application, grants the locks: a lock is free, or held by
  one process with the others waiting in order of arrival. The holder is monitored: a holder
  that exits (killed in the middle of a write) releases its lock. A process may take a lock it
  already holds (the inner `run/3` runs at once). Locks are per node: writers on other nodes or
  in other OS processes are not serialized by it.
  """
  use GenServer

  alias ExZarr.Storage

  @doc false
  @spec start_link(keyword()) :: GenServer.on_start()
  def start_link(_opts), do: GenServer.start_link(__MODULE__, :ok, name: __MODULE__)

  @doc """
  Runs `fun` holding the lock of the object `key` designates in `store`, and returns what it
  returns. `{:error, {:lock_unavailable, reason}}` when the lock cannot be taken (the ExZarr
  application is not running).
  """
  @spec run(Storage.t(), Storage.key(), (() -> result)) :: result | {:error, term()}
        when result: term()
  def run(%Storage{} = store, key, fun) when is_function(fun, 0) do
    lock = {__MODULE__, Storage.identity(store, key)}

    if Process.get(lock) do
      fun.()
    else
      with :ok <- acquire(lock) do
        Process.put(lock, true)

        try do
          fun.()
        after
          Process.delete(lock)
          GenServer.cast(__MODULE__, {:release, lock, self()})
        end
      end
    end
  end

  defp acquire(lock) do
    GenServer.call(__MODULE__, {:acquire, lock}, :infinity)
  catch
    :exit, {reason, _} -> {:error, {:lock_unavailable, reason}}
  end

  # State: lock => {holder, monitor, waiting callers}; monitor => lock.
  @impl true
  def init(:ok), do: {:ok, %{locks: %{}, monitors: %{}}}

  @impl true
  def handle_call({:acquire, lock}, {pid, _} = from, state) do
    case Map.fetch(state.locks, lock) do
      {:ok, {holder, ref, waiting}} ->
        {:noreply, put_in(state.locks[lock], {holder, ref, :queue.in(from, waiting)})}

      :error ->
        {:reply, :ok, grant(state, lock, pid, :queue.new())}
    end
  end

  @impl true
  def handle_cast({:release, lock, pid}, state) do
    case Map.fetch(state.locks, lock) do
      {:ok, {^pid, ref, waiting}} ->
        Process.demonitor(ref, [:flush])
        {:noreply, next(%{state | monitors: Map.delete(state.monitors, ref)}, lock, waiting)}

      _ ->
        {:noreply, state}
    end
  end

  @impl true
  def handle_info({:DOWN, ref, :process, _pid, _reason}, state) do
    case Map.pop(state.monitors, ref) do
      {nil, _} ->
        {:noreply, state}

      {lock, monitors} ->
        {_holder, ^ref, waiting} = Map.fetch!(state.locks, lock)
        {:noreply, next(%{state | monitors: monitors}, lock, waiting)}
    end
  end

  # Hands the lock to the first waiting caller, or frees it. A caller that has exited is
  # granted it all the same: its monitor fires at once and passes it on.
  defp next(state, lock, waiting) do
    case :queue.out(waiting) do
      {{:value, {pid, _} = from}, rest} ->
        GenServer.reply(from, :ok)
        grant(state, lock, pid, rest)

      {:empty, _} ->
        %{state | locks: Map.delete(state.locks, lock)}
    end
  end

  defp grant(state, lock, pid, waiting) do
    ref = Process.monitor(pid)

    %{
      state
      | locks: Map.put(state.locks, lock, {pid, ref, waiting}),
        monitors: Map.put(state.monitors, ref, lock)
    }
  end
end
