defmodule ExZarr.Storage.HTTP.Pool do
  @moduledoc false
  # Keep-alive connections (`ExZarr.Storage.HTTP.Connection`) for the object-store backends,
  # one pool per backend (a registered name, e.g. `:ex_zarr_s3`), kept apart per server and
  # client settings (the `key`).
  #
  # The pool's process owns the sockets (a socket closes when its owner exits), but requests
  # never go through it: idle connections sit in a public ETS table named like the pool, and
  # the process that sends a request takes one out (`checkout/2`), uses it directly and puts
  # it back (`checkin/3`), so a request costs a few ETS operations and no message. A new
  # connection is opened by the caller and handed to the pool's process (`adopt/2`).
  #
  # Bounds: at most 64 idle connections per key are kept (more are closed when they come
  # back); an idle connection unused for 30 s is closed, so few stale ones are handed out
  # (a server closes idle connections after a while; `ExZarr.Storage.HTTP` sends a request
  # again on a fresh connection when a reused one turns out closed). A connection taken out
  # by a process that exits before giving it back is closed by the pool's periodic sweep.
  #
  #     :ok = Pool.start(:my_pool)
  #     conn = case Pool.checkout(:my_pool, key) do
  #       {:ok, conn} -> conn
  #       :none -> with {:ok, conn} <- Connection.open(...), :ok <- Pool.adopt(:my_pool, conn), do: conn
  #     end
  #     # ... Connection.request(conn, ...) ...
  #     Pool.checkin(:my_pool, key, conn)
  use GenServer

  alias ExZarr.Storage.HTTP.Connection

  @max_idle 64
  @idle_ms 30_000
  @sweep_ms 5_000

  @doc false
  @spec child_spec(atom()) :: Supervisor.child_spec()
  def child_spec(name), do: %{id: {__MODULE__, name}, start: {__MODULE__, :start_link, [name]}}

  @doc false
  @spec start_link(atom()) :: GenServer.on_start()
  def start_link(name), do: GenServer.start_link(__MODULE__, name, name: name)

  @doc """
  Starts the pool `name` under ExZarr's storage supervisor, unless it runs already.
  """
  @spec start(atom()) :: :ok | {:error, term()}
  def start(name) do
    if Process.whereis(name) do
      :ok
    else
      case DynamicSupervisor.start_child(ExZarr.Storage.Supervisor, {__MODULE__, name}) do
        {:ok, _} -> :ok
        {:error, {:already_started, _}} -> :ok
        {:error, reason} -> {:error, reason}
      end
    end
  catch
    :exit, reason -> {:error, reason}
  end

  @doc """
  Takes the most recently used idle connection for `key` out of the pool, or `:none`.
  Connections idle for too long are closed on the way.
  """
  @spec checkout(atom(), term()) :: {:ok, Connection.t()} | :none
  def checkout(name, key) do
    case :ets.prev(name, {key, :newest}) do
      {^key, _} = slot ->
        case :ets.take(name, slot) do
          [{_, conn, since}] ->
            if now() - since > @idle_ms do
              Connection.close(conn)
              checkout(name, key)
            else
              :ets.insert(name, {{:busy, conn.socket}, self(), conn})
              {:ok, conn}
            end

          # Another process took it first.
          [] ->
            checkout(name, key)
        end

      _ ->
        :none
    end
  rescue
    # The pool is restarting: no idle connections.
    ArgumentError -> :none
  end

  @doc """
  Hands a connection the caller has just opened to the pool's process (which then owns it)
  and counts it as taken out by the caller.
  """
  @spec adopt(atom(), Connection.t()) :: :ok | {:error, term()}
  def adopt(name, conn) do
    # Counted as taken out before the pool's process owns it: should the caller die in
    # between, the connection closes with it, and the sweep drops the entry. The pool is
    # started here when the store was opened on another node (a job's unit on a peer).
    with :ok <- start(name),
         pid when is_pid(pid) <- Process.whereis(name) || {:error, :no_pool} do
      :ets.insert(name, {{:busy, conn.socket}, self(), conn})

      with {:error, _} = error <- Connection.give_to(conn, pid) do
        :ets.delete(name, {:busy, conn.socket})
        error
      end
    end
  rescue
    ArgumentError -> {:error, :no_pool}
  end

  @doc "Puts a connection back after a complete exchange, or closes it when enough are idle."
  @spec checkin(atom(), term(), Connection.t()) :: :ok
  def checkin(name, key, conn) do
    :ets.delete(name, {:busy, conn.socket})

    if :ets.select_count(name, [{{{key, :_}, :_, :_}, [], [true]}]) < @max_idle do
      :ets.insert(name, {{key, :erlang.unique_integer([:monotonic])}, conn, now()})
      :ok
    else
      Connection.close(conn)
    end
  rescue
    ArgumentError -> Connection.close(conn)
  end

  @doc "Closes a connection that was taken out (after an error, or one the server closes)."
  @spec discard(atom(), Connection.t()) :: :ok
  def discard(name, conn) do
    :ets.delete(name, {:busy, conn.socket})
    Connection.close(conn)
  rescue
    ArgumentError -> Connection.close(conn)
  end

  defp now, do: System.monotonic_time(:millisecond)

  @impl true
  def init(name) do
    :ets.new(name, [:ordered_set, :public, :named_table, write_concurrency: true])
    Process.send_after(self(), :sweep, @sweep_ms)
    {:ok, name}
  end

  @doc """
  Closes the idle connections unused for too long and those taken out by a process that has
  exited since. The pool's process does it every #{div(@sweep_ms, 1000)} s.
  """
  @spec sweep(atom()) :: :ok
  def sweep(name) do
    old = now() - @idle_ms

    for {{:busy, _} = slot, pid, conn} <-
          :ets.select(name, [{{{:busy, :_}, :_, :_}, [], [:"$_"]}]),
        not Process.alive?(pid) do
      :ets.delete(name, slot)
      Connection.close(conn)
    end

    stale = [{{:"$1", :_, :"$2"}, [{:is_integer, :"$2"}, {:<, :"$2", old}], [:"$1"]}]

    for slot <- :ets.select(name, stale), [{_, conn, _}] <- [:ets.take(name, slot)] do
      Connection.close(conn)
    end

    :ok
  end

  @impl true
  def handle_info(:sweep, name) do
    sweep(name)
    Process.send_after(self(), :sweep, @sweep_ms)
    {:noreply, name}
  end

  # Anything else (e.g. an ssl socket reporting it closed) needs nothing: a closed
  # connection is found out when it is next used.
  def handle_info(_message, name), do: {:noreply, name}
end
