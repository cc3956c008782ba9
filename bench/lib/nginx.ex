defmodule ExZarr.Bench.Nginx do
  @moduledoc """
  nginx (Debian's package, `scripts/install-nginx`) serving a directory over plain HTTP on
  127.0.0.1 and a free port, for the HTTP workload: in the foreground, with its config, logs
  and temporary files in a directory of its own, no access log. When nginx cannot be
  installed the workload is skipped.

  nginx runs under `sh`, which stops it when its stdin (the port of this VM) closes, so the
  server goes away with `stop/1`, with the process that started it, or with the VM.

      {:ok, server} = ExZarr.Bench.Nginx.start("/data/stores", "/tmp/nginx")
      ExZarr.open(server.url <> "/volume.zarr")
      ExZarr.Bench.Nginx.stop(server)
      File.rm_rf!("/tmp/nginx")
  """

  @bench_dir Path.expand("..", __DIR__)

  @type t :: %{port: port(), dir: Path.t(), url: String.t()}

  @doc """
  Starts nginx serving `root`, with its own files in `dir` (emptied first, and left for the
  caller to remove); waits until it accepts connections.
  """
  @spec start(Path.t(), Path.t()) :: {:ok, t()} | {:error, String.t()}
  def start(root, dir) do
    with {:ok, bin} <- install() do
      File.rm_rf!(dir)
      File.mkdir_p!(dir)
      {:ok, socket} = :gen_tcp.listen(0, ip: {127, 0, 0, 1})
      {:ok, http} = :inet.port(socket)
      :gen_tcp.close(socket)
      File.write!(Path.join(dir, "nginx.conf"), config(Path.expand(root), dir, http))

      script =
        ~s(exec 3<&0; "$0" "$@" </dev/null & pid=$!; cat <&3 >/dev/null; kill $pid; wait $pid)

      port =
        Port.open({:spawn_executable, System.find_executable("sh")}, [
          :binary,
          :exit_status,
          :stderr_to_stdout,
          args: [
            "-c",
            script,
            bin,
            "-e",
            Path.join(dir, "error.log"),
            "-p",
            dir,
            "-c",
            "nginx.conf"
          ]
        ])

      server = %{port: port, dir: dir, url: "http://127.0.0.1:#{http}"}

      with {:error, reason} <- wait_ready(server, http, 100) do
        if Port.info(port), do: Port.close(port)
        {:error, reason}
      end
    end
  end

  @doc "Stops nginx (closing the port ends `sh`'s stdin, and `sh` stops nginx)."
  @spec stop(t()) :: :ok
  def stop(server) do
    if Port.info(server.port), do: Port.close(server.port)
    :ok
  end

  defp install do
    script = Path.join(@bench_dir, "../scripts/install-nginx")

    with {_, 0} <- System.cmd(script, [], stderr_to_stdout: true),
         {path, 0} <- System.cmd(script, ["--path"]) do
      {:ok, String.trim(path)}
    else
      {out, status} -> {:error, "scripts/install-nginx failed (#{status}): #{String.trim(out)}"}
    end
  end

  defp config(root, dir, http) do
    temp = Enum.map(~w(client_body proxy fastcgi uwsgi scgi), &"#{&1}_temp_path #{dir}/#{&1}; ")

    """
    daemon off; master_process off; pid #{dir}/nginx.pid; error_log #{dir}/error.log warn;
    events { worker_connections 1024; }
    http {
      access_log off; default_type application/octet-stream; #{temp}
      server { listen 127.0.0.1:#{http}; root #{root}; }
    }
    """
  end

  defp wait_ready(_server, _http, 0), do: {:error, "nginx did not start"}

  defp wait_ready(server, http, tries) do
    case :gen_tcp.connect({127, 0, 0, 1}, http, [], 100) do
      {:ok, socket} ->
        :gen_tcp.close(socket)
        {:ok, server}

      {:error, _} ->
        port = server.port

        receive do
          {^port, {:exit_status, status}} -> {:error, "nginx exited with status #{status}"}
        after
          100 -> wait_ready(server, http, tries - 1)
        end
    end
  end
end
