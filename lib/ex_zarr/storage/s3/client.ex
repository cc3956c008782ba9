defmodule ExZarr.Storage.S3.Client do
  @moduledoc """
  The HTTP side of the S3 backend: builds request URLs for a bucket (path-style or virtual
  hosted), signs them with `ExZarr.Storage.S3.SigV4` (unless anonymous), sends them with
  OTP's `:httpc` on a dedicated profile that keeps connections alive, and retries what is
  worth retrying.

  Retries: connection errors, timeouts and the statuses 408, 429, 500, 502, 503 and 504
  (S3's `SlowDown` is a 503) are retried up to `max_retries` times, waiting a random time
  between 0 and `min(max_backoff, base_backoff * 2^attempt)` milliseconds ("full jitter").
  Every attempt is signed afresh.

  Nothing here logs, and errors never carry headers: credentials and signatures stay inside.
  """

  alias ExZarr.Storage.S3.SigV4

  @profile :ex_zarr_s3
  @retry_statuses [408, 429, 500, 502, 503, 504]

  @derive {Inspect, except: [:credentials]}
  @enforce_keys [:scheme, :host, :port, :bucket, :region]
  defstruct [
    :scheme,
    :host,
    :port,
    :bucket,
    :region,
    :credentials,
    path_style: true,
    timeout: 30_000,
    connect_timeout: 5_000,
    max_retries: 5,
    base_backoff: 100,
    max_backoff: 5_000,
    ssl: []
  ]

  @type t :: %__MODULE__{
          scheme: String.t(),
          host: String.t(),
          port: :inet.port_number(),
          bucket: String.t(),
          region: String.t(),
          credentials: SigV4.credentials() | nil,
          path_style: boolean(),
          timeout: pos_integer(),
          connect_timeout: pos_integer(),
          max_retries: non_neg_integer(),
          base_backoff: non_neg_integer(),
          max_backoff: non_neg_integer(),
          ssl: keyword()
        }

  @type response :: {:ok, non_neg_integer(), [{String.t(), String.t()}], binary()}

  @doc "Starts `:inets` (and `:ssl` for https) and this module's `:httpc` profile, once per node."
  @spec start(t()) :: :ok | {:error, term()}
  def start(%__MODULE__{scheme: scheme}) do
    apps = if scheme == "https", do: [:inets, :ssl], else: [:inets]

    with :ok <- start_apps(apps) do
      case :inets.start(:httpc, profile: @profile) do
        {:ok, _} -> configure()
        {:error, {:already_started, _}} -> :ok
        {:error, reason} -> {:error, {:http_client_not_started, reason}}
      end
    end
  end

  defp start_apps(apps) do
    Enum.reduce_while(apps, :ok, fn app, :ok ->
      case Application.ensure_all_started(app) do
        {:ok, _} -> {:cont, :ok}
        {:error, reason} -> {:halt, {:error, {:http_client_not_started, reason}}}
      end
    end)
  end

  # Connections are kept alive and reused, but a request is only ever sent on an idle
  # connection (max_keep_alive_length 1): queued behind a slow or dead request on a busy one
  # it would wait for that request's timeout.
  defp configure do
    :httpc.set_options(
      [max_sessions: 64, max_keep_alive_length: 1, keep_alive_timeout: 60_000],
      @profile
    )
  end

  @doc """
  Sends one request for an object key (`""` for the bucket itself) and returns the status,
  the response headers (lowercase names) and the body. `body` is iodata; `payload_hash` is
  what the request is signed with (`"UNSIGNED-PAYLOAD"` or a hex SHA-256).
  """
  @spec request(t(), String.t(), String.t(), keyword()) :: response() | {:error, term()}
  def request(client, method, key, opts \\ []) do
    query = Keyword.get(opts, :query, [])
    headers = Keyword.get(opts, :headers, [])
    # :httpc needs a body for POST and PUT, even an empty one.
    body = Keyword.get(opts, :body, if(method in ["POST", "PUT"], do: "", else: nil))
    payload_hash = Keyword.get_lazy(opts, :payload_hash, fn -> default_hash(client, body) end)
    attempt(client, {method, key, query, headers, body, payload_hash}, 0)
  end

  defp default_hash(_client, nil), do: SigV4.empty_hash()
  defp default_hash(%__MODULE__{scheme: "https"}, _body), do: "UNSIGNED-PAYLOAD"
  defp default_hash(_client, body), do: SigV4.payload_hash(body)

  defp attempt(client, request, n) do
    result = send_once(client, request)

    if retry?(result) and n < client.max_retries do
      cap = min(client.max_backoff, client.base_backoff * Integer.pow(2, n))
      Process.sleep(:rand.uniform(cap + 1) - 1)
      attempt(client, request, n + 1)
    else
      result
    end
  end

  defp retry?({:ok, status, _, _}), do: status in @retry_statuses
  defp retry?({:error, _}), do: true

  defp send_once(client, {method, key, query, headers, body, payload_hash}) do
    path = object_path(client, key)
    host = host_header(client)

    signed =
      case client.credentials do
        nil ->
          [{"host", host} | headers]

        credentials ->
          request = %{
            method: method,
            host: host,
            path: path,
            query: query,
            headers: headers,
            payload_hash: payload_hash
          }

          SigV4.sign(request, credentials: credentials, region: client.region)
      end

    qs = SigV4.canonical_query(query)

    url =
      "#{client.scheme}://#{host}#{SigV4.encode_path(path)}#{if qs == "", do: "", else: "?" <> qs}"

    http_headers = for {k, v} <- signed, do: {String.to_charlist(k), String.to_charlist(v)}

    http_request =
      if body == nil,
        do: {String.to_charlist(url), http_headers},
        else:
          {String.to_charlist(url), http_headers, ~c"application/octet-stream", to_binary(body)}

    http_opts = [
      timeout: client.timeout,
      connect_timeout: client.connect_timeout,
      autoredirect: false,
      ssl: ssl_options(client)
    ]

    case :httpc.request(
           http_method(method),
           http_request,
           http_opts,
           [body_format: :binary],
           @profile
         ) do
      {:ok, {{_, status, _}, resp_headers, resp_body}} ->
        {:ok, status, for({k, v} <- resp_headers, do: {List.to_string(k), List.to_string(v)}),
         resp_body}

      {:error, reason} ->
        {:error, {:http_error, reason}}
    end
  end

  # :httpc takes the length of a list body as its number of elements, so iodata is joined.
  defp to_binary(body) when is_binary(body), do: body
  defp to_binary(body), do: IO.iodata_to_binary(body)

  defp http_method("GET"), do: :get
  defp http_method("PUT"), do: :put
  defp http_method("POST"), do: :post
  defp http_method("DELETE"), do: :delete
  defp http_method("HEAD"), do: :head

  defp object_path(%__MODULE__{path_style: true, bucket: bucket}, key),
    do: "/" <> bucket <> "/" <> key

  defp object_path(%__MODULE__{path_style: false}, key), do: "/" <> key

  defp host_header(client) do
    host = if client.path_style, do: client.host, else: client.bucket <> "." <> client.host
    default_port = if client.scheme == "https", do: 443, else: 80
    if client.port == default_port, do: host, else: "#{host}:#{client.port}"
  end

  defp ssl_options(%__MODULE__{scheme: "https", ssl: []}) do
    [
      verify: :verify_peer,
      cacerts: :public_key.cacerts_get(),
      customize_hostname_check: [match_fun: :public_key.pkix_verify_hostname_match_fun(:https)]
    ]
  end

  defp ssl_options(%__MODULE__{ssl: ssl}), do: ssl

  @doc """
  An S3 error response as `{:s3_error, status, code, message}` (code and message from the
  XML body when there is one).
  """
  @spec error(non_neg_integer(), binary()) ::
          {:s3_error, non_neg_integer(), String.t(), String.t()}
  def error(status, body) do
    {:s3_error, status, xml_value(body, "Code") || "", xml_value(body, "Message") || ""}
  end

  @doc """
  The text of every `<tag>` element in an XML body, unescaped. S3's responses are flat and
  machine-written; matching the few elements we need directly avoids an XML parser that
  would turn a hostile server's element names into atoms.
  """
  @spec xml_values(binary(), String.t()) :: [String.t()]
  def xml_values(body, tag) do
    ~r/<#{tag}>([^<]*)<\/#{tag}>/
    |> Regex.scan(body, capture: :all_but_first)
    |> Enum.map(fn [text] -> unescape(text) end)
  end

  @doc "The prefixes in a delimited listing's `<CommonPrefixes>` elements, unescaped."
  @spec common_prefixes(binary()) :: [String.t()]
  def common_prefixes(body) do
    ~r/<CommonPrefixes>\s*<Prefix>([^<]*)<\/Prefix>\s*<\/CommonPrefixes>/
    |> Regex.scan(body, capture: :all_but_first)
    |> Enum.map(fn [text] -> unescape(text) end)
  end

  @doc "The text of the first `<tag>` element, or nil."
  @spec xml_value(binary(), String.t()) :: String.t() | nil
  def xml_value(body, tag), do: List.first(xml_values(body, tag))

  defp unescape(text) do
    Regex.replace(~r/&(amp|lt|gt|quot|apos|#x[0-9a-fA-F]+|#[0-9]+);/, text, fn
      _, "amp" -> "&"
      _, "lt" -> "<"
      _, "gt" -> ">"
      _, "quot" -> "\""
      _, "apos" -> "'"
      entity, "#x" <> hex -> codepoint(String.to_integer(hex, 16), entity)
      entity, "#" <> dec -> codepoint(String.to_integer(dec), entity)
    end)
  end

  defp codepoint(n, _entity) when n in 0..0xD7FF or n in 0xE000..0x10FFFF, do: <<n::utf8>>
  defp codepoint(_n, entity), do: entity
end
