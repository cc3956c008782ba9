defmodule ExZarr.Test.Azurite do
  @moduledoc """
  A throwaway Azurite blob service (in memory, 127.0.0.1, a free port) for the Azure storage
  tests, with its well-known development account. Azurite comes from
  `scripts/install-azurite`. It accepts any API version: the Python SDK (adlfs) asks for
  newer ones than it knows.

      {:ok, bin} = ExZarr.Test.Azurite.install()
      server = ExZarr.Test.Azurite.start!(bin)
      opts = ExZarr.Test.Azurite.store_opts(server, "container", "some/prefix")
      ExZarr.Test.Azurite.stop(server)
  """

  alias ExZarr.Test.Server

  # Azurite's documented development account (public, the same in every installation).
  @account "devstoreaccount1"
  @key "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

  @doc "Installs Azurite if needed; `{:error, reason}` when it cannot be installed."
  @spec install() :: {:ok, String.t()} | {:error, String.t()}
  def install, do: Server.install("scripts/install-azurite")

  @doc "Starts a blob service and waits for it."
  @spec start!(String.t()) :: Server.t()
  def start!(bin) do
    server =
      Server.start!(bin, fn port ->
        ["--blobHost", "127.0.0.1", "--blobPort", "#{port}", "--inMemoryPersistence"] ++
          ["--silent", "--disableTelemetry", "--loose", "--skipApiVersionCheck"]
      end)

    Map.put(server, :endpoint, "http://127.0.0.1:#{server.http_port}/#{@account}")
  end

  @doc "Stops the server."
  @spec stop(Server.t()) :: :ok
  defdelegate stop(server), to: Server

  @doc "The development account and its key."
  @spec account() :: {String.t(), String.t()}
  def account, do: {@account, @key}

  @doc "Options for `ExZarr.Storage.Azure` at `container` (created if missing) and `path`."
  @spec store_opts(map(), String.t(), String.t()) :: keyword()
  def store_opts(server, container, path) do
    opts = [
      endpoint: server.endpoint,
      account: @account,
      account_key: @key,
      container: container,
      path: path,
      max_retries: 3,
      base_backoff: 20
    ]

    {:ok, store} = ExZarr.Storage.new(:azure, opts)
    :ok = ExZarr.Storage.Azure.create_container(store.state)
    opts
  end
end
