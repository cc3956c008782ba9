defmodule ExZarr.Storage.HTTP do
  @moduledoc """
  The HTTP plumbing shared by the object-store backends (`ExZarr.Storage.S3`,
  `ExZarr.Storage.GCS`, `ExZarr.Storage.Azure`): one request on a pooled keep-alive HTTP/1.1
  connection (`ExZarr.Storage.HTTP.Pool`, `ExZarr.Storage.HTTP.Connection`: `:gen_tcp`, or
  `:ssl` verifying the server against the OS's CAs), retries with exponential backoff and full
  jitter, option checking, and header and URL helpers. What the stores do with the answers
  (ranges, conditions, listings) is in `ExZarr.Storage.ObjectStore`.

  Timeouts: `connect_timeout` bounds opening a connection, `timeout` a whole exchange (the
  request sent and the answer read to its end); either gives `{:http_error, :timeout}`.

  Retries: connection errors, timeouts and the statuses 408, 429, 500, 502, 503 and 504 are
  retried up to `max_retries` times, waiting a random time between 0 and
  `min(max_backoff, base_backoff * 2^attempt)` milliseconds. The request is rebuilt for every
  attempt (a backend signs it afresh).

  Nothing here logs, and errors never carry request headers, so tokens and signatures stay
  inside.

      {:ok, http} = ExZarr.Storage.HTTP.new([max_retries: 2], :ex_zarr_gcs)
      :ok = ExZarr.Storage.HTTP.start(http, "http")
      {:ok, 200, _headers, _body} =
        ExZarr.Storage.HTTP.with_retries(http, fn ->
          ExZarr.Storage.HTTP.request(http, :get, "http://127.0.0.1:4443/storage/v1/b", [])
        end)
  """

  @retry_statuses [408, 429, 500, 502, 503, 504]

  alias ExZarr.Storage.HTTP.{Connection, Pool}

  @enforce_keys [:pool]
  defstruct [
    :pool,
    timeout: 30_000,
    connect_timeout: 5_000,
    max_retries: 5,
    base_backoff: 100,
    max_backoff: 5_000,
    ssl: nil,
    ssl_hash: 0
  ]

  @type t :: %__MODULE__{
          pool: atom(),
          timeout: pos_integer(),
          connect_timeout: pos_integer(),
          max_retries: non_neg_integer(),
          base_backoff: non_neg_integer(),
          max_backoff: non_neg_integer(),
          ssl: (() -> keyword()) | nil,
          ssl_hash: non_neg_integer()
        }

  @type method :: :get | :head | :put | :post | :delete
  @type headers :: [{String.t(), String.t()}]
  @type response :: {:ok, non_neg_integer(), headers(), binary()}

  # {option, default, smallest allowed}
  @client_options [
    {:timeout, 30_000, 1},
    {:connect_timeout, 5_000, 1},
    {:max_retries, 5, 0},
    {:base_backoff, 100, 0},
    {:max_backoff, 5_000, 0}
  ]

  @doc """
  Requests an object store keeps in flight by default (`c:ExZarr.Storage.io_concurrency/1`):
  each waits on the network, so many more than the core count pay off (see "Measured
  defaults" in bench/README.md).
  """
  @spec io_concurrency() :: pos_integer()
  def io_concurrency, do: 16

  @doc "The names of the client options `new/2` reads (every object store takes them)."
  @spec option_names() :: [atom()]
  def option_names, do: [:ssl | Enum.map(@client_options, &elem(&1, 0))]

  @doc """
  The client settings from a backend's options (`:timeout`, `:connect_timeout`,
  `:max_retries`, `:base_backoff`, `:max_backoff` in ms or counts, `:ssl` options for
  https), sending on the connection pool `pool` (one per backend, e.g. `:ex_zarr_s3`).
  The `:ssl` options may hold a client key or its password, so they are kept in a closure,
  which no `inspect` shows.
  """
  @spec new(keyword(), atom()) :: {:ok, t()} | {:error, {:invalid_option, atom(), term()}}
  def new(opts, pool) do
    with {:ok, values} <- integer_options(opts, @client_options) do
      case Keyword.get(opts, :ssl, []) do
        [] ->
          {:ok, struct!(__MODULE__, [pool: pool] ++ values)}

        ssl when is_list(ssl) ->
          fields = [pool: pool, ssl: fn -> ssl end, ssl_hash: :erlang.phash2(ssl)]
          {:ok, struct!(__MODULE__, fields ++ values)}

        ssl ->
          {:error, {:invalid_option, :ssl, ssl}}
      end
    end
  end

  @doc """
  Checks integer options against `{name, default, smallest allowed}` specs and returns them
  as a keyword list (defaults filled in).

      iex> ExZarr.Storage.HTTP.integer_options([a: 3], [{:a, 1, 0}, {:b, 2, 1}])
      {:ok, [a: 3, b: 2]}
      iex> ExZarr.Storage.HTTP.integer_options([a: -1], [{:a, 1, 0}])
      {:error, {:invalid_option, :a, -1}}
  """
  @spec integer_options(keyword(), [{atom(), integer(), integer()}]) ::
          {:ok, keyword()} | {:error, {:invalid_option, atom(), term()}}
  def integer_options(opts, specs) do
    Enum.reduce_while(specs, {:ok, []}, fn {name, default, least}, {:ok, acc} ->
      case Keyword.get(opts, name, default) do
        value when is_integer(value) and value >= least -> {:cont, {:ok, acc ++ [{name, value}]}}
        value -> {:halt, {:error, {:invalid_option, name, value}}}
      end
    end)
  end

  @doc "Starts `:ssl` for https and the client's connection pool, once per node."
  @spec start(t(), String.t()) :: :ok | {:error, term()}
  def start(%__MODULE__{pool: pool}, scheme) do
    with :ok <- start_ssl(scheme) do
      case Pool.start(pool) do
        :ok -> :ok
        {:error, reason} -> {:error, {:http_client_not_started, reason}}
      end
    end
  end

  defp start_ssl("https") do
    case Application.ensure_all_started(:ssl) do
      {:ok, _} -> :ok
      {:error, reason} -> {:error, {:http_client_not_started, reason}}
    end
  end

  defp start_ssl(_scheme), do: :ok

  @doc """
  Sends one request and returns the status, the response headers (lowercase names) and the
  body. `opts`: `body:` (iodata, sent as it is; a request without it has no body) and
  `content_type:` (default `"application/octet-stream"`, sent only with a body). A `host`
  header is added unless `headers` has one.

  The request goes on an idle keep-alive connection of the pool when there is one, else on
  a new one. When a reused connection turns out closed by the server before any answer, an
  idempotent request (not POST) is sent once more on a new connection.
  """
  @spec request(t(), method(), String.t(), headers(), keyword()) ::
          response() | {:error, {:http_error, term()}}
  def request(%__MODULE__{} = http, method, url, headers, opts \\ []) do
    case split_url(url) do
      {:ok, scheme, authority, host, port, target} ->
        # The ssl options (certificates, possibly) enter the pool key as a hash.
        key = {scheme, host, port, http.ssl_hash, http.timeout, http.connect_timeout}

        headers =
          if List.keymember?(headers, "host", 0),
            do: headers,
            else: [{"host", authority} | headers]

        {headers, body} = with_body(headers, opts)

        exchange = fn conn ->
          Connection.request(conn, method, target, headers, body, http.timeout)
        end

        send_on_pool(http, key, method, exchange)

      # Only a URL from a server (a resumable upload's Location) can be so bad; it may carry a
      # session token, so it is not repeated in the error.
      :error ->
        {:error, {:http_error, :invalid_url}}
    end
  end

  defp with_body(headers, opts) do
    case Keyword.fetch(opts, :body) do
      {:ok, body} ->
        type = Keyword.get(opts, :content_type, "application/octet-stream")
        length = Integer.to_string(IO.iodata_length(body))
        {headers ++ [{"content-type", type}, {"content-length", length}], body}

      :error ->
        {headers, nil}
    end
  end

  defp send_on_pool(http, key, method, exchange) do
    case Pool.checkout(http.pool, key) do
      {:ok, conn} ->
        case exchange.(conn) do
          {:error, {:unanswered, _}} when method != :post ->
            Pool.discard(http.pool, conn)
            on_new_connection(http, key, exchange)

          result ->
            finish(http, key, conn, result)
        end

      :none ->
        on_new_connection(http, key, exchange)
    end
  end

  # `scheme://authority/path?query` in parts, with the host and port of the authority: the
  # backends build these URLs themselves, so a split is enough (URI.parse runs regexes).
  defp split_url(url) do
    with [scheme, rest] when scheme in ["http", "https"] <- :binary.split(url, "://") do
      {authority, target} =
        case :binary.match(rest, ["/", "?"]) do
          {at, _} -> {binary_part(rest, 0, at), binary_part(rest, at, byte_size(rest) - at)}
          :nomatch -> {rest, "/"}
        end

      target = if String.starts_with?(target, "?"), do: "/" <> target, else: target
      {host, port} = host_port(authority, if(scheme == "https", do: 443, else: 80))
      if host == "", do: :error, else: {:ok, scheme, authority, host, port, target}
    else
      _ -> :error
    end
  end

  defp host_port("[" <> v6, default) do
    case :binary.split(v6, "]") do
      [host, rest] -> {host, port(rest, default)}
      [_] -> {"", default}
    end
  end

  defp host_port(authority, default) do
    case :binary.split(authority, ":") do
      [host, rest] -> {host, port(":" <> rest, default)}
      [host] -> {host, default}
    end
  end

  defp port(":" <> digits, default) do
    case Integer.parse(digits) do
      {port, ""} -> port
      _ -> default
    end
  end

  defp port(_, default), do: default

  defp on_new_connection(http, {scheme, host, port, _, _, _} = key, exchange) do
    ssl = ssl_options(http, scheme)

    case Connection.open(scheme, host, port, http.connect_timeout, ssl, http.timeout) do
      {:ok, conn} ->
        case Pool.adopt(http.pool, conn) do
          :ok ->
            finish(http, key, conn, exchange.(conn))

          {:error, reason} ->
            Connection.close(conn)
            {:error, {:http_error, reason}}
        end

      {:error, reason} ->
        {:error, {:http_error, reason}}
    end
  end

  defp finish(http, key, conn, {:ok, status, headers, body, keep_alive?}) do
    if keep_alive?,
      do: Pool.checkin(http.pool, key, conn),
      else: Pool.discard(http.pool, conn)

    {:ok, status, headers, body}
  end

  defp finish(http, _key, conn, {:error, reason}) do
    Pool.discard(http.pool, conn)

    case reason do
      {:unanswered, reason} -> {:error, {:http_error, reason}}
      reason -> {:error, {:http_error, reason}}
    end
  end

  defp ssl_options(%__MODULE__{ssl: nil}, "https") do
    [
      verify: :verify_peer,
      cacerts: :public_key.cacerts_get(),
      customize_hostname_check: [match_fun: :public_key.pkix_verify_hostname_match_fun(:https)]
    ]
  end

  defp ssl_options(%__MODULE__{ssl: nil}, _scheme), do: []
  defp ssl_options(%__MODULE__{ssl: ssl}, _scheme), do: ssl.()

  @doc """
  Runs `send` (one attempt, e.g. a call to `request/5`) and again after a backoff while its
  result is worth retrying (see the module doc), at most `max_retries` more times.
  """
  @spec with_retries(t(), (() -> result)) :: result when result: term()
  def with_retries(%__MODULE__{} = http, send), do: attempt(http, send, 0)

  defp attempt(http, send, n) do
    result = send.()

    if retry?(result) and n < http.max_retries do
      backoff(http, n)
      attempt(http, send, n + 1)
    else
      result
    end
  end

  @doc """
  Sleeps before retry number `n + 1`: a random time between 0 and
  `min(max_backoff, base_backoff * 2^n)` milliseconds.
  """
  @spec backoff(t(), non_neg_integer()) :: :ok
  def backoff(%__MODULE__{} = http, n),
    do: ExZarr.Storage.Backoff.sleep(n, http.base_backoff, http.max_backoff)

  @doc "Whether a request's result is worth retrying: a connection error or a transient status."
  @spec retry?(response() | {:error, term()} | term()) :: boolean()
  def retry?({:ok, status, _, _}), do: status in @retry_statuses
  def retry?({:error, {:http_error, _}}), do: true
  def retry?(_other), do: false

  @doc "The value of a response header (name in lowercase), or nil."
  @spec header(headers(), String.t()) :: String.t() | nil
  def header(headers, name) do
    case List.keyfind(headers, name, 0) do
      {_, value} -> value
      nil -> nil
    end
  end

  @doc "An environment variable, with empty treated as unset."
  @spec env(String.t()) :: String.t() | nil
  def env(name) do
    case System.get_env(name) do
      "" -> nil
      value -> value
    end
  end

  @doc """
  An `http` or `https` endpoint URL as a `URI` without a trailing slash in its path, or
  `{:error, {:invalid_option, option, url}}`.

      iex> ExZarr.Storage.HTTP.endpoint("http://127.0.0.1:10000/acct/", :endpoint).path
      "/acct"
  """
  @spec endpoint(term(), atom()) :: URI.t() | {:error, {:invalid_option, atom(), term()}}
  def endpoint(url, option) when is_binary(url) do
    case URI.parse(url) do
      %URI{scheme: scheme, host: host, query: nil} = uri
      when scheme in ["http", "https"] and is_binary(host) and host != "" ->
        %URI{uri | path: String.trim_trailing(uri.path || "", "/")}

      _ ->
        {:error, {:invalid_option, option, url}}
    end
  end

  def endpoint(url, option), do: {:error, {:invalid_option, option, url}}

  @doc """
  Percent-encodes everything but the unreserved characters (`A-Z a-z 0-9 - . _ ~`), so `/`
  is encoded too.

      iex> ExZarr.Storage.HTTP.encode("a b/ü")
      "a%20b%2F%C3%BC"
  """
  @spec encode(String.t()) :: String.t()
  def encode(text), do: URI.encode(text, &URI.char_unreserved?/1)

  @doc """
  A query string from pairs, each name and value encoded with `encode/1` (`""` for none).

      iex> ExZarr.Storage.HTTP.query([{"prefix", "a/b"}, {"n", "2"}])
      "prefix=a%2Fb&n=2"
  """
  @spec query([{String.t(), String.t()}]) :: String.t()
  def query(pairs), do: Enum.map_join(pairs, "&", fn {k, v} -> encode(k) <> "=" <> encode(v) end)
end
