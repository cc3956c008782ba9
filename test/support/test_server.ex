defmodule ExZarr.Test.Server do
  @moduledoc """
  Runs an emulator (fake-gcs-server, Azurite, MinIO) for a storage test: installs it with its
  `scripts/install-*` script, starts it on 127.0.0.1 and a free port, waits until it is ready
  (by default: accepts connections), and stops it.

  The server runs under `sh`, which stops it when its stdin closes, so it goes away with the
  port that started it, even if the test VM dies.

      {:ok, bin} = ExZarr.Test.Server.install("scripts/install-fake-gcs")
      server = ExZarr.Test.Server.start!(bin, fn port -> ["-port", "\#{port}"] end)
      ExZarr.Test.Server.stop(server)
  """

  @type t :: %{port: port(), http_port: :inet.port_number()}

  @doc """
  Runs an install script (idempotent, cached) and returns the binary it installed, or
  `{:error, reason}` with its output when it cannot (no toolchain, no network).
  """
  @spec install(String.t()) :: {:ok, String.t()} | {:error, String.t()}
  def install(script) do
    script = Path.expand(script)

    case System.cmd(script, [], stderr_to_stdout: true) do
      {_, 0} ->
        {path, 0} = System.cmd(script, ["--path"])
        {:ok, String.trim(path)}

      {output, status} ->
        {:error, "#{Path.basename(script)} failed (exit #{status}): #{String.trim(output)}"}
    end
  end

  @doc """
  Starts `bin` with the arguments `args.(http_port)` and waits until it is ready. Options:
  `env:` (as for `Port.open/2`), `port:` (the http port; default a free one) and `ready:`, a
  function of the http port that says whether the server is ready (default: it accepts a
  connection).
  """
  @spec start!(String.t(), (:inet.port_number() -> [String.t()]), keyword()) :: t()
  def start!(bin, args, opts \\ []) do
    http_port = Keyword.get_lazy(opts, :port, fn -> hd(free_ports(1)) end)
    script = ~s(exec 3<&0; "$0" "$@" </dev/null & pid=$!; read _ <&3; kill $pid; wait $pid)

    port =
      Port.open({:spawn_executable, System.find_executable("sh")}, [
        :binary,
        :exit_status,
        :stderr_to_stdout,
        args: ["-c", script, bin | args.(http_port)],
        env: Keyword.get(opts, :env, [])
      ])

    server = %{port: port, http_port: http_port}
    wait_ready!(server, bin, Keyword.get(opts, :ready, &accepts?/1), 300)
    server
  end

  @doc "Stops the server and waits until its port is closed."
  @spec stop(t()) :: :ok
  def stop(%{port: port, http_port: http_port}) do
    if Port.info(port) != nil do
      Port.close(port)
      wait_down(http_port, 100)
    end

    :ok
  end

  @doc """
  `n` different free ports on 127.0.0.1 for servers that bind them a moment later. They come
  from just below the kernel's ephemeral range (`ip_local_port_range`), which it never hands
  out by itself: a port it picked for us (`listen(0)`) could be taken by one of the tests'
  outgoing connections before the server binds it. Calls take the ports one after another, so
  concurrent tests get different ones; a port something holds is skipped.
  """
  @spec free_ports(pos_integer()) :: [:inet.port_number()]
  def free_ports(n) do
    low = ephemeral_low()
    sockets = for _ <- 1..n, do: bind_next(low, 100)
    ports = for socket <- sockets, do: elem(:inet.port(socket), 1)
    Enum.each(sockets, &:gen_tcp.close/1)
    ports
  end

  @span 8_000

  # A listening socket on the next free port below `low`, the ephemeral range's start: the
  # VM's unique integers number the calls, from an offset that tells this OS process's apart.
  defp bind_next(_low, 0), do: raise("no free port below the ephemeral range")

  defp bind_next(low, tries) do
    n = String.to_integer(System.pid()) + System.unique_integer([:positive, :monotonic])
    port = low - @span + rem(n, @span)

    case :gen_tcp.listen(port, ip: {127, 0, 0, 1}) do
      {:ok, socket} -> socket
      {:error, _} -> bind_next(low, tries - 1)
    end
  end

  defp ephemeral_low do
    with {:ok, text} <- File.read("/proc/sys/net/ipv4/ip_local_port_range"),
         [low | _] <- String.split(text),
         {low, ""} when low > @span + 1024 <- Integer.parse(low) do
      low
    else
      _ -> 32_768
    end
  end

  defp accepts?(http_port) do
    case :gen_tcp.connect({127, 0, 0, 1}, http_port, [], 200) do
      {:ok, socket} -> :gen_tcp.close(socket) == :ok
      {:error, _} -> false
    end
  end

  defp wait_ready!(server, bin, _ready, 0),
    do: raise("#{bin} did not start on port #{server.http_port}")

  defp wait_ready!(server, bin, ready, tries) do
    unless ready.(server.http_port) do
      receive do
        {port, {:exit_status, status}} when port == server.port ->
          raise "#{bin} exited with status #{status}"
      after
        100 -> wait_ready!(server, bin, ready, tries - 1)
      end
    end
  end

  defp wait_down(_http_port, 0), do: :ok

  defp wait_down(http_port, tries) do
    case :gen_tcp.connect({127, 0, 0, 1}, http_port, [], 100) do
      {:ok, socket} ->
        :gen_tcp.close(socket)
        Process.sleep(50)
        wait_down(http_port, tries - 1)

      {:error, _} ->
        :ok
    end
  end
end
