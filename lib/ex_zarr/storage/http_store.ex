defmodule ExZarr.Storage.HTTPStore do
  @moduledoc """
  A read-only store published over plain HTTP(S) (`storage: :http`): the key `"c/0/1"` is
  the URL `<url>/c/0/1`. This is how most public Zarr data is served (OME-Zarr images,
  climate archives), by any web server or CDN.

      {:ok, array} = ExZarr.open("https://example.org/data/image.zarr/0")
      {:ok, group} = ExZarr.open_group(storage: :http, url: "https://example.org/data/image.zarr",
                                       headers: [{"authorization", "Bearer " <> token}])

  Options:
    * `:url` (or a URL in `:path`) - `http://` or `https://`, the store's root. A query
      string (`?token=...`, a signed URL's) is sent with every key.
    * `:headers` - extra request headers, `[{name, value}]` strings (tokens). They are sent
      only to the store's own origin (scheme, host and port), never after a redirect to
      another one, and the struct's `Inspect` leaves them and the query out.
    * `:cacertfile` - a PEM file of the CAs to trust instead of the system's (a private CA).
      By default https verifies the server's certificate and host name against the OS's
      CAs; `:ssl` replaces those settings with `:ssl` options of your own.
    * `:timeout`, `:connect_timeout` (ms, default 30,000 and 5,000), `:max_retries` (5),
      `:base_backoff`, `:max_backoff` (ms): as for S3, see `ExZarr.Storage.HTTP`.

  Guarantees:
    * Reads are `GET`s on kept-alive connections (the pool `:ex_zarr_http`), with
      `Range: bytes=a-b` or `bytes=-n` for ranged and suffix reads, so a sharded read
      fetches only the shard index and the inner chunks it needs. A 206 answer is taken
      only when its `Content-Range` is the one asked for; a server that ignores `Range`
      (200 and the whole body) works too, the range being cut out here. A read of no bytes
      is a `HEAD` (does the key exist).
    * 404 is `{:error, :not_found}` (a missing chunk reads as the fill value), 403 is
      `{:error, {:forbidden, key}}`, other statuses `{:error, {:http_status, status, key}}`.
      Connection errors, timeouts and 408/429/5xx are retried with backoff; an answer cut
      short is an error (and retried), never a short value. Redirects (301, 302, 303, 307,
      308) are followed, at most 5 in a row. A body with a `Content-Encoding` other than
      `identity` is refused (none is asked for).
    * Nothing can be listed over plain HTTP: `list/2` (and so walking a group's members)
      gives `{:error, {:not_supported, reason}}`. Open groups through their consolidated
      metadata (zarr-python's `consolidate_metadata`), or open arrays and groups by path.
    * Writes and deletes are `{:error, :read_only}`.
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage.{HTTP, ObjectStore}

  @derive {Inspect, except: [:headers, :query]}
  @enforce_keys [:http, :origin, :path, :query, :headers]
  defstruct [:http, :origin, :path, :query, :headers]

  @type t :: %__MODULE__{
          http: HTTP.t(),
          origin: String.t(),
          path: String.t(),
          query: String.t(),
          headers: HTTP.headers()
        }

  @max_redirects 5
  @managed_headers ["host", "range", "content-length", "transfer-encoding", "connection"]
  @redirects [301, 302, 303, 307, 308]
  @not_listable "listing over plain HTTP; open the group with consolidated metadata " <>
                  "or open its members by path"

  @impl true
  def init(opts) do
    with {:ok, uri} <- base_url(opts),
         {:ok, headers} <- headers(Keyword.get(opts, :headers, [])),
         {:ok, ssl} <- ssl(opts),
         {:ok, http} <- HTTP.new(Keyword.put(opts, :ssl, ssl), :ex_zarr_http),
         :ok <- HTTP.start(http, uri.scheme) do
      {:ok,
       %__MODULE__{
         http: http,
         origin: origin(uri),
         path: String.trim_trailing(uri.path || "", "/"),
         query: if(uri.query in [nil, ""], do: "", else: "?" <> uri.query),
         headers: headers
       }}
    end
  end

  defp base_url(opts) do
    {option, url} =
      case Keyword.fetch(opts, :url) do
        {:ok, url} -> {:url, url}
        :error -> {:path, Keyword.get(opts, :path)}
      end

    case if(is_binary(url), do: URI.new(url), else: url) do
      nil ->
        {:error, {:missing_option, :url}}

      {:ok, %URI{scheme: scheme, host: host, userinfo: nil, fragment: nil} = uri}
      when scheme in ["http", "https"] and is_binary(host) and host != "" ->
        {:ok, uri}

      # Credentials in the URL are not repeated in the error.
      {:ok, %URI{userinfo: info}} when is_binary(info) ->
        {:error, {:invalid_option, option, "credentials in the URL: give them in headers:"}}

      _ ->
        {:error, {:invalid_option, option, url}}
    end
  end

  # `scheme://host[:port]`, the port only when it is not the scheme's default.
  defp origin(%URI{scheme: scheme, host: host, port: port}) do
    host = if String.contains?(host, ":"), do: "[#{host}]", else: host

    if port == URI.default_port(scheme),
      do: "#{scheme}://#{host}",
      else: "#{scheme}://#{host}:#{port}"
  end

  # Header names and values as strings without line breaks (no request splitting), names
  # in lowercase; those the store sets itself are refused.
  defp headers(headers) when is_list(headers) do
    if List.improper?(headers),
      do: {:error, {:invalid_option, :headers, :not_string_pairs}},
      else: header_pairs(headers)
  end

  defp headers(_headers), do: {:error, {:invalid_option, :headers, :not_string_pairs}}

  defp header_pairs(headers) do
    Enum.reduce_while(headers, {:ok, []}, fn
      {name, value}, {:ok, acc} when is_binary(name) and is_binary(value) ->
        if name != "" and String.downcase(name) not in @managed_headers and
             :binary.match(name <> value, ["\r", "\n", <<0>>]) == :nomatch and
             not String.contains?(name, [":", " "]),
           do: {:cont, {:ok, acc ++ [{String.downcase(name), value}]}},
           else: {:halt, {:error, {:invalid_option, :headers, name}}}

      _, _ ->
        {:halt, {:error, {:invalid_option, :headers, :not_string_pairs}}}
    end)
  end

  defp ssl(opts) do
    case {Keyword.fetch(opts, :cacertfile), Keyword.get(opts, :ssl)} do
      {:error, _} ->
        {:ok, Keyword.get(opts, :ssl, [])}

      {{:ok, _file}, ssl} when ssl not in [nil, []] ->
        {:error, {:conflicting_options, [:cacertfile, :ssl]}}

      {{:ok, file}, _} ->
        if is_binary(file) and File.regular?(file),
          do:
            {:ok,
             [
               verify: :verify_peer,
               cacertfile: String.to_charlist(file),
               customize_hostname_check: [
                 match_fun: :public_key.pkix_verify_hostname_match_fun(:https)
               ]
             ]},
          else: {:error, {:invalid_option, :cacertfile, file}}
    end
  end

  @impl true
  def get(%__MODULE__{} = store, key, range) do
    with {:ok, value, _etag} <- read(store, key, range, nil), do: {:ok, value}
  end

  @doc """
  Ranges with the resource's `ETag` as generation (nil when the server sends none), read on
  the condition `If-Match` when a generation is expected; a server that ignores the condition
  is caught by comparing the `ETag` it answers with.
  """
  @impl true
  def get_ranges_with_generation(%__MODULE__{} = store, key, ranges, expected),
    do: ExZarr.Storage.ranges_with_generation(ranges, expected, &read(store, key, &1, &2))

  defp read(store, key, range, expected) do
    {method, headers} =
      case ObjectStore.range_header(range) do
        :whole -> {:get, []}
        :empty -> {:head, []}
        header -> {:get, [{"range", header}]}
      end

    headers = if expected, do: [{"if-match", expected} | headers], else: headers
    url = store.origin <> store.path <> "/" <> encode(key) <> store.query

    store
    |> request(method, url, headers, 0)
    |> check_encoding()
    |> ObjectStore.read_answer(range, "etag", expected, &read_failure(&1, key))
  end

  defp read_failure({:ok, 404, _, _}, _key), do: {:error, :not_found}
  defp read_failure({:ok, 403, _, _}, key), do: {:error, {:forbidden, key}}
  defp read_failure({:ok, status, _, _}, key), do: {:error, {:http_status, status, key}}
  defp read_failure({:error, reason}, _key), do: {:error, reason}

  # Each segment percent-encoded, the slashes kept.
  defp encode(key), do: URI.encode(key, &(&1 == ?/ or URI.char_unreserved?(&1)))

  # One request with retries, following redirects; the user's headers go to the store's
  # origin only.
  defp request(store, method, url, headers, hops) do
    own = if String.starts_with?(url, store.origin <> "/"), do: store.headers, else: []

    answer =
      HTTP.with_retries(store.http, fn ->
        HTTP.request(store.http, method, url, own ++ headers)
      end)

    with {:ok, status, answer_headers, _} when status in @redirects and hops < @max_redirects <-
           answer,
         location when is_binary(location) <- HTTP.header(answer_headers, "location"),
         {:ok, target} <- redirect_target(url, location),
         :ok <- HTTP.start(store.http, target.scheme) do
      # 303 means "GET the other resource" (a HEAD stays a HEAD).
      request(store, method, canonical(target), headers, hops + 1)
    else
      _ -> answer
    end
  end

  defp redirect_target(url, location) do
    case URI.merge(url, location) do
      %URI{scheme: scheme, host: host} = target
      when scheme in ["http", "https"] and is_binary(host) and host != "" ->
        {:ok, target}

      _ ->
        :error
    end
  rescue
    ArgumentError -> :error
  end

  # The URL in the form `origin/path?query` (the explicit port makes origins comparable).
  defp canonical(%URI{} = uri) do
    query = if uri.query in [nil, ""], do: "", else: "?" <> uri.query
    origin(uri) <> (uri.path || "/") <> query
  end

  # A body transformed on the way (gzip...) is not the stored bytes, and ranges over it
  # would be wrong: refused. None is asked for, so only a misbehaving server sends one.
  defp check_encoding({:ok, _status, headers, _body} = answer) do
    case HTTP.header(headers, "content-encoding") do
      encoding when encoding in [nil, "", "identity"] -> answer
      encoding -> {:error, {:http_error, {:unsupported_content_encoding, encoding}}}
    end
  end

  defp check_encoding(error), do: error

  @impl true
  def put(_store, _key, _value), do: {:error, :read_only}

  @doc "Conditional writes are refused like every write: the store is read-only."
  @impl true
  def put_if(_store, _key, _value, _condition), do: {:error, :read_only}

  @impl true
  def delete(_store, _key), do: {:error, :read_only}

  @impl true
  def list(_store, _prefix), do: {:error, {:not_supported, @not_listable}}

  @doc "The store's URL, without its query (which may hold a token)."
  @impl true
  def describe(%__MODULE__{origin: origin, path: path}), do: origin <> path

  @impl true
  def supports_ranges?(_store), do: true

  @impl true
  def io_concurrency(_store), do: HTTP.io_concurrency()
end
