defmodule ExZarr.Test.Toxiproxy do
  @moduledoc """
  Runs toxiproxy-server (built by `scripts/install-toxiproxy`) for the S3 fault tests: one TCP
  proxy to an upstream server, whose faults ("toxics") are set through toxiproxy's HTTP API.

  Faults, by name (`add/3`):
    * `:latency` - every piece of data the server sends is delayed by `ms`,
    * `:reset_peer` - connections are reset (RST) `ms` after data flows (0: at once),
    * `:timeout` - data stops flowing; the connection is closed after `ms` (0: never),
    * `:limit_data` - a connection is closed once the server sent `bytes`;

  and `down/1` / `up/1` disable and re-enable the whole proxy (connections refused).

      {:ok, toxiproxy} = ExZarr.Test.Toxiproxy.start(minio.http_port)
      :ok = ExZarr.Test.Toxiproxy.add(toxiproxy, :limit_data, bytes: 1_000)
      :ok = ExZarr.Test.Toxiproxy.clear(toxiproxy)
      ExZarr.Test.Toxiproxy.stop(toxiproxy)
  """

  alias ExZarr.Test.Server

  @proxy "upstream"

  @type t :: %{server: Server.t(), api: String.t(), endpoint: String.t()}

  @doc """
  Installs and starts toxiproxy-server with a proxy to `127.0.0.1:upstream_port`, or gives
  `{:error, reason}` when it cannot be installed.
  """
  @spec start(:inet.port_number()) :: {:ok, t()} | {:error, String.t()}
  def start(upstream_port) do
    with {:ok, bin} <- Server.install("scripts/install-toxiproxy") do
      [api_port, listen_port] = Server.free_ports(2)

      server =
        Server.start!(bin, &["-host", "127.0.0.1", "-port", "#{&1}"],
          port: api_port,
          ready: &ready?/1
        )

      toxiproxy = %{
        server: server,
        api: "http://127.0.0.1:#{api_port}",
        endpoint: "http://127.0.0.1:#{listen_port}"
      }

      {:ok, 201, _} =
        request(toxiproxy, :post, "/proxies", %{
          name: @proxy,
          listen: "127.0.0.1:#{listen_port}",
          upstream: "127.0.0.1:#{upstream_port}",
          enabled: true
        })

      {:ok, toxiproxy}
    end
  end

  @doc "Stops the server."
  @spec stop(t()) :: :ok
  def stop(toxiproxy), do: Server.stop(toxiproxy.server)

  @doc """
  Adds the fault `type` to the answers coming back from the server (one fault per type).
  `attributes` are toxiproxy's: `ms` is `latency` for `:latency` and `timeout` otherwise.
  """
  @spec add(t(), :latency | :reset_peer | :timeout | :limit_data, keyword()) :: :ok
  def add(toxiproxy, type, attributes) do
    attributes =
      Map.new(attributes, fn
        {:ms, ms} when type == :latency -> {:latency, ms}
        {:ms, ms} -> {:timeout, ms}
        other -> other
      end)

    {:ok, 200, _} =
      request(toxiproxy, :post, "/proxies/#{@proxy}/toxics", %{
        name: Atom.to_string(type),
        type: Atom.to_string(type),
        stream: "downstream",
        toxicity: 1.0,
        attributes: attributes
      })

    :ok
  end

  @doc """
  Runs `fun` while the fault `type` is on, and turns the fault off `ms` (default 400) later:
  a call that retries long enough outlives it. Returns what `fun` returns.
  """
  @spec outlasting(t(), atom(), keyword(), (() -> result), pos_integer()) :: result
        when result: term()
  def outlasting(toxiproxy, type, attributes, fun, ms \\ 400) do
    :ok = add(toxiproxy, type, attributes)
    task = Task.async(fun)
    Process.sleep(ms)
    :ok = remove(toxiproxy, type)
    Task.await(task, 60_000)
  end

  @doc "Removes the fault `type`."
  @spec remove(t(), atom()) :: :ok
  def remove(toxiproxy, type) do
    {:ok, 204, _} = request(toxiproxy, :delete, "/proxies/#{@proxy}/toxics/#{type}", nil)
    :ok
  end

  @doc "Disables the proxy: open connections are closed and new ones refused."
  @spec down(t()) :: :ok
  def down(toxiproxy), do: enable(toxiproxy, false)

  @doc "Re-enables the proxy."
  @spec up(t()) :: :ok
  def up(toxiproxy), do: enable(toxiproxy, true)

  @doc "Removes every fault and re-enables the proxy."
  @spec clear(t()) :: :ok
  def clear(toxiproxy) do
    {:ok, 204, _} = request(toxiproxy, :post, "/reset", nil)
    :ok
  end

  defp enable(toxiproxy, enabled) do
    {:ok, 200, _} = request(toxiproxy, :post, "/proxies/#{@proxy}", %{enabled: enabled})
    :ok
  end

  defp request(toxiproxy, method, path, body) do
    url = String.to_charlist(toxiproxy.api <> path)

    request =
      case {method, body} do
        {:delete, nil} -> {url, []}
        {:post, nil} -> {url, [], ~c"application/json", ""}
        {:post, body} -> {url, [], ~c"application/json", :jiffy.encode(body)}
      end

    case :httpc.request(method, request, [timeout: 10_000], body_format: :binary) do
      {:ok, {{_, status, _}, _, reply}} -> {:ok, status, reply}
      {:error, reason} -> {:error, reason}
    end
  end

  defp ready?(api_port) do
    url = ~c"http://127.0.0.1:#{api_port}/version"

    match?(
      {:ok, {{_, 200, _}, _, _}},
      :httpc.request(:get, {url, []}, [timeout: 1_000, connect_timeout: 200], [])
    )
  end
end
