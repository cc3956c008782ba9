defmodule ExZarr.Storage.Mongo.Pool do
  @moduledoc """
  A small pool of `ExZarr.Storage.Mongo.Connection`s per server and login (the `key`), at
  most `size` open at once. One process (started under ExZarr's storage supervisor on first
  use) owns the sockets and hands them out; the process that runs a command uses its
  connection directly and gives it back, so only the checkout and the checkin are messages.

  When every connection is taken, callers wait in line, up to their timeout. A new
  connection is opened by the caller that needs it (the pool never waits on the network). A
  connection whose command failed on the socket is closed, and so are the idle ones of its
  key (after a server restart they are all dead); idle connections unused for 60 s are
  closed when next met. A caller that exits while holding a connection loses it to the pool,
  which closes it.

      Pool.run(key, 4, 30_000, fn -> Connection.open(host, port, opts) end, fn conn ->
        Connection.command(conn, "db", [{"ping", 1}], 30_000)
      end)
  """
  use GenServer

  alias ExZarr.Storage.Mongo.Connection

  @idle_ms 60_000

  @doc false
  @spec start_link(term()) :: GenServer.on_start()
  def start_link(_arg), do: GenServer.start_link(__MODULE__, :ok, name: __MODULE__)

  @doc "Starts the pool's process under ExZarr's storage supervisor unless it runs already."
  @spec start() :: :ok | {:error, term()}
  def start do
    if Process.whereis(__MODULE__) do
      :ok
    else
      case DynamicSupervisor.start_child(ExZarr.Storage.Supervisor, __MODULE__) do
        {:ok, _} -> :ok
        {:error, {:already_started, _}} -> :ok
        {:error, reason} -> {:error, {:mongo_pool_not_started, reason}}
      end
    end
  catch
    :exit, reason -> {:error, {:mongo_pool_not_started, reason}}
  end

  @doc """
  Runs `fun` with a connection of `key`: an idle one, or a new one from `open` when fewer than
  `size` are open, else the first to come back within `timeout` ms (then
  `{:error, {:mongo_connection, :pool_timeout}}`). A result `{:error, {:mongo_connection, _}}`
  (or an exception) closes the connection.
  """
  @spec run(
          term(),
          pos_integer(),
          timeout(),
          (() -> {:ok, Connection.t()} | {:error, term()}),
          (Connection.t() -> result)
        ) :: result | {:error, term()}
        when result: term()
  def run(key, size, timeout, open, fun) do
    ref = make_ref()

    case checkout(key, size, ref, timeout) do
      {:ok, conn} -> use(ref, conn, fun)
      :connect -> connect(ref, open, fun)
      {:error, _} = error -> error
    end
  end

  defp checkout(key, size, ref, timeout) do
    GenServer.call(__MODULE__, {:checkout, key, size, ref}, timeout)
  catch
    :exit, {:timeout, _} ->
      GenServer.cast(__MODULE__, {:cancel, ref})
      {:error, {:mongo_connection, :pool_timeout}}

    :exit, _ ->
      {:error, {:mongo_connection, :no_pool}}
  end

  # The pool learns of the new connection before it owns it: should the caller die in
  # between, the socket closes with the caller and the pool's close of it does nothing.
  defp connect(ref, open, fun) do
    case open.() do
      {:ok, conn} ->
        GenServer.cast(__MODULE__, {:adopted, ref, conn})

        with pid when is_pid(pid) <- Process.whereis(__MODULE__),
             :ok <- Connection.give_to(conn, pid) do
          use(ref, conn, fun)
        else
          _ ->
            Connection.close(conn)
            GenServer.cast(__MODULE__, {:checkin, ref, :failed})
            {:error, {:mongo_connection, :no_pool}}
        end

      error ->
        GenServer.cast(__MODULE__, {:checkin, ref, :failed})
        error
    end
  end

  defp use(ref, conn, fun) do
    result = fun.(conn)

    outcome =
      case result do
        {:error, {:mongo_connection, _}} ->
          Connection.close(conn)
          :broken

        _ ->
          {:ok, conn}
      end

    GenServer.cast(__MODULE__, {:checkin, ref, outcome})
    result
  catch
    kind, reason ->
      Connection.close(conn)
      GenServer.cast(__MODULE__, {:checkin, ref, :broken})
      :erlang.raise(kind, reason, __STACKTRACE__)
  end

  ## The pool's process

  # state: pools (key => %{size, count, idle: [{conn, since}], waiting: queue of
  # {from, ref}}) and holders (ref => {key, monitor, conn | nil}).

  @impl true
  def init(:ok), do: {:ok, %{pools: %{}, holders: %{}}}

  @impl true
  def handle_call({:checkout, key, size, ref}, from, state) do
    pool =
      state.pools
      |> Map.get(key, %{size: size, count: 0, idle: [], waiting: :queue.new()})
      |> drop_stale()

    pool = %{pool | waiting: :queue.in({from, ref}, pool.waiting)}
    {:noreply, serve(key, pool, state)}
  end

  @impl true
  def handle_cast({:checkin, ref, outcome}, state) do
    case Map.pop(state.holders, ref) do
      {nil, _} ->
        {:noreply, state}

      {{key, monitor, _conn}, holders} ->
        Process.demonitor(monitor, [:flush])
        {:noreply, release(key, outcome, %{state | holders: holders})}
    end
  end

  def handle_cast({:adopted, ref, conn}, state) do
    case state.holders do
      %{^ref => {key, monitor, nil}} ->
        {:noreply, %{state | holders: Map.put(state.holders, ref, {key, monitor, conn})}}

      _ ->
        {:noreply, state}
    end
  end

  # A caller gave up waiting: out of the line, or, if its connection was already on the way,
  # that connection back.
  def handle_cast({:cancel, ref}, state) do
    case Map.fetch(state.holders, ref) do
      {:ok, {_key, _monitor, conn}} ->
        handle_cast({:checkin, ref, if(conn, do: {:ok, conn}, else: :failed)}, state)

      :error ->
        pools =
          Map.new(state.pools, fn {key, pool} ->
            {key, %{pool | waiting: :queue.filter(&(elem(&1, 1) != ref), pool.waiting)}}
          end)

        {:noreply, %{state | pools: pools}}
    end
  end

  @impl true
  def handle_info({:DOWN, monitor, :process, _pid, _reason}, state) do
    case Enum.find(state.holders, fn {_ref, {_key, m, _conn}} -> m == monitor end) do
      {ref, {key, _, conn}} ->
        if conn, do: Connection.close(conn)
        state = %{state | holders: Map.delete(state.holders, ref)}
        {:noreply, release(key, :failed, state)}

      nil ->
        {:noreply, state}
    end
  end

  def handle_info(_message, state), do: {:noreply, state}

  defp release(key, outcome, state) do
    pool = Map.fetch!(state.pools, key)

    pool =
      case outcome do
        {:ok, conn} ->
          %{pool | idle: [{conn, now()} | pool.idle]}

        :failed ->
          %{pool | count: pool.count - 1}

        :broken ->
          Enum.each(pool.idle, fn {conn, _} -> Connection.close(conn) end)
          %{pool | count: pool.count - 1 - length(pool.idle), idle: []}
      end

    serve(key, pool, state)
  end

  # Hands idle connections, then new slots, to the callers in line.
  defp serve(key, pool, state) do
    case :queue.out(pool.waiting) do
      {{:value, {{pid, _} = from, ref}}, waiting}
      when pool.idle != [] or pool.count < pool.size ->
        {reply, conn, pool} =
          case pool.idle do
            [{conn, _} | idle] -> {{:ok, conn}, conn, %{pool | idle: idle, waiting: waiting}}
            [] -> {:connect, nil, %{pool | count: pool.count + 1, waiting: waiting}}
          end

        GenServer.reply(from, reply)
        holder = {key, Process.monitor(pid), conn}
        serve(key, pool, %{state | holders: Map.put(state.holders, ref, holder)})

      _ ->
        %{state | pools: Map.put(state.pools, key, pool)}
    end
  end

  defp drop_stale(pool) do
    {fresh, stale} = Enum.split_with(pool.idle, fn {_, since} -> now() - since < @idle_ms end)
    Enum.each(stale, fn {conn, _} -> Connection.close(conn) end)
    %{pool | idle: fresh, count: pool.count - length(stale)}
  end

  defp now, do: System.monotonic_time(:millisecond)
end
