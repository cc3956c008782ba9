defmodule ExZarr.Storage.GCS do
  @moduledoc """
  A store in a Google Cloud Storage bucket (`storage: :gcs`), through the JSON API
  (`storage/v1`): the key `"c/0/1"` is the object `<path>/c/0/1`. Works with emulators such
  as fake-gcs-server too.

  Options:
    * `:bucket` and `:path` (the object prefix of the store, default `""`), or a URL in
      `:path`: `"gs://bucket/some/prefix"`.
    * `:token` - an OAuth 2.0 access token, or a zero-arity function returning one (called for
      every request, so it can refresh). Default `GOOGLE_OAUTH_ACCESS_TOKEN`; with neither,
      requests are anonymous (public buckets, emulators).
    * `:endpoint` - default `STORAGE_EMULATOR_HOST` (as Google's client libraries read it; a
      bare `host:port` means http), else `https://storage.googleapis.com`.
    * `:timeout`, `:connect_timeout` (ms, default 30,000 and 5,000), `:max_retries` (5),
      `:base_backoff`, `:max_backoff` (ms, 100 and 5,000), `:ssl`: see `ExZarr.Storage.HTTP`.
    * `:resumable_threshold` (default 8 MiB) - larger values go up as a resumable upload, in
      chunks of `:chunk_size` bytes (default 8 MiB, a multiple of 256 KiB). A chunk that fails
      is retried from the offset the server reports it has; a failed upload is cancelled.
    * `:list_page_size` - objects per listing page (default and most 1000).

  Reads are media downloads with a `Range` header (`bytes=-n` for suffixes), so only the
  requested bytes travel; ranges past the end are clamped like the other backends.
  `list_dir/2` lists with the delimiter `/`.

  Conditional writes (`put_if/4`): the upload (a simple one, or the start of a resumable
  one) carries `ifGenerationMatch`, `0` for `:absent`, and the server checks and writes in one
  step; 412 is `{:error, :generation_mismatch}`. fake-gcs-server honours it too. Conditional
  deletes (`delete_if/3`) likewise, see there.

  The token lives in a closure that the struct's `Inspect` leaves out; it is sent only to the
  endpoint's host and never appears in errors.

      {:ok, store} = ExZarr.Storage.new(:gcs, path: "gs://my-bucket/arrays/a.zarr")
      {:ok, bytes} = ExZarr.Storage.get(store, "c/0/0", {:suffix, 16})
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage.{HTTP, Keys, ObjectStore}

  @kib 1024
  @mib 1024 * 1024
  @default_endpoint "https://storage.googleapis.com"

  @derive {Inspect, except: [:token]}
  @enforce_keys [:http, :endpoint, :bucket, :prefix]
  defstruct [
    :http,
    :endpoint,
    :bucket,
    :prefix,
    :token,
    resumable_threshold: 8 * @mib,
    chunk_size: 8 * @mib,
    list_page_size: 1000
  ]

  @type t :: %__MODULE__{
          http: HTTP.t(),
          endpoint: URI.t(),
          bucket: String.t(),
          prefix: String.t(),
          token: (() -> String.t()) | nil,
          resumable_threshold: non_neg_integer(),
          chunk_size: pos_integer(),
          list_page_size: pos_integer()
        }

  # {option, default, smallest allowed}
  @tuning [
    {:resumable_threshold, 8 * @mib, 0},
    {:chunk_size, 8 * @mib, 256 * @kib},
    {:list_page_size, 1000, 1}
  ]

  @impl true
  def options,
    do:
      [:bucket, :path, :token, :endpoint] ++
        Enum.map(@tuning, &elem(&1, 0)) ++ HTTP.option_names()

  @impl true
  def init(opts) do
    with {:ok, bucket, prefix} <- ObjectStore.location(opts, :bucket, "gs://"),
         %URI{} = endpoint <- endpoint(opts),
         {:ok, token} <- token(opts),
         {:ok, tuning} <- HTTP.integer_options(opts, @tuning),
         :ok <- check_chunk_size(tuning[:chunk_size]),
         {:ok, http} <- HTTP.new(opts, :ex_zarr_gcs),
         :ok <- HTTP.start(http, endpoint.scheme) do
      fields = [http: http, endpoint: endpoint, bucket: bucket, prefix: prefix, token: token]
      {:ok, struct!(__MODULE__, fields ++ tuning)}
    end
  end

  defp endpoint(opts) do
    case {opts[:endpoint], HTTP.env("STORAGE_EMULATOR_HOST")} do
      {nil, nil} -> HTTP.endpoint(@default_endpoint, :endpoint)
      {nil, "http" <> _ = url} -> HTTP.endpoint(url, :endpoint)
      {nil, host} -> HTTP.endpoint("http://" <> host, :endpoint)
      {url, _} -> HTTP.endpoint(url, :endpoint)
    end
  end

  defp token(opts) do
    case Keyword.get(opts, :token) || HTTP.env("GOOGLE_OAUTH_ACCESS_TOKEN") do
      nil -> {:ok, nil}
      token when is_binary(token) -> {:ok, fn -> token end}
      fun when is_function(fun, 0) -> {:ok, fun}
      _other -> {:error, {:invalid_option, :token, :not_a_string_or_function}}
    end
  end

  defp check_chunk_size(size) when rem(size, 256 * @kib) == 0, do: :ok
  defp check_chunk_size(size), do: {:error, {:invalid_option, :chunk_size, size}}

  ## Requests

  defp object_path(gcs, key),
    do: "/storage/v1/b/#{HTTP.encode(gcs.bucket)}/o/#{HTTP.encode(gcs.prefix <> key)}"

  defp url(gcs, path, []), do: URI.to_string(%URI{gcs.endpoint | path: gcs.endpoint.path <> path})

  defp url(gcs, path, query),
    do:
      URI.to_string(%URI{gcs.endpoint | path: gcs.endpoint.path <> path, query: HTTP.query(query)})

  # One request with retries; the token is sent only to the endpoint's own host.
  defp call(gcs, method, url, headers \\ [], opts \\ []) do
    HTTP.with_retries(gcs.http, fn ->
      HTTP.request(gcs.http, method, url, auth(gcs, url) ++ headers, opts)
    end)
  end

  defp auth(%__MODULE__{token: nil}, _url), do: []

  defp auth(%__MODULE__{token: token, endpoint: endpoint}, url) do
    case URI.parse(url) do
      %URI{scheme: scheme, host: host, port: port}
      when scheme == endpoint.scheme and host == endpoint.host and port == endpoint.port ->
        [{"authorization", "Bearer " <> token.()}]

      _ ->
        []
    end
  end

  defp failure({:ok, status, _, body}), do: {:error, error(status, body)}
  defp failure({:error, reason}), do: {:error, reason}

  # A JSON API error as {:gcs_error, status, message}: the message from the JSON body, or the
  # start of a plain-text one.
  defp error(status, body) do
    message =
      case decode(body) do
        {:ok, %{"error" => %{"message" => message}}} when is_binary(message) -> message
        _ -> body |> binary_part(0, min(byte_size(body), 200)) |> String.trim()
      end

    {:gcs_error, status, message}
  end

  defp decode(body) do
    {:ok, :jiffy.decode(body, [:return_maps])}
  catch
    _, _ -> {:error, :invalid_json}
  end

  ## Reads

  @impl true
  def get(%__MODULE__{} = gcs, key, range) do
    with {:ok, bytes, _generation} <- read(gcs, key, range, nil), do: {:ok, bytes}
  end

  @doc "Ranges with the object's generation, read on the condition `ifGenerationMatch`."
  @impl true
  def get_ranges_with_generation(%__MODULE__{} = gcs, key, ranges, expected),
    do: ExZarr.Storage.ranges_with_generation(ranges, expected, &read(gcs, key, &1, &2))

  @doc "The endpoint, the bucket and the object's name."
  @impl true
  def identity(%__MODULE__{endpoint: endpoint, bucket: bucket, prefix: prefix}, key),
    do: {__MODULE__, URI.to_string(endpoint), bucket, prefix <> key}

  # A range and the generation of the object it came from; with `expected`, only from that
  # generation.
  defp read(gcs, key, range, expected) do
    condition = if expected, do: [{"ifGenerationMatch", expected}], else: []

    case ObjectStore.range_header(range) do
      :whole -> download(gcs, key, condition, [], range, expected)
      :empty -> exists(gcs, key, condition)
      header -> download(gcs, key, condition, [{"range", header}], range, expected)
    end
  end

  defp download(gcs, key, condition, headers, range, expected) do
    path = object_path(gcs, key)

    gcs
    |> call(:get, url(gcs, path, [{"alt", "media"} | condition]), headers)
    |> ObjectStore.read_answer(range, "x-goog-generation", expected, &read_failure/1)
  end

  defp read_failure({:ok, 404, _, _}), do: {:error, :not_found}
  defp read_failure(other), do: failure(other)

  defp exists(gcs, key, condition) do
    case call(gcs, :get, url(gcs, object_path(gcs, key), [{"fields", "generation"} | condition])) do
      {:ok, 200, _, body} ->
        case decode(body) do
          {:ok, %{"generation" => generation}} -> {:ok, <<>>, to_string(generation)}
          _ -> {:ok, <<>>, nil}
        end

      {:ok, 404, _, _} ->
        {:error, :not_found}

      {:ok, 412, _, _} ->
        {:error, :generation_mismatch}

      other ->
        failure(other)
    end
  end

  ## Writes

  @impl true
  def put(%__MODULE__{} = gcs, key, value) do
    with {:ok, _generation} <- write(gcs, key, value, []), do: :ok
  end

  @doc "An upload with `ifGenerationMatch` (`0` for `:absent`); see the module doc."
  @impl true
  def put_if(%__MODULE__{} = gcs, key, value, condition) do
    result =
      case condition do
        :any -> write(gcs, key, value, [])
        :absent -> write(gcs, key, value, [{"ifGenerationMatch", "0"}])
        generation -> if_generation(gcs, key, value, generation)
      end

    case result do
      {:ok, nil} -> {:error, {:gcs_error, 200, "the upload's answer names no generation"}}
      other -> other
    end
  end

  # A generation is a decimal number (`x-goog-generation`); anything else matches nothing.
  defp if_generation(gcs, key, value, generation) when is_binary(generation) do
    if generation =~ ~r/\A[1-9][0-9]*\z/,
      do: write(gcs, key, value, [{"ifGenerationMatch", generation}]),
      else: {:error, :generation_mismatch}
  end

  defp if_generation(_gcs, _key, _value, _generation), do: {:error, :generation_mismatch}

  # -> {:ok, generation} of the new object, from the object resource the upload answers
  # (nil when it names none).
  defp write(gcs, key, value, condition) do
    with {:ok, value} <- Keys.to_binary(value) do
      if byte_size(value) > gcs.resumable_threshold,
        do: resumable_upload(gcs, gcs.prefix <> key, value, condition),
        else: simple_upload(gcs, gcs.prefix <> key, value, condition)
    end
  end

  defp upload_url(gcs, type, name, condition),
    do:
      url(gcs, "/upload/storage/v1/b/#{HTTP.encode(gcs.bucket)}/o", [
        {"uploadType", type},
        {"name", name} | condition
      ])

  defp simple_upload(gcs, name, value, condition) do
    gcs
    |> call(:post, upload_url(gcs, "media", name, condition), [], body: value)
    |> uploaded()
  end

  defp uploaded({:ok, status, _, body}) when status in [200, 201] do
    case decode(body) do
      {:ok, %{"generation" => generation}} -> {:ok, to_string(generation)}
      _ -> {:ok, nil}
    end
  end

  defp uploaded({:ok, 412, _, _}), do: {:error, :generation_mismatch}
  defp uploaded(other), do: failure(other)

  defp resumable_upload(gcs, name, value, condition) do
    headers = [
      {"x-upload-content-type", "application/octet-stream"},
      {"x-upload-content-length", Integer.to_string(byte_size(value))}
    ]

    start =
      call(gcs, :post, upload_url(gcs, "resumable", name, condition), headers,
        body: "{}",
        content_type: "application/json; charset=UTF-8"
      )

    case start do
      {:ok, status, resp_headers, _} when status in [200, 201] ->
        case HTTP.header(resp_headers, "location") do
          nil ->
            {:error, {:gcs_error, status, "resumable upload started without a session URI"}}

          session ->
            result = send_chunks(gcs, session, value, 0, 0)

            with {:error, _} <- result,
                 do: HTTP.request(gcs.http, :delete, session, auth(gcs, session))

            result
        end

      other ->
        uploaded(other)
    end
  end

  # Sends the value from `offset` on, one chunk per request. The server answers 308 with the
  # bytes it has so far until the last chunk; after a transient failure the upload resumes
  # from what the server reports (it may have kept part of the failed chunk).
  defp send_chunks(gcs, session, value, offset, failures) do
    size = byte_size(value)
    length = min(gcs.chunk_size, size - offset)
    content_range = "bytes #{offset}-#{offset + length - 1}/#{size}"
    chunk = binary_part(value, offset, length)

    case HTTP.request(
           gcs.http,
           :put,
           session,
           [{"content-range", content_range} | auth(gcs, session)],
           body: chunk
         ) do
      {:ok, 308, headers, _} ->
        continue(gcs, session, value, persisted(headers), offset, failures)

      {:ok, status, _, _} = done when status in [200, 201] ->
        uploaded(done)

      result ->
        if HTTP.retry?(result) and failures < gcs.http.max_retries do
          HTTP.backoff(gcs.http, failures)
          resume(gcs, session, value, offset, failures + 1)
        else
          uploaded(result)
        end
    end
  end

  # After a 308: on from the bytes the server has. A round that adds none counts as a failure,
  # so a server that stops taking bytes ends the upload rather than looping.
  defp continue(gcs, session, value, next, previous, failures) do
    cond do
      next >= byte_size(value) ->
        {:error, {:gcs_error, 308, "the resumable upload has every byte but did not finish"}}

      next > previous ->
        send_chunks(gcs, session, value, next, 0)

      failures < gcs.http.max_retries ->
        HTTP.backoff(gcs.http, failures)
        send_chunks(gcs, session, value, next, failures + 1)

      true ->
        {:error, {:gcs_error, 308, "the resumable upload makes no progress"}}
    end
  end

  defp resume(gcs, session, value, offset, failures) do
    headers = [{"content-range", "bytes */#{byte_size(value)}"}]

    case call(gcs, :put, session, headers, body: "") do
      {:ok, 308, headers, _} ->
        continue(gcs, session, value, persisted(headers), offset, failures)

      other ->
        uploaded(other)
    end
  end

  # The offset after the bytes a 308 reports ("range: bytes=0-N"; no header means none).
  defp persisted(headers) do
    with "bytes=0-" <> last <- HTTP.header(headers, "range"),
         {n, ""} <- Integer.parse(last) do
      n + 1
    else
      _ -> 0
    end
  end

  @impl true
  def delete(%__MODULE__{} = gcs, key) do
    case call(gcs, :delete, url(gcs, object_path(gcs, key), [])) do
      {:ok, status, _, _} when status in [200, 204, 404] -> :ok
      other -> failure(other)
    end
  end

  @doc """
  A DELETE of the object's `generation` on `ifGenerationMatch` of it: the live object goes
  only while it is that generation (GCS checks `ifGenerationMatch`, 412 otherwise;
  fake-gcs-server ignores it but deletes the generation named, under its lock, or answers
  404). On a bucket with object versioning, a delete naming a generation removes it outright
  rather than keeping it as a noncurrent version.
  """
  @impl true
  def delete_if(%__MODULE__{} = gcs, key, generation) do
    if is_binary(generation) and generation =~ ~r/\A[1-9][0-9]*\z/ do
      query = [{"generation", generation}, {"ifGenerationMatch", generation}]

      case call(gcs, :delete, url(gcs, object_path(gcs, key), query)) do
        {:ok, status, _, _} when status in [200, 204] -> :ok
        {:ok, status, _, _} when status in [404, 412] -> {:error, :generation_mismatch}
        other -> failure(other)
      end
    else
      {:error, :generation_mismatch}
    end
  end

  ## Listings

  @impl true
  def list(%__MODULE__{} = gcs, prefix),
    do: ObjectStore.list(gcs.prefix, prefix, &list_page(gcs, &1, &2, &3))

  @impl true
  def list_dir(%__MODULE__{} = gcs, prefix),
    do: ObjectStore.list_dir(gcs.prefix, prefix, &list_page(gcs, &1, &2, &3))

  # One page of an objects listing (see `t:ExZarr.Storage.ObjectStore.page/0`).
  defp list_page(gcs, prefix, delimiter, token) do
    query =
      [
        {"prefix", prefix},
        {"maxResults", Integer.to_string(gcs.list_page_size)},
        {"fields", "items(name),prefixes,nextPageToken"}
      ] ++
        if(delimiter, do: [{"delimiter", delimiter}], else: []) ++
        if(token, do: [{"pageToken", token}], else: [])

    bucket_url = url(gcs, "/storage/v1/b/#{HTTP.encode(gcs.bucket)}/o", query)

    with {:ok, 200, _, body} <- call(gcs, :get, bucket_url),
         {:ok, %{} = page} <- decode(body) do
      names = for %{"name" => name} when is_binary(name) <- strings(page, "items"), do: name
      prefixes = for p when is_binary(p) <- strings(page, "prefixes"), do: p

      next =
        case Map.get(page, "nextPageToken") do
          next when is_binary(next) -> next
          _ -> nil
        end

      {:ok, names, prefixes, next}
    else
      {:ok, _not_an_object} -> {:error, {:gcs_error, 200, "the listing is not a JSON object"}}
      {:error, :invalid_json} -> {:error, {:gcs_error, 200, "the listing is not JSON"}}
      other -> failure(other)
    end
  end

  defp strings(page, field) do
    case Map.get(page, field) do
      list when is_list(list) -> list
      _ -> []
    end
  end

  @doc "The object's size, from its metadata."
  @impl true
  def size(%__MODULE__{} = gcs, key) do
    case call(gcs, :get, url(gcs, object_path(gcs, key), [{"fields", "size"}])) do
      {:ok, 200, _, body} ->
        case decode(body) do
          {:ok, %{"size" => size}} -> object_size(to_string(size))
          _ -> object_size("")
        end

      {:ok, 404, _, _} ->
        {:error, :not_found}

      other ->
        failure(other)
    end
  end

  defp object_size(size) do
    case Integer.parse(size) do
      {size, ""} when size >= 0 -> {:ok, size}
      _ -> {:error, {:gcs_error, 200, "the object's metadata has no size"}}
    end
  end

  @impl true
  def describe(%__MODULE__{bucket: bucket, prefix: prefix}),
    do: ObjectStore.location_url("gs://", bucket, prefix)

  @impl true
  def supports_ranges?(_gcs), do: true

  @impl true
  def io_concurrency(_gcs), do: HTTP.io_concurrency()
end
