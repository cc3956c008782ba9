defmodule ExZarr.Test.FerretDB do
  @moduledoc """
  A throwaway FerretDB server (MongoDB wire protocol, SQLite backend, data in a temporary
  directory, 127.0.0.1 and free ports) for the GridFS storage tests. The binary comes from
  `scripts/install-ferretdb`. With `auth: {user, password}` it requires SCRAM logins and has
  that user in `admin`.

  The server belongs to the process that starts it (it stops when that process exits);
  `restart/1` stops it and starts it again on the same port with the same data.

      {:ok, bin} = ExZarr.Test.FerretDB.install()
      server = ExZarr.Test.FerretDB.start!(bin)
      {:ok, store} = ExZarr.Storage.new(:mongo_gridfs, ExZarr.Test.FerretDB.store_opts(server, "b"))
      ExZarr.Test.FerretDB.stop(server)
  """

  alias ExZarr.Test.Server

  @doc """
  For a test module of the GridFS store: installs FerretDB when the module compiles (the
  binary in `@ferretdb`, `{:ok, bin}`), or skips every test of the module with the reason
  printed; with `shared_server: true` (the default) one server runs for the module, in
  `ctx.server`.
  """
  defmacro __using__(opts) do
    shared? = Keyword.get(opts, :shared_server, true)

    quote do
      @ferretdb ExZarr.Test.FerretDB.install()

      with {:error, reason} <- @ferretdb do
        IO.puts("Skipping #{inspect(__MODULE__)}: FerretDB is not available (#{reason})")
        @moduletag skip: "FerretDB is not available"
      end

      if unquote(shared?) do
        setup_all do
          with {:ok, bin} <- @ferretdb do
            server = ExZarr.Test.FerretDB.start!(bin)
            on_exit(fn -> ExZarr.Test.FerretDB.stop(server) end)
            %{server: server}
          end
        end
      end
    end
  end

  @type t :: %{
          running: Server.t(),
          bin: String.t(),
          dir: String.t(),
          port: :inet.port_number(),
          url: String.t(),
          args: [String.t()]
        }

  @doc "Builds the server if needed; `{:error, reason}` when it cannot be built."
  @spec install() :: {:ok, String.t()} | {:error, String.t()}
  def install, do: Server.install("scripts/install-ferretdb")

  @doc "Starts a server and waits until it accepts connections."
  @spec start!(String.t(), keyword()) :: t()
  def start!(bin, opts \\ []) do
    random = Base.encode16(:crypto.strong_rand_bytes(6), case: :lower)
    dir = Path.join(System.tmp_dir!(), "ex_zarr_ferretdb_" <> random)
    File.mkdir_p!(dir)
    [port, debug_port] = Server.free_ports(2)

    auth =
      case Keyword.get(opts, :auth) do
        nil ->
          []

        {user, password} ->
          ["--test-enable-new-auth", "--setup-database=admin"] ++
            ["--setup-username=#{user}", "--setup-password=#{password}"]
      end

    args =
      ["--handler=sqlite", "--sqlite-url=file:#{dir}/", "--state-dir=#{dir}"] ++
        ["--telemetry=disable", "--debug-addr=127.0.0.1:#{debug_port}", "--log-level=error"] ++
        auth

    server = %{bin: bin, dir: dir, port: port, url: "mongodb://127.0.0.1:#{port}", args: args}
    Map.put(server, :running, run(server))
  end

  defp run(server),
    do:
      Server.start!(server.bin, &(["--listen-addr=127.0.0.1:#{&1}"] ++ server.args),
        port: server.port
      )

  @doc "Stops the server and starts it again on the same port, with the same data."
  @spec restart(t()) :: t()
  def restart(server) do
    Server.stop(server.running)
    %{server | running: run(server)}
  end

  @doc "Stops the server and deletes its data."
  @spec stop(t()) :: :ok
  def stop(server) do
    with :ok <- Server.stop(server.running), {:ok, _} <- File.rm_rf(server.dir), do: :ok
  end

  @doc "Options of a GridFS store in `bucket` of the database `exzarr`."
  @spec store_opts(t(), String.t()) :: keyword()
  def store_opts(server, bucket),
    do: [
      url: server.url,
      database: "exzarr",
      collection: bucket,
      max_retries: 3,
      base_backoff: 20
    ]
end
