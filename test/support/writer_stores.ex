defmodule ExZarr.Test.WriterStores do
  @moduledoc """
  The object stores that the concurrent-writer tests run on, each behind toxiproxy adding
  latency to every answer (to widen the race windows) when toxiproxy is installed.

      case ExZarr.Test.WriterStores.start(:azure, "writers", "a.zarr", 5) do
        {:ok, opts} -> ... ExZarr.Storage.new(:azure, opts) ...
        {:skip, reason} -> IO.puts("skipped: " <> reason)
      end
  """

  import ExUnit.Callbacks, only: [on_exit: 1]

  alias ExZarr.Test.{Azurite, FakeGCS, FerretDB, MinIO, Toxiproxy}

  @type kind :: :s3 | :azure | :gcs | :mongo_gridfs

  @doc """
  Starts the emulator of `kind` (MinIO, Azurite, fake-gcs-server, FerretDB) for the calling test (it
  stops when the test ends) and gives the options of a store at `path` in `bucket`, with `ms`
  of latency; `{:skip, reason}` when the emulator cannot be installed.
  """
  @spec start(kind(), String.t(), String.t(), non_neg_integer()) ::
          {:ok, keyword()} | {:skip, String.t()}
  def start(:s3, bucket, path, ms) do
    minio = MinIO.start!()
    on_exit(fn -> MinIO.stop(minio) end)
    {:ok, with_latency(MinIO.store_opts(minio, bucket, path), minio.http_port, "", ms)}
  end

  def start(:azure, bucket, path, ms) do
    with {:ok, server} <- emulator(Azurite) do
      {account, _key} = Azurite.account()
      opts = Azurite.store_opts(server, bucket, path)
      {:ok, with_latency(opts, server.http_port, "/" <> account, ms)}
    end
  end

  def start(:gcs, bucket, path, ms) do
    with {:ok, server} <- emulator(FakeGCS) do
      {:ok, with_latency(FakeGCS.store_opts(server, bucket, path), server.http_port, "", ms)}
    end
  end

  def start(:mongo_gridfs, bucket, path, ms) do
    with {:ok, server} <- emulator(FerretDB) do
      opts = FerretDB.store_opts(server, bucket) ++ [path: path]
      # the URL behind toxiproxy: mongodb:// and the proxy's address
      proxied = with_latency([endpoint: server.url], server.port, "", ms)
      %URI{port: port} = URI.parse(proxied[:endpoint])
      {:ok, Keyword.put(opts, :url, "mongodb://127.0.0.1:#{port}")}
    end
  end

  defp emulator(module) do
    case module.install() do
      {:ok, bin} ->
        server = module.start!(bin)
        on_exit(fn -> module.stop(server) end)
        {:ok, server}

      {:error, reason} ->
        {:skip, "#{inspect(module)} is not available (#{reason})"}
    end
  end

  # The options with the endpoint behind toxiproxy (`path` kept after its address).
  defp with_latency(opts, port, path, ms) do
    case Toxiproxy.start(port) do
      {:ok, toxiproxy} ->
        on_exit(fn -> Toxiproxy.stop(toxiproxy) end)
        :ok = Toxiproxy.add(toxiproxy, :latency, ms: ms)
        Keyword.put(opts, :endpoint, toxiproxy.endpoint <> path)

      {:error, reason} ->
        IO.puts("no latency for the concurrent writers: #{reason}")
        opts
    end
  end
end
