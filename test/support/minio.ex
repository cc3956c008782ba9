defmodule ExZarr.Test.MinIO do
  @moduledoc """
  Runs a throwaway MinIO server for the S3 tests, on 127.0.0.1 and free ports, with its data
  in a temporary directory. The binary comes from `scripts/install-minio`.

  A keeper process owns the server: the server stops when `stop/1` is called, when the
  process that started it exits, or with the VM (MinIO runs under `sh`, which kills it when
  its stdin, the keeper's port, closes). `pause/1` and `resume/1` take the same server down
  and bring it back on the same port with the same data, to test what clients do meanwhile.

      server = ExZarr.Test.MinIO.start!()
      opts = ExZarr.Test.MinIO.store_opts(server, "bucket", "some/prefix")
      ExZarr.Test.MinIO.stop(server)
  """

  alias ExZarr.Test.Server

  @user "exzarr-test"
  @password "exzarr-test-secret"

  @type t :: %{
          keeper: pid(),
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

  @doc "Starts a server owned by the calling process and waits until it serves requests."
  @spec start!() :: t()
  def start! do
    bin = binary()

    unless File.exists?(bin),
      do: raise("MinIO is not built: run scripts/install-minio (expected #{bin})")

    random = Base.encode16(:crypto.strong_rand_bytes(6), case: :lower)
    dir = Path.join(System.tmp_dir!(), "ex_zarr_minio_" <> random)
    File.mkdir_p!(dir)
    [http_port, console_port] = Server.free_ports(2)
    server = %{http_port: http_port, dir: dir, endpoint: "http://127.0.0.1:#{http_port}"}
    owner = self()
    keeper = spawn(fn -> keep(owner, server, bin, console_port) end)
    :ok = call(keeper, :start)
    Map.put(server, :keeper, keeper)
  end

  @doc "Stops the server and deletes its data."
  @spec stop(t()) :: :ok
  def stop(server), do: call(server.keeper, :stop)

  @doc "Takes the server down, keeping its data and port."
  @spec pause(t()) :: :ok
  def pause(server), do: call(server.keeper, :pause)

  @doc "Brings a paused server back and waits until it serves requests."
  @spec resume(t()) :: :ok
  def resume(server), do: call(server.keeper, :start)

  defp call(keeper, request) do
    ref = Process.monitor(keeper)
    send(keeper, {request, self(), ref})

    receive do
      {^ref, reply} ->
        Process.demonitor(ref, [:flush])
        reply

      {:DOWN, ^ref, _, _, reason} ->
        if request == :stop, do: :ok, else: raise("MinIO keeper died: #{inspect(reason)}")
    after
      120_000 -> raise "MinIO keeper did not answer #{request}"
    end
  end

  # The keeper owns the running server (an ExZarr.Test.Server, or nil while paused).
  defp keep(owner, server, bin, console_port) do
    owner_ref = Process.monitor(owner)
    keep_loop(owner_ref, server, fn -> open(server, bin, console_port) end, nil)
  end

  defp keep_loop(owner_ref, server, open, running) do
    receive do
      {:start, from, ref} ->
        running = running || open.()
        send(from, {ref, :ok})
        keep_loop(owner_ref, server, open, running)

      {:pause, from, ref} ->
        close(running)
        send(from, {ref, :ok})
        keep_loop(owner_ref, server, open, nil)

      {:stop, from, ref} ->
        close(running)
        File.rm_rf!(server.dir)
        send(from, {ref, :ok})

      {:DOWN, ^owner_ref, _, _, _} ->
        close(running)
        File.rm_rf!(server.dir)

      {port, {:exit_status, _}} when is_port(port) ->
        keep_loop(owner_ref, server, open, nil)

      {port, {:data, _}} when is_port(port) ->
        keep_loop(owner_ref, server, open, running)
    end
  end

  defp open(server, bin, console_port) do
    args = fn http_port ->
      ["server", "--quiet", "--address", "127.0.0.1:#{http_port}"] ++
        ["--console-address", "127.0.0.1:#{console_port}", server.dir]
    end

    env = [
      {~c"MINIO_ROOT_USER", String.to_charlist(@user)},
      {~c"MINIO_ROOT_PASSWORD", String.to_charlist(@password)},
      {~c"MINIO_BROWSER", ~c"off"}
    ]

    Server.start!(bin, args, port: server.http_port, env: env, ready: &ready?/1)
  end

  defp close(nil), do: :ok
  defp close(running), do: Server.stop(running)

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

    case ExZarr.Storage.S3.Client.request(store.state.client, :put, "") do
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

  # MinIO accepts connections before it serves requests; its health check says when it does.
  defp ready?(http_port) do
    with {:ok, socket} <-
           :gen_tcp.connect({127, 0, 0, 1}, http_port, [:binary, active: false], 200),
         :ok <-
           :gen_tcp.send(socket, "GET /minio/health/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"),
         reply = :gen_tcp.recv(socket, 0, 2_000),
         :gen_tcp.close(socket),
         # MinIO answers an HTTP/1.0 request in HTTP/1.0.
         {:ok, <<"HTTP/1.", _, " 200", _::binary>>} <- reply do
      true
    else
      _ -> false
    end
  end
end
