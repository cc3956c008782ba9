defmodule ExZarr.Test.FakeGCS do
  @moduledoc """
  A throwaway fake-gcs-server (in memory, plain http, 127.0.0.1, a free port) for the GCS
  storage tests. The binary comes from `scripts/install-fake-gcs`.

      {:ok, bin} = ExZarr.Test.FakeGCS.install()
      server = ExZarr.Test.FakeGCS.start!(bin)
      opts = ExZarr.Test.FakeGCS.store_opts(server, "bucket", "some/prefix")
      ExZarr.Test.FakeGCS.stop(server)
  """

  alias ExZarr.Test.Server

  @doc "Builds the server if needed; `{:error, reason}` when it cannot be built."
  @spec install() :: {:ok, String.t()} | {:error, String.t()}
  def install, do: Server.install("scripts/install-fake-gcs")

  @doc "Starts a server and waits for it."
  @spec start!(String.t()) :: Server.t()
  def start!(bin) do
    server =
      Server.start!(bin, fn port ->
        ["-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port", "#{port}"] ++
          ["-external-url", "http://127.0.0.1:#{port}", "-log-level", "error"]
      end)

    Map.put(server, :endpoint, "http://127.0.0.1:#{server.http_port}")
  end

  @doc "Stops the server."
  @spec stop(Server.t()) :: :ok
  defdelegate stop(server), to: Server

  @doc "Options for `ExZarr.Storage.GCS` pointing at `bucket` (created if missing) and `path`."
  @spec store_opts(map(), String.t(), String.t()) :: keyword()
  def store_opts(server, bucket, path) do
    opts = [
      endpoint: server.endpoint,
      bucket: bucket,
      path: path,
      max_retries: 3,
      base_backoff: 20
    ]

    {:ok, http} = ExZarr.Storage.HTTP.new(opts, :ex_zarr_gcs)
    :ok = ExZarr.Storage.HTTP.start(http, "http")
    body = :jiffy.encode(%{"name" => bucket})
    url = server.endpoint <> "/storage/v1/b"

    case ExZarr.Storage.HTTP.request(http, :post, url, [],
           body: body,
           content_type: "application/json"
         ) do
      {:ok, status, _, _} when status in [200, 409] -> opts
      other -> raise "could not create bucket #{bucket}: #{inspect(other)}"
    end
  end
end
