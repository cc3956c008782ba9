defmodule ExZarr.Bench.MinIO do
  @moduledoc """
  A throwaway MinIO server for the object-store workload: on 127.0.0.1 and a free port, with
  its data in a directory of the bench's data dir, one bucket, and credentials made up for
  the run. The binary is the one `scripts/install-minio` builds; when it is missing the
  workload is skipped.

  MinIO runs under `sh`, which kills it when its stdin (the port of this VM) closes, so the
  server goes away with `stop/1`, with the process that started it, or with the VM.

      {:ok, server} = ExZarr.Bench.MinIO.start("/tmp/minio-data", "bench")
      ExZarr.open(ExZarr.Bench.MinIO.store_opts(server, "exzarr/array"))
      ExZarr.Bench.MinIO.stop(server)
  """

  alias ExZarr.Storage.S3.Client

  @bench_dir Path.expand("..", __DIR__)
  @region "us-east-1"

  @type t :: %{
          port: port(),
          dir: Path.t(),
          endpoint: String.t(),
          bucket: String.t(),
          access_key_id: String.t(),
          secret_access_key: String.t(),
          region: String.t()
        }

  @doc "Path of the MinIO binary (`scripts/install-minio --path`), or why there is none."
  @spec binary() :: {:ok, Path.t()} | {:error, String.t()}
  def binary do
    script = Path.join(@bench_dir, "../scripts/install-minio")

    case System.cmd(script, ["--path"]) do
      {path, 0} ->
        path = String.trim(path)

        if File.regular?(path),
          do: {:ok, path},
          else: {:error, "MinIO is not installed (run scripts/install-minio; expected #{path})"}

      {out, status} ->
        {:error, "scripts/install-minio --path failed (#{status}): #{String.trim(out)}"}
    end
  end

  @doc """
  Starts a server with its data in `dir` (emptied first) and creates `bucket`; waits until
  the server answers. Owned by the calling process.
  """
  @spec start(Path.t(), String.t()) :: {:ok, t()} | {:error, String.t()}
  def start(dir, bucket) do
    with {:ok, bin} <- binary() do
      File.rm_rf!(dir)
      File.mkdir_p!(dir)
      [http, console] = free_ports(2)
      secret = Base.encode16(:crypto.strong_rand_bytes(12), case: :lower)

      server = %{
        port: open(bin, dir, http, console, secret),
        dir: dir,
        endpoint: "http://127.0.0.1:#{http}",
        bucket: bucket,
        access_key_id: "exzarr-bench",
        secret_access_key: secret,
        region: @region
      }

      case create_bucket(server, 300) do
        :ok ->
          {:ok, server}

        {:error, reason} ->
          stop(server)
          {:error, reason}
      end
    end
  end

  @doc "Stops the server and deletes its data."
  @spec stop(t()) :: :ok
  def stop(server) do
    if Port.info(server.port), do: Port.close(server.port)
    File.rm_rf!(server.dir)
    :ok
  end

  @doc "`ExZarr.create/1`/`ExZarr.open/1` storage options for the store at `prefix` in the bucket."
  @spec store_opts(t(), String.t()) :: keyword()
  def store_opts(server, prefix) do
    [
      path: "s3://#{server.bucket}/#{prefix}",
      endpoint: server.endpoint,
      access_key_id: server.access_key_id,
      secret_access_key: server.secret_access_key,
      region: server.region
    ]
  end

  @doc "What a Python peer needs to reach the bucket (endpoint, bucket, region, credentials)."
  @spec peer_info(t()) :: map()
  def peer_info(server),
    do: Map.take(server, [:endpoint, :bucket, :region, :access_key_id, :secret_access_key])

  defp open(bin, dir, http, console, secret) do
    # `sh` starts MinIO in the background and kills it once its stdin reaches end of file.
    script =
      ~s(exec 3<&0; "$0" "$@" </dev/null >/dev/null 2>&1 & pid=$!; cat <&3 >/dev/null; kill $pid; wait $pid)

    addresses = ["--address", "127.0.0.1:#{http}", "--console-address", "127.0.0.1:#{console}"]

    Port.open({:spawn_executable, System.find_executable("sh")}, [
      :binary,
      :exit_status,
      args: ["-c", script, bin, "server", "--quiet" | addresses] ++ [dir],
      env: [
        {~c"MINIO_ROOT_USER", ~c"exzarr-bench"},
        {~c"MINIO_ROOT_PASSWORD", String.to_charlist(secret)},
        {~c"MINIO_BROWSER", ~c"off"}
      ]
    ])
  end

  # Creating the bucket is also the readiness check: until MinIO listens the request fails to
  # connect, and until it serves requests it answers 503; either way it is tried again every
  # 100 ms (`tries` times).
  defp create_bucket(server, tries) do
    opts =
      [path: "s3://#{server.bucket}", max_retries: 0] ++
        Keyword.delete(store_opts(server, ""), :path)

    {:ok, store} = ExZarr.Storage.new(:s3, opts)
    port = server.port

    case Client.request(store.state.client, :put, "") do
      {:ok, 200, _, _} ->
        :ok

      {:ok, status, _, body} when status != 503 or tries == 0 ->
        {:error, "could not create the bucket #{server.bucket}: #{status} #{body}"}

      _not_ready when tries > 0 ->
        receive do
          {^port, {:exit_status, status}} -> {:error, "MinIO exited with status #{status}"}
        after
          100 -> create_bucket(server, tries - 1)
        end

      {:error, reason} ->
        {:error, "MinIO did not start on #{server.endpoint}: #{inspect(reason)}"}
    end
  end

  # Two listening sockets held open together, so that the two ports differ.
  defp free_ports(n) do
    sockets = for _ <- 1..n, do: elem(:gen_tcp.listen(0, ip: {127, 0, 0, 1}), 1)

    try do
      Enum.map(sockets, &elem(:inet.port(&1), 1))
    after
      Enum.each(sockets, &:gen_tcp.close/1)
    end
  end
end
