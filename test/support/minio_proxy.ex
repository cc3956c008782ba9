defmodule ExZarr.Test.MinIOProxy do
  @moduledoc """
  A TCP proxy between the S3 client and MinIO that injects faults, for the S3 fault tests.

  Setting a plan cuts the open connections; each new connection then takes the plan:
    * `latency: ms` - every piece of data, both ways, is delayed by `ms`,
    * `break: n, after_bytes: b` - the next `n` connections are reset (RST) once `b` bytes of
      the server's answer went through (0: before any),
    * `down: true` - connections are reset on accept.

      proxy = ExZarr.Test.MinIOProxy.start!(minio.http_port)
      ExZarr.Test.MinIOProxy.faults(proxy, break: 2, after_bytes: 100)
  """

  @type t :: %{pid: pid(), port: :inet.port_number(), plan: :ets.tid(), endpoint: String.t()}

  @doc "Starts a proxy to `127.0.0.1:upstream_port`, owned by the calling process."
  @spec start!(:inet.port_number()) :: t()
  def start!(upstream_port) do
    {:ok, listen} =
      :gen_tcp.listen(0, [:binary, ip: {127, 0, 0, 1}, active: false, reuseaddr: true])

    {:ok, port} = :inet.port(listen)
    plan = :ets.new(:minio_proxy_plan, [:public, :set])
    :ets.insert(plan, [{:latency, 0}, {:break, 0}, {:after_bytes, 0}, {:down, false}])
    pid = spawn_link(fn -> accept_loop(listen, upstream_port, plan) end)
    :ok = :gen_tcp.controlling_process(listen, pid)
    %{pid: pid, port: port, plan: plan, endpoint: "http://127.0.0.1:#{port}"}
  end

  @doc "Sets the fault plan for new connections (unset faults are cleared)."
  @spec faults(t(), keyword()) :: :ok
  def faults(proxy, opts) do
    :ets.insert(proxy.plan, [
      {:latency, Keyword.get(opts, :latency, 0)},
      {:break, Keyword.get(opts, :break, 0)},
      {:after_bytes, Keyword.get(opts, :after_bytes, 0)},
      {:down, Keyword.get(opts, :down, false)}
    ])

    # Open connections are cut, so that the next requests take new ones, with the new plan
    # (a kept-alive connection would otherwise carry on as before). The pause lets the client
    # notice the closed connections first.
    for [pid] <- :ets.match(proxy.plan, {{:connection, :"$1"}}), do: send(pid, :cut)
    Process.sleep(100)
    :ok
  end

  defp accept_loop(listen, upstream_port, plan) do
    {:ok, client} = :gen_tcp.accept(listen)
    handler = spawn_link(fn -> handle(client, upstream_port, plan) end)
    :ok = :gen_tcp.controlling_process(client, handler)
    send(handler, :go)
    accept_loop(listen, upstream_port, plan)
  end

  defp handle(client, upstream_port, plan) do
    receive do: (:go -> :ok)
    [{_, down}] = :ets.lookup(plan, :down)
    [{_, latency}] = :ets.lookup(plan, :latency)
    [{_, after_bytes}] = :ets.lookup(plan, :after_bytes)
    # Counts down to -1 and stays there: this connection is broken while it is >= 0.
    broken = :ets.update_counter(plan, :break, {2, -1, -1, -1}) >= 0

    with false <- down,
         {:ok, upstream} <-
           :gen_tcp.connect({127, 0, 0, 1}, upstream_port, [:binary, active: false]) do
      limit = if broken, do: after_bytes, else: :infinity
      parent = self()
      :ets.insert(plan, {{:connection, parent}})
      spawn_link(fn -> pump(client, upstream, latency, :infinity, parent) end)
      spawn_link(fn -> pump(upstream, client, latency, limit, parent) end)

      receive do
        {:done, :closed} -> :gen_tcp.close(client)
        {:done, :broken} -> reset(client)
        :cut -> reset(client)
      end

      :ets.delete(plan, {:connection, parent})
      :gen_tcp.close(upstream)
    else
      _ -> reset(client)
    end
  end

  defp pump(from, to, latency, limit, parent) do
    case :gen_tcp.recv(from, 0) do
      {:ok, data} ->
        if latency > 0, do: Process.sleep(latency)

        case limit do
          :infinity ->
            :gen_tcp.send(to, data)
            pump(from, to, latency, limit, parent)

          n when byte_size(data) <= n ->
            :gen_tcp.send(to, data)
            pump(from, to, latency, n - byte_size(data), parent)

          n ->
            :gen_tcp.send(to, binary_part(data, 0, n))
            send(parent, {:done, :broken})
        end

      {:error, _} ->
        send(parent, {:done, :closed})
    end
  end

  defp reset(socket) do
    :inet.setopts(socket, linger: {true, 0})
    :gen_tcp.close(socket)
  end
end
