defmodule ExZarr.Storage.S3 do
  @moduledoc """
  A store in an S3 bucket (`storage: :s3`), or in any S3-compatible server (MinIO, Ceph,
  R2, ...): the key `"c/0/1"` is the object `<path>/c/0/1`.

  Options:
    * `:bucket` and `:path` (the key prefix of the store, default `""`), or a URL in `:path`:
      `"s3://bucket/some/prefix"`.
    * `:region` - default `AWS_REGION`, `AWS_DEFAULT_REGION`, else `"us-east-1"`.
    * `:endpoint` - e.g. `"http://127.0.0.1:9000"` for an S3-compatible server; default
      `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, else AWS (`https://s3.<region>.amazonaws.com`).
    * `:path_style` - address the bucket in the path (`host/bucket/key`) rather than the host
      name (`bucket.host/key`). Default: true with a custom endpoint or a bucket name with
      dots, false on AWS.
    * `:access_key_id`, `:secret_access_key`, `:session_token` - default from
      `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`.
    * `:anonymous` - `true` sends unsigned requests (public buckets).
    * `:timeout`, `:connect_timeout` (ms, default 30,000 and 5,000), `:max_retries` (5),
      `:base_backoff`, `:max_backoff` (ms, 100 and 5,000): see `ExZarr.Storage.HTTP`.
    * `:multipart_threshold` (default 16 MiB) - larger values are sent as a multipart upload
      in parts of `:part_size` bytes (default 8 MiB, at least 5 MiB), `:upload_concurrency`
      parts at a time (default 4). A failed multipart upload is aborted.
    * `:list_page_size` - keys per ListObjectsV2 page (default and most 1000).
    * `:ssl` - `:ssl` options for https (default: verify the server against the OS's CAs).
    * `:conditional_writes` - `false` for an S3-compatible server that ignores `If-Match` and
      `If-None-Match` on writes (check one with `ExZarr.Storage.verify_conditional_writes/1`):
      conditional writes are then refused rather than trusted. Default `true` (AWS since
      2024, MinIO, and the others that implement them).
    * `:conditional_deletes` - `true` for a server that honours `If-Match` on DELETE, so that
      `delete_if/3` deletes an object only at the ETag read, in one step (what a partial write
      that leaves a chunk all fill does). Default `false`: MinIO ignores `If-Match` on DELETE
      (it deletes whatever is there; tested), and `ExZarr.Storage.update/4` then checks the
      ETag just before an unconditional DELETE (see `ExZarr.Storage.Update`). Check a server
      with `ExZarr.Storage.verify_conditional_writes/1`.

  Conditional writes (`put_if/4`): `If-None-Match: *` for `:absent` and `If-Match` with the
  ETag a read returned, on the PUT or, for a multipart upload, on its completion (the parts
  go up first; a refused completion aborts the upload). The server checks and writes in one
  step: 412 (and AWS's 409 for a conditional write that raced another) is
  `{:error, :generation_mismatch}`.

  Reads: `GET` with a `Range` header for ranged and suffix reads, so only the requested
  bytes travel. Ranges past the end are clamped like the other backends. Listing uses
  ListObjectsV2, page after page. Payloads are signed with their SHA-256 over http and sent
  as `UNSIGNED-PAYLOAD` over https (TLS protects them), as the AWS SDKs do.

  The secret key and the session token are kept in closures (and the struct's `Inspect`
  leaves the credentials out), so they do not show up in `inspect/2` (even with
  `structs: false`), `~p`, logs, crash reports or error tuples.

      {:ok, store} = ExZarr.Storage.new(ExZarr.Storage.S3, path: "s3://my-bucket/arrays/a.zarr")
      {:ok, bytes} = ExZarr.Storage.get(store, "c/0/0", {:suffix, 16})
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage.{HTTP, ObjectStore}
  alias ExZarr.Storage.S3.Client

  @mib 1024 * 1024

  @enforce_keys [:client, :prefix]
  defstruct [
    :client,
    :prefix,
    multipart_threshold: 16 * @mib,
    part_size: 8 * @mib,
    upload_concurrency: 4,
    list_page_size: 1000,
    conditional_writes: true,
    conditional_deletes: false
  ]

  @type t :: %__MODULE__{
          client: Client.t(),
          prefix: String.t(),
          multipart_threshold: pos_integer(),
          part_size: pos_integer(),
          upload_concurrency: pos_integer(),
          list_page_size: pos_integer(),
          conditional_writes: boolean(),
          conditional_deletes: boolean()
        }

  # {option, default, smallest allowed}
  @tuning [
    {:multipart_threshold, 16 * @mib, 0},
    {:part_size, 8 * @mib, 5 * @mib},
    {:upload_concurrency, 4, 1},
    {:list_page_size, 1000, 1}
  ]

  @impl true
  def options do
    [:bucket, :path, :region, :endpoint, :path_style, :anonymous] ++
      [:conditional_writes, :conditional_deletes] ++
      [:access_key_id, :secret_access_key, :session_token] ++
      Enum.map(@tuning, &elem(&1, 0)) ++ HTTP.option_names()
  end

  @impl true
  def init(opts) do
    with {:ok, bucket, prefix} <- ObjectStore.location(opts, :bucket, "s3://"),
         region = region(opts),
         {:ok, endpoint, custom?} <- endpoint(opts, region),
         {:ok, anonymous?} <- ExZarr.Storage.boolean_option(opts, :anonymous, false),
         {:ok, path_style} <-
           ExZarr.Storage.boolean_option(opts, :path_style, custom? or bucket =~ "."),
         {:ok, credentials} <- credentials(opts, anonymous?),
         {:ok, http} <- HTTP.new(opts, :ex_zarr_s3),
         {:ok, tuning} <- HTTP.integer_options(opts, @tuning),
         {:ok, conditions?} <- ExZarr.Storage.boolean_option(opts, :conditional_writes, true),
         {:ok, deletes?} <- ExZarr.Storage.boolean_option(opts, :conditional_deletes, false),
         :ok <- HTTP.start(http, endpoint.scheme) do
      client = %Client{
        http: http,
        scheme: endpoint.scheme,
        host: endpoint.host,
        port: endpoint.port,
        bucket: bucket,
        region: region,
        credentials: credentials,
        path_style: path_style
      }

      fields = [
        client: client,
        prefix: prefix,
        conditional_writes: conditions?,
        conditional_deletes: conditions? and deletes?
      ]

      {:ok, struct!(__MODULE__, fields ++ tuning)}
    end
  end

  defp region(opts),
    do: opts[:region] || HTTP.env("AWS_REGION") || HTTP.env("AWS_DEFAULT_REGION") || "us-east-1"

  # The endpoint, and whether it is a custom one rather than AWS's.
  defp endpoint(opts, region) do
    case opts[:endpoint] || HTTP.env("AWS_ENDPOINT_URL_S3") || HTTP.env("AWS_ENDPOINT_URL") do
      nil -> {:ok, URI.parse("https://s3.#{region}.amazonaws.com"), false}
      url -> with %URI{} = uri <- HTTP.endpoint(url, :endpoint), do: {:ok, uri, true}
    end
  end

  defp credentials(_opts, true = _anonymous?), do: {:ok, nil}

  # The secret key and the session token stay in closures: neither `inspect` (with or without
  # `structs: false`) nor `~p` shows what a closure holds.
  defp credentials(opts, false) do
    {id, secret, token} =
      if opts[:access_key_id],
        do: {opts[:access_key_id], opts[:secret_access_key], opts[:session_token]},
        else:
          {HTTP.env("AWS_ACCESS_KEY_ID"), HTTP.env("AWS_SECRET_ACCESS_KEY"),
           HTTP.env("AWS_SESSION_TOKEN")}

    cond do
      not (is_binary(id) and is_binary(secret)) ->
        {:error, :missing_credentials}

      not (is_binary(token) or is_nil(token)) ->
        {:error, {:invalid_option, :session_token, :not_a_string}}

      true ->
        {:ok,
         %{
           access_key_id: id,
           secret_access_key: fn -> secret end,
           session_token: fn -> token end
         }}
    end
  end

  @impl true
  def get(%__MODULE__{} = s3, key, range) do
    with {:ok, bytes, _etag} <- read(s3, key, range, nil), do: {:ok, bytes}
  end

  @doc "Ranges with the object's ETag as generation, read on the condition `If-Match`."
  @impl true
  def get_ranges_with_generation(%__MODULE__{} = s3, key, ranges, expected),
    do: ExZarr.Storage.ranges_with_generation(ranges, expected, &read(s3, key, &1, &2))

  @doc "The endpoint, the bucket and the object's name."
  @impl true
  def identity(%__MODULE__{client: c, prefix: prefix}, key),
    do: {__MODULE__, c.scheme, c.host, c.port, c.bucket, prefix <> key}

  # A range and the ETag of the object it came from; with `expected`, only from that ETag.
  defp read(s3, key, range, expected) do
    condition = if expected, do: [{"if-match", expected}], else: []

    case ObjectStore.range_header(range) do
      :whole -> fetch(s3, key, condition, range, expected)
      :empty -> head(s3, key, condition)
      header -> fetch(s3, key, [{"range", header} | condition], range, expected)
    end
  end

  defp fetch(s3, key, headers, range, expected) do
    s3.client
    |> Client.request(:get, s3.prefix <> key, headers: headers)
    |> ObjectStore.read_answer(range, "etag", expected, &failure/1)
  end

  defp head(s3, key, headers) do
    case Client.request(s3.client, :head, s3.prefix <> key, headers: headers) do
      {:ok, 200, h, _} -> {:ok, <<>>, HTTP.header(h, "etag")}
      {:ok, 404, _, _} -> {:error, :not_found}
      {:ok, 412, _, _} -> {:error, :generation_mismatch}
      other -> failure(other)
    end
  end

  defp failure({:ok, 404, _, body}) do
    case Client.xml_value(body, "Code") do
      code when code in [nil, "NoSuchKey"] -> {:error, :not_found}
      _ -> {:error, Client.error(404, body)}
    end
  end

  defp failure({:ok, status, _, body}), do: {:error, Client.error(status, body)}
  defp failure({:error, reason}), do: {:error, reason}

  @impl true
  def put(%__MODULE__{} = s3, key, value) do
    with {:ok, _etag} <- write(s3, key, value, []), do: :ok
  end

  @doc "A PUT (or multipart completion) with `If-Match` / `If-None-Match: *`; see the module doc."
  @impl true
  def put_if(%__MODULE__{} = s3, key, value, condition) do
    case ObjectStore.etag_condition(condition) do
      {:ok, headers} -> write(s3, key, value, headers)
      :never -> {:error, :generation_mismatch}
    end
  end

  @impl true
  def conditional_writes?(%__MODULE__{conditional_writes: conditions?}), do: conditions?

  # -> {:ok, etag} of the new object.
  defp write(s3, key, value, condition) do
    with {:ok, size} <- iodata_size(value) do
      if size > s3.multipart_threshold,
        do: multipart_put(s3, s3.prefix <> key, IO.iodata_to_binary(value), condition),
        else: single_put(s3, s3.prefix <> key, value, condition)
    end
  end

  defp iodata_size(value) do
    {:ok, IO.iodata_length(value)}
  rescue
    ArgumentError -> {:error, {:invalid_value, :not_iodata}}
  end

  defp single_put(s3, object, value, condition) do
    case Client.request(s3.client, :put, object, body: value, headers: condition) do
      {:ok, 200, headers, _} -> {:ok, HTTP.header(headers, "etag")}
      other -> write_failure(other, condition)
    end
  end

  # 412: the condition does not hold; 409 ConditionalRequestConflict: a conditional write
  # raced another one (AWS), to be redone on the new generation; NoSuchKey: `If-Match` on an
  # object that is gone (MinIO).
  defp write_failure({:ok, 412, _, _}, _condition), do: {:error, :generation_mismatch}

  defp write_failure({:ok, status, _, body} = other, condition)
       when status in [404, 409] and condition != [] do
    if Client.xml_value(body, "Code") in ["ConditionalRequestConflict", "NoSuchKey"],
      do: {:error, :generation_mismatch},
      else: failure(other)
  end

  defp write_failure(other, _condition), do: failure(other)

  defp multipart_put(s3, object, value, condition) do
    with {:ok, upload_id} <- create_upload(s3, object) do
      result =
        with {:ok, parts} <- upload_parts(s3, object, upload_id, value),
             do: complete_upload(s3, object, upload_id, parts, condition)

      with {:error, _} <- result do
        Client.request(s3.client, :delete, object, query: [{"uploadId", upload_id}])
      end

      result
    end
  end

  defp create_upload(s3, object) do
    case Client.request(s3.client, :post, object, query: [{"uploads", ""}]) do
      {:ok, 200, _, body} ->
        case Client.xml_value(body, "UploadId") do
          nil ->
            {:error, {:s3_error, 200, "NoUploadId", "CreateMultipartUpload gave no UploadId"}}

          id ->
            {:ok, id}
        end

      other ->
        failure(other)
    end
  end

  defp upload_parts(s3, object, upload_id, value) do
    ObjectStore.upload_parts(value, s3.part_size, s3.upload_concurrency, fn index, part ->
      number = index + 1
      query = [{"partNumber", Integer.to_string(number)}, {"uploadId", upload_id}]

      case Client.request(s3.client, :put, object, query: query, body: part) do
        {:ok, 200, headers, _} -> {:ok, {number, HTTP.header(headers, "etag") || ""}}
        other -> failure(other)
      end
    end)
  end

  defp complete_upload(s3, object, upload_id, parts, condition) do
    body = [
      "<CompleteMultipartUpload>",
      for {number, etag} <- parts do
        [
          "<Part><PartNumber>",
          Integer.to_string(number),
          "</PartNumber><ETag>",
          xml_escape(etag),
          "</ETag></Part>"
        ]
      end,
      "</CompleteMultipartUpload>"
    ]

    query = [{"uploadId", upload_id}]

    case Client.request(s3.client, :post, object, query: query, body: body, headers: condition) do
      # S3 can answer 200 and still report an error in the body.
      {:ok, 200, headers, resp} ->
        cond do
          not String.contains?(resp, "<Error>") ->
            {:ok, Client.xml_value(resp, "ETag") || HTTP.header(headers, "etag")}

          Client.xml_value(resp, "Code") == "PreconditionFailed" ->
            {:error, :generation_mismatch}

          true ->
            {:error, Client.error(200, resp)}
        end

      other ->
        write_failure(other, condition)
    end
  end

  defp xml_escape(text) do
    text
    |> String.replace("&", "&amp;")
    |> String.replace("<", "&lt;")
    |> String.replace(">", "&gt;")
    |> String.replace("\"", "&quot;")
  end

  @impl true
  def delete(%__MODULE__{} = s3, key) do
    case Client.request(s3.client, :delete, s3.prefix <> key) do
      {:ok, status, _, _} when status in [200, 204, 404] -> :ok
      other -> failure(other)
    end
  end

  @doc """
  A DELETE with `If-Match`: the server deletes only the version of that ETag (412 otherwise).
  Offered only when the store has `conditional_deletes: true` (see the module doc).
  """
  @impl true
  def delete_if(%__MODULE__{} = s3, key, generation) do
    case ObjectStore.etag_condition(generation) do
      {:ok, [{"if-match", _}] = headers} ->
        case Client.request(s3.client, :delete, s3.prefix <> key, headers: headers) do
          {:ok, status, _, _} when status in [200, 204] -> :ok
          {:ok, status, _, _} when status in [404, 412] -> {:error, :generation_mismatch}
          other -> failure(other)
        end

      _absent_any_or_foreign ->
        {:error, :generation_mismatch}
    end
  end

  @impl true
  def conditional_deletes?(%__MODULE__{conditional_deletes: conditions?}), do: conditions?

  @impl true
  def list(%__MODULE__{} = s3, prefix),
    do: ObjectStore.list(s3.prefix, prefix, &list_page(s3, &1, &2, &3))

  @doc "The direct children of a prefix, from one delimited listing (no walk over every chunk)."
  @impl true
  def list_dir(%__MODULE__{} = s3, prefix),
    do: ObjectStore.list_dir(s3.prefix, prefix, &list_page(s3, &1, &2, &3))

  # One page of a ListObjectsV2 listing (see `t:ExZarr.Storage.ObjectStore.page/0`).
  defp list_page(s3, prefix, delimiter, token) do
    query =
      [
        {"list-type", "2"},
        {"prefix", prefix},
        {"encoding-type", "url"},
        {"max-keys", "#{s3.list_page_size}"}
      ] ++
        if(delimiter, do: [{"delimiter", delimiter}], else: []) ++
        if(token, do: [{"continuation-token", token}], else: [])

    case Client.request(s3.client, :get, "", query: query) do
      {:ok, 200, _, body} ->
        # With encoding-type=url, names come form-encoded (a space is "+", a "+" is "%2B").
        next =
          if Client.xml_value(body, "IsTruncated") == "true",
            do: Client.xml_value(body, "NextContinuationToken")

        {:ok, decode(Client.xml_values(body, "Key")), decode(Client.common_prefixes(body)), next}

      other ->
        failure(other)
    end
  end

  defp decode(names), do: Enum.map(names, &URI.decode_www_form/1)

  @doc "The object's `Content-Length`, from a `HEAD`."
  @impl true
  def size(%__MODULE__{} = s3, key) do
    case Client.request(s3.client, :head, s3.prefix <> key) do
      {:ok, 200, headers, _} -> content_length(headers)
      {:ok, 404, _, _} -> {:error, :not_found}
      other -> failure(other)
    end
  end

  defp content_length(headers) do
    with :error <- ObjectStore.content_length(headers),
         do: {:error, {:s3_error, 200, "HEAD", "the answer has no Content-Length"}}
  end

  @impl true
  def describe(%__MODULE__{client: c, prefix: prefix}),
    do: ObjectStore.location_url("s3://", c.bucket, prefix)

  @impl true
  def supports_ranges?(_s3), do: true

  @impl true
  def io_concurrency(_s3), do: HTTP.io_concurrency()
end
