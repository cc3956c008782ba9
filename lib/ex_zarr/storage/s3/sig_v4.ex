defmodule ExZarr.Storage.S3.SigV4 do
  @moduledoc false
  # AWS Signature Version 4 for S3 requests, on `:crypto`.
  #
  # `sign/2` takes a request (method, host, path, query, headers, payload hash) and the
  # credentials and returns the headers to send, `authorization` included. The secret key is
  # only ever used inside this module, to derive the signing key; it is never returned or
  # put in an error.
  #
  #     request = %{method: "GET", host: "examplebucket.s3.amazonaws.com", path: "/test.txt",
  #                 query: [], headers: [{"range", "bytes=0-9"}], payload_hash: ExZarr.Storage.S3.SigV4.empty_hash()}
  #     headers = ExZarr.Storage.S3.SigV4.sign(request, credentials: creds, region: "us-east-1",
  #                                           now: ~U[2013-05-24 00:00:00Z])

  @empty_sha256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

  @typedoc """
  Access key id, secret key and session token; the secret and the token inside functions, so
  that they never print.
  """
  @type credentials :: %{
          access_key_id: String.t(),
          secret_access_key: (() -> String.t()),
          session_token: (() -> String.t() | nil) | nil
        }

  @type request :: %{
          method: String.t(),
          host: String.t(),
          path: String.t(),
          query: [{String.t(), String.t()}],
          headers: [{String.t(), String.t()}],
          payload_hash: String.t()
        }

  @doc "The SHA-256 of an empty payload, in hex."
  @spec empty_hash() :: String.t()
  def empty_hash, do: @empty_sha256

  @doc "The lowercase hex SHA-256 of a payload (iodata)."
  @spec payload_hash(iodata()) :: String.t()
  def payload_hash(payload), do: Base.encode16(:crypto.hash(:sha256, payload), case: :lower)

  @doc """
  Signs a request. Options: `:credentials`, `:region`, `:now` (a `DateTime`, default now),
  `:service` (default `"s3"`). Returns all headers to send: the request's own headers plus
  `host`, `x-amz-date`, `x-amz-content-sha256`, `x-amz-security-token` (with a session token)
  and `authorization`.
  """
  @spec sign(request(), keyword()) :: [{String.t(), String.t()}]
  def sign(request, opts) do
    creds = Keyword.fetch!(opts, :credentials)
    region = Keyword.fetch!(opts, :region)
    service = Keyword.get(opts, :service, "s3")
    now = Keyword.get_lazy(opts, :now, &DateTime.utc_now/0)
    amz_date = amz_date(now)
    date = binary_part(amz_date, 0, 8)
    scope = Enum.join([date, region, service, "aws4_request"], "/")

    token =
      case creds.session_token && creds.session_token.() do
        nil -> []
        token -> [{"x-amz-security-token", token}]
      end

    headers =
      [
        {"host", request.host},
        {"x-amz-content-sha256", request.payload_hash},
        {"x-amz-date", amz_date}
        | token
      ] ++ Enum.map(request.headers, fn {k, v} -> {String.downcase(k), String.trim(v)} end)

    headers = Enum.sort(headers)
    signed_headers = Enum.map_join(headers, ";", &elem(&1, 0))

    canonical =
      Enum.join(
        [
          request.method,
          encode_path(request.path),
          canonical_query(request.query),
          Enum.map_join(headers, "", fn {k, v} -> k <> ":" <> v <> "\n" end),
          signed_headers,
          request.payload_hash
        ],
        "\n"
      )

    string_to_sign =
      Enum.join(["AWS4-HMAC-SHA256", amz_date, scope, payload_hash(canonical)], "\n")

    signature =
      creds
      |> signing_key(date, region, service)
      |> hmac(string_to_sign)
      |> Base.encode16(case: :lower)

    authorization =
      "AWS4-HMAC-SHA256 Credential=#{creds.access_key_id}/#{scope}," <>
        "SignedHeaders=#{signed_headers},Signature=#{signature}"

    [{"authorization", authorization} | headers]
  end

  # `YYYYMMDDTHHMMSSZ` (Calendar.strftime/2 parses its format on every call: a third of the
  # time of a signature).
  defp amz_date(%DateTime{year: year} = t) when year in 0..9999 do
    <<d2(div(year, 100))::binary, d2(rem(year, 100))::binary, d2(t.month)::binary,
      d2(t.day)::binary, ?T, d2(t.hour)::binary, d2(t.minute)::binary, d2(t.second)::binary, ?Z>>
  end

  defp d2(n), do: <<?0 + div(n, 10), ?0 + rem(n, 10)>>

  # The signing key depends only on the secret, the day, the region and the service, so its
  # four HMACs (about 13 us each with OpenSSL 3) are done once a day: the key is kept in
  # :persistent_term under the access key id, region and service, with the day and a
  # fingerprint of the secret it was derived from.
  defp signing_key(creds, date, region, service) do
    secret = creds.secret_access_key.()
    slot = {__MODULE__, creds.access_key_id, region, service}
    fingerprint = :erlang.phash2(secret)

    case :persistent_term.get(slot, nil) do
      {^date, ^fingerprint, key} ->
        key

      _ ->
        key =
          ("AWS4" <> secret)
          |> hmac(date)
          |> hmac(region)
          |> hmac(service)
          |> hmac("aws4_request")

        :persistent_term.put(slot, {date, fingerprint, key})
        key
    end
  end

  defp hmac(key, data), do: :crypto.mac(:hmac, :sha256, key, data)

  @doc """
  Percent-encodes a path the way S3 signs it: every byte except unreserved characters and `/`.

      iex> ExZarr.Storage.S3.SigV4.encode_path("/a b/ü+c")
      "/a%20b/%C3%BC%2Bc"
  """
  @spec encode_path(String.t()) :: String.t()
  def encode_path(path) do
    if plain_path?(path),
      do: path,
      else: URI.encode(path, &(&1 == ?/ or URI.char_unreserved?(&1)))
  end

  # Only unreserved characters and `/` (the common case, kept as it is without a copy).
  defp plain_path?(<<c, rest::binary>>)
       when c in ?a..?z or c in ?A..?Z or c in ?0..?9 or c in [?/, ?-, ?_, ?., ?~],
       do: plain_path?(rest)

  defp plain_path?(<<>>), do: true
  defp plain_path?(_other), do: false

  @doc "Percent-encodes a query key or value (every byte except unreserved characters)."
  @spec encode(String.t()) :: String.t()
  def encode(value), do: URI.encode(value, &URI.char_unreserved?/1)

  @doc "The query string, sorted and encoded as it is signed (and sent)."
  @spec canonical_query([{String.t(), String.t()}]) :: String.t()
  def canonical_query(query) do
    query
    |> Enum.map(fn {k, v} -> {encode(k), encode(v)} end)
    |> Enum.sort()
    |> Enum.map_join("&", fn {k, v} -> k <> "=" <> v end)
  end
end
