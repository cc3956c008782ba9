defmodule ExZarr.Storage.S3.Client do
  @moduledoc false
  # The HTTP side of the S3 backend: builds request URLs for a bucket (path-style or virtual
  # hosted), signs them with `ExZarr.Storage.S3.SigV4` (unless anonymous) and sends them with
  # `ExZarr.Storage.HTTP` on the connection pool `:ex_zarr_s3`, retrying what is worth
  # retrying (S3's `SlowDown` is a 503). Every attempt is signed afresh.
  #
  # Nothing here logs, and errors never carry headers: credentials and signatures stay inside.

  alias ExZarr.Storage.HTTP
  alias ExZarr.Storage.S3.SigV4

  @derive {Inspect, except: [:credentials]}
  @enforce_keys [:http, :scheme, :host, :port, :bucket, :region]
  defstruct [:http, :scheme, :host, :port, :bucket, :region, :credentials, path_style: true]

  @type t :: %__MODULE__{
          http: HTTP.t(),
          scheme: String.t(),
          host: String.t(),
          port: :inet.port_number(),
          bucket: String.t(),
          region: String.t(),
          credentials: SigV4.credentials() | nil,
          path_style: boolean()
        }

  @doc """
  Sends one request for an object key (`""` for the bucket itself), with retries, and returns
  the status, the response headers (lowercase names) and the body. Options: `query:` (pairs),
  `headers:`, `body:` (iodata) and `payload_hash:`, what the request is signed with
  (`"UNSIGNED-PAYLOAD"` or a hex SHA-256; by default the body's hash over http and
  `"UNSIGNED-PAYLOAD"` over https).

      {:ok, 200, _headers, json} = ExZarr.Storage.S3.Client.request(client, :get, "zarr.json")
  """
  @spec request(t(), HTTP.method(), String.t(), keyword()) :: HTTP.response() | {:error, term()}
  def request(client, method, key, opts \\ []) do
    query = Keyword.get(opts, :query, [])
    headers = Keyword.get(opts, :headers, [])
    # POST and PUT always carry a body (Content-Length: 0 when empty), which S3 expects.
    body = Keyword.get(opts, :body, if(method in [:post, :put], do: "", else: nil))
    payload_hash = Keyword.get_lazy(opts, :payload_hash, fn -> default_hash(client, body) end)
    # Sent as it is (iodata): no copy of the value.
    body_opts = if body == nil, do: [], else: [body: body]
    path = object_path(client, key)
    host = host_header(client)
    qs = SigV4.canonical_query(query)

    base = "#{client.scheme}://#{host}#{SigV4.encode_path(path)}"
    url = if qs == "", do: base, else: base <> "?" <> qs

    HTTP.with_retries(client.http, fn ->
      signed = sign(client, method, host, path, query, headers, payload_hash)
      HTTP.request(client.http, method, url, signed, body_opts)
    end)
  end

  defp default_hash(_client, nil), do: SigV4.empty_hash()
  defp default_hash(%__MODULE__{scheme: "https"}, _body), do: "UNSIGNED-PAYLOAD"
  defp default_hash(_client, body), do: SigV4.payload_hash(body)

  defp sign(%__MODULE__{credentials: nil}, _method, host, _path, _query, headers, _hash),
    do: [{"host", host} | headers]

  defp sign(client, method, host, path, query, headers, payload_hash) do
    request = %{
      method: method |> Atom.to_string() |> String.upcase(),
      host: host,
      path: path,
      query: query,
      headers: headers,
      payload_hash: payload_hash
    }

    SigV4.sign(request, credentials: client.credentials, region: client.region)
  end

  defp object_path(%__MODULE__{path_style: true, bucket: bucket}, key),
    do: "/" <> bucket <> "/" <> key

  defp object_path(%__MODULE__{path_style: false}, key), do: "/" <> key

  defp host_header(client) do
    host = if client.path_style, do: client.host, else: client.bucket <> "." <> client.host
    default_port = if client.scheme == "https", do: 443, else: 80
    if client.port == default_port, do: host, else: "#{host}:#{client.port}"
  end

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
