defmodule ExZarr.Storage.Lock do
  @moduledoc false
  # Node-wide locks on stored objects, for read-modify-writes: a partial chunk write reads the
  # chunk, merges the new elements in and stores it; two such writes of one chunk at once would
  # each store the chunk without the other's elements. Every read-modify-write of a chunk or
  # shard runs under the lock of its object, `ExZarr.Storage.identity/2`, which is the same for
  # every handle on the node that reaches the object (two arrays opened on one directory or
  # bucket), so writers serialize whichever handle they use.
  #
  #     :ok = ExZarr.Storage.Lock.run(store, "c/0/0", fn -> read_merge_store() end)
  #
  # The locks are rows `{lock, holder, waiting?}` of a public ETS table: a free lock is taken
  # with one `:ets.insert_new/2` and released with one delete, without a message. A process
  # that finds a lock taken waits in a queue kept by the process that owns the table (started
  # by the ExZarr application), which flags the row so that the holder hands the lock over to
  # the first waiter when it is done. That process monitors every holder: a holder that exits
  # (killed in the middle of a write) releases its locks. A process may take a lock it already
  # holds (the inner `run/3` runs at once). Locks are per node: writers on other nodes or in
  # other OS processes are not serialized by it.
  use GenServer

  alias ExZarr.Storage

  @table __MODULE__

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
    lock = Storage.identity(store, key)

    if Process.get({__MODULE__, lock}) do
      fun.()
    else
      with :ok <- acquire(lock) do
        Process.put({__MODULE__, lock}, true)

        try do
          fun.()
        after
          Process.delete({__MODULE__, lock})
          release(lock)
        end
      end
    end
  end

  # Asks to be watched before taking the lock, so that no holder is ever left unwatched.
  defp acquire(lock) do
    watched()

    cond do
      :ets.insert_new(@table, {lock, self(), false}) -> :ok
      GenServer.call(__MODULE__, {:wait, lock}, :infinity) == :ok -> :ok
      true -> acquire(lock)
    end
  rescue
    ArgumentError -> {:error, {:lock_unavailable, :not_started}}
  catch
    :exit, {reason, _} -> {:error, {:lock_unavailable, reason}}
  end

  # The table's owner monitors each holder, once (the holder remembers which owner watches it).
  defp watched do
    owner = Process.whereis(__MODULE__)

    if owner != nil and Process.get(__MODULE__) != owner do
      GenServer.cast(owner, {:watch, self()})
      Process.put(__MODULE__, owner)
    end
  end

  # Deletes the row unless a waiter flagged it; then the owner hands the lock over.
  defp release(lock) do
    if :ets.select_delete(@table, [{{lock, self(), false}, [], [true]}]) == 0,
      do: GenServer.cast(__MODULE__, {:release, lock, self()})

    :ok
  rescue
    ArgumentError -> :ok
  end

  # -- the table's owner ---------------------------------------------------------------------

  # State: the waiting callers of each flagged lock, and the monitors of holders by pid.
  @impl true
  def init(:ok) do
    :ets.new(@table, [
      :set,
      :public,
      :named_table,
      read_concurrency: true,
      write_concurrency: true
    ])

    {:ok, %{waiting: %{}, monitors: %{}}}
  end

  @impl true
  def handle_call({:wait, lock}, from, state) do
    case :ets.lookup(@table, lock) do
      [{^lock, holder, _}] ->
        # flag the row of the holder now; if it was released meanwhile, try again
        if :ets.update_element(@table, lock, {3, true}) do
          queue = Map.get(state.waiting, lock, :queue.new())
          state = watch(state, holder)
          {:noreply, put_in(state.waiting[lock], :queue.in(from, queue))}
        else
          {:reply, :retry, state}
        end

      [] ->
        {:reply, :retry, state}
    end
  end

  @impl true
  def handle_cast({:watch, pid}, state), do: {:noreply, watch(state, pid)}

  def handle_cast({:release, lock, pid}, state) do
    case :ets.lookup(@table, lock) do
      [{^lock, ^pid, _}] -> {:noreply, hand_over(state, lock)}
      _ -> {:noreply, state}
    end
  end

  @impl true
  def handle_info({:DOWN, _ref, :process, pid, _reason}, state) do
    state = %{state | monitors: Map.delete(state.monitors, pid)}

    state =
      @table
      |> :ets.match_object({:_, pid, :_})
      |> Enum.reduce(state, fn {lock, _, _}, state ->
        if :ets.select_delete(@table, [{{lock, pid, false}, [], [true]}]) == 1,
          do: state,
          else: hand_over(state, lock)
      end)

    {:noreply, state}
  end

  # Gives a held, flagged lock to its first waiter (flagged again if more wait), or frees it.
  # A waiter that has exited is granted it all the same: its monitor fires and passes it on.
  defp hand_over(state, lock) do
    case :queue.out(Map.get(state.waiting, lock, :queue.new())) do
      {{:value, {pid, _} = from}, rest} ->
        more? = not :queue.is_empty(rest)
        :ets.insert(@table, {lock, pid, more?})
        GenServer.reply(from, :ok)

        waiting =
          if more?, do: Map.put(state.waiting, lock, rest), else: Map.delete(state.waiting, lock)

        watch(%{state | waiting: waiting}, pid)

      {:empty, _} ->
        :ets.delete(@table, lock)
        %{state | waiting: Map.delete(state.waiting, lock)}
    end
  end

  defp watch(state, pid) do
    if is_map_key(state.monitors, pid),
      do: state,
      else: put_in(state.monitors[pid], Process.monitor(pid))
  end
end
