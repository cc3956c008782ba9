defmodule ExZarr.Test.MinIO do
  @moduledoc """
  Starts a throwaway MinIO server for the S3 tests, on 127.0.0.1 and a free port, with its
  data in a temporary directory. The binary comes from `scripts/install-minio`.

  MinIO runs under `sh`, which stops it when its stdin closes, so the server goes away with
  the port that started it, even if the test VM dies.

      server = ExZarr.Test.MinIO.start!()
      opts = ExZarr.Test.MinIO.store_opts(server, "bucket", "some/prefix")
      ExZarr.Test.MinIO.stop(server)
  """

  @user "exzarr-test"
  @password "exzarr-test-secret"

  @type t :: %{
          port: port(),
          http_port: :inet.port_number(),
          dir: String.t(),
          endpoint: String.t()
        }

  @doc "Where `scripts/install-minio` puts the binary."
  @spec binary() :: String.t()
  def binary do
    {path, 0} = System.cmd(Path.expand("scripts/install-minio"), ["--path"])
    String.trim(path)
  end

  @doc "Starts a server (in `dir` on `http_port` when given, to restart one) and waits for it."
  @spec start!(keyword()) :: t()
  def start!(opts \\ []) do
    bin = binary()

    unless File.exists?(bin),
      do: raise("MinIO is not built: run scripts/install-minio (expected #{bin})")

    dir = Keyword.get_lazy(opts, :dir, fn -> temp_dir() end)
    http_port = Keyword.get_lazy(opts, :http_port, &free_port/0)
    console_port = free_port()

    script = ~s(exec 3<&0; "$0" "$@" </dev/null & pid=$!; read _ <&3; kill $pid; wait $pid)

    port =
      Port.open({:spawn_executable, System.find_executable("sh")}, [
        :binary,
        :exit_status,
        :stderr_to_stdout,
        args: [
          "-c",
          script,
          bin,
          "server",
          "--quiet",
          "--address",
          "127.0.0.1:#{http_port}",
          "--console-address",
          "127.0.0.1:#{console_port}",
          dir
        ],
        env: [
          {~c"MINIO_ROOT_USER", String.to_charlist(@user)},
          {~c"MINIO_ROOT_PASSWORD", String.to_charlist(@password)},
          {~c"MINIO_BROWSER", ~c"off"},
          {~c"MINIO_UPDATE", ~c"off"}
        ]
      ])

    server = %{
      port: port,
      http_port: http_port,
      dir: dir,
      endpoint: "http://127.0.0.1:#{http_port}"
    }

    wait_ready!(server, 300)
    server
  end

  @doc "Stops the server (its data directory stays, for a restart)."
  @spec stop(t()) :: :ok
  def stop(%{port: port, http_port: http_port}) do
    if Port.info(port) != nil do
      Port.close(port)
      wait_down(http_port, 100)
    end

    :ok
  end

  @doc "Options for `ExZarr.Storage.S3` pointing at `bucket` (created if missing) and `path`."
  @spec store_opts(t(), String.t(), String.t()) :: keyword()
  def store_opts(server, bucket, path) do
    opts = [
      endpoint: server.endpoint,
      bucket: bucket,
      path: path,
      access_key_id: @user,
      secret_access_key: @password,
      region: "us-east-1",
      max_retries: 3,
      base_backoff: 20
    ]

    {:ok, store} = ExZarr.Storage.new(ExZarr.Storage.S3, opts)

    case ExZarr.Storage.S3.Client.request(store.state.client, "PUT", "") do
      {:ok, status, _, body} when status == 200 or status == 409 ->
        if status == 409 and not (body =~ "BucketAlready"), do: raise("bucket: #{body}")

      other ->
        raise "could not create bucket #{bucket}: #{inspect(other)}"
    end

    opts
  end

  @doc "Credentials of the test server, for Python clients."
  @spec credentials() :: {String.t(), String.t()}
  def credentials, do: {@user, @password}

  defp temp_dir do
    dir = Path.join(System.tmp_dir!(), "ex_zarr_minio_#{System.unique_integer([:positive])}")
    File.mkdir_p!(dir)
    dir
  end

  defp free_port do
    {:ok, socket} = :gen_tcp.listen(0, ip: {127, 0, 0, 1})
    {:ok, port} = :inet.port(socket)
    :gen_tcp.close(socket)
    port
  end

  defp wait_ready!(server, 0), do: raise("MinIO did not start on #{server.endpoint}")

  defp wait_ready!(server, tries) do
    case :gen_tcp.connect({127, 0, 0, 1}, server.http_port, [:binary, active: false], 200) do
      {:ok, socket} ->
        request = "GET /minio/health/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
        :ok = :gen_tcp.send(socket, request)
        reply = :gen_tcp.recv(socket, 0, 2_000)
        :gen_tcp.close(socket)

        case reply do
          {:ok, "HTTP/1.1 200" <> _} -> :ok
          _ -> retry_ready(server, tries)
        end

      {:error, _} ->
        retry_ready(server, tries)
    end
  end

  defp retry_ready(server, tries) do
    receive do
      {port, {:exit_status, status}} when port == server.port ->
        raise "MinIO exited with status #{status}"
    after
      100 -> wait_ready!(server, tries - 1)
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
