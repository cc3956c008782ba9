defmodule ExZarr.Storage.Azure do
  @moduledoc """
  A store in an Azure Blob Storage container (`storage: :azure`), through the Blob REST API:
  the key `"c/0/1"` is the block blob `<path>/c/0/1`. Works with Azurite too.

  Options:
    * `:container` and `:path` (the blob name prefix of the store, default `""`), or a URL in
      `:path`: `"az://container/some/prefix"`.
    * `:connection_string` - the portal's connection string (`AccountName`, `AccountKey`,
      `SharedAccessSignature`, `BlobEndpoint`, `DefaultEndpointsProtocol`, `EndpointSuffix`);
      default `AZURE_STORAGE_CONNECTION_STRING`. Options given on their own take precedence.
    * `:account` - the storage account; default `AZURE_STORAGE_ACCOUNT`.
    * `:account_key` - the account's base64 key, for Shared Key authorization; default
      `AZURE_STORAGE_KEY`.
    * `:sas_token` - a shared access signature (`"sv=...&sig=..."`) added to every request
      instead; default `AZURE_STORAGE_SAS_TOKEN`. With neither, requests are anonymous
      (public containers).
    * `:endpoint` - the account's blob endpoint, default `https://<account>.blob.core.windows.net`;
      for Azurite `http://127.0.0.1:10000/devstoreaccount1`.
    * `:timeout`, `:connect_timeout` (ms, default 30,000 and 5,000), `:max_retries` (5),
      `:base_backoff`, `:max_backoff` (ms, 100 and 5,000), `:ssl`: see `ExZarr.Storage.HTTP`.
    * `:block_threshold` (default 8 MiB) - larger values are uploaded as blocks of
      `:block_size` bytes (default 8 MiB), `:upload_concurrency` at a time (default 4), then
      committed with one Put Block List; smaller ones with one Put Blob.
    * `:list_page_size` - blobs per List Blobs page (default and most 5000).

  Reads are Get Blob with `x-ms-range`; the Blob service has no suffix ranges, so a suffix
  read asks for the blob's size first (two requests). Ranges past the end are clamped like
  the other backends. `list_dir/2` lists with the delimiter `/`.

  Conditional writes (`put_if/4`): `If-None-Match: *` for `:absent` and `If-Match` with the
  ETag a read returned, on Put Blob or, for a value uploaded in blocks, on the Put Block List
  that commits them; the service checks and writes in one step. 412 (ConditionNotMet) and
  409 (BlobAlreadyExists) are `{:error, :generation_mismatch}`.

  The key and the SAS token live in closures that the struct's `Inspect` leaves out, and
  never appear in errors.

      {:ok, store} =
        ExZarr.Storage.new(:azure, path: "az://arrays/a.zarr", account: "myaccount",
                           account_key: System.fetch_env!("AZURE_STORAGE_KEY"))
      {:ok, bytes} = ExZarr.Storage.get(store, "c/0/0", {0, 100})
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage.{HTTP, Keys, ObjectStore}
  alias ExZarr.Storage.Azure.{SharedKey, XML}

  @mib 1024 * 1024
  @api_version "2021-12-02"

  @derive {Inspect, except: [:credentials]}
  @enforce_keys [:http, :endpoint, :account, :container, :prefix]
  defstruct [
    :http,
    :endpoint,
    :account,
    :container,
    :prefix,
    :credentials,
    block_threshold: 8 * @mib,
    block_size: 8 * @mib,
    upload_concurrency: 4,
    list_page_size: 5000
  ]

  @type credentials :: {:shared_key, (() -> binary())} | {:sas, (() -> String.t())} | nil
  @type t :: %__MODULE__{
          http: HTTP.t(),
          endpoint: URI.t(),
          account: String.t() | nil,
          container: String.t(),
          prefix: String.t(),
          credentials: credentials(),
          block_threshold: non_neg_integer(),
          block_size: pos_integer(),
          upload_concurrency: pos_integer(),
          list_page_size: pos_integer()
        }

  # {option, default, smallest allowed}
  @tuning [
    {:block_threshold, 8 * @mib, 0},
    {:block_size, 8 * @mib, 1},
    {:upload_concurrency, 4, 1},
    {:list_page_size, 5000, 1}
  ]

  @impl true
  def options do
    [:container, :path, :connection_string, :account, :account_key, :sas_token, :endpoint] ++
      Enum.map(@tuning, &elem(&1, 0)) ++ HTTP.option_names()
  end

  @impl true
  def init(opts) do
    with {:ok, from_string} <- connection_string(opts),
         opts = Keyword.merge(from_string, opts),
         account = option(opts, :account, "AZURE_STORAGE_ACCOUNT"),
         {:ok, container, prefix} <- ObjectStore.location(opts, :container, "az://"),
         :ok <- check_account(account),
         %URI{} = endpoint <- endpoint(opts, account),
         {:ok, credentials} <- credentials(opts, account),
         {:ok, tuning} <- HTTP.integer_options(opts, @tuning),
         {:ok, http} <- HTTP.new(opts, :ex_zarr_azure),
         :ok <- HTTP.start(http, endpoint.scheme) do
      fields = [
        http: http,
        endpoint: endpoint,
        account: account,
        container: container,
        prefix: prefix,
        credentials: credentials
      ]

      {:ok, struct!(__MODULE__, fields ++ tuning)}
    end
  end

  # The options a connection string gives ("AccountName=...;AccountKey=...;BlobEndpoint=...").
  # Errors never quote it: it holds the key.
  defp connection_string(opts) do
    case Keyword.get(opts, :connection_string) ||
           HTTP.env("AZURE_STORAGE_CONNECTION_STRING") do
      nil -> {:ok, []}
      string when is_binary(string) -> parse_connection_string(string)
      _ -> {:error, {:invalid_option, :connection_string, :not_a_string}}
    end
  end

  defp parse_connection_string(string) do
    pairs =
      for part <- String.split(string, ";", trim: true),
          part = String.trim(part),
          part != "",
          do: String.split(part, "=", parts: 2)

    if Enum.all?(pairs, &match?([_, _], &1)) do
      fields = Map.new(pairs, fn [k, v] -> {k, v} end)
      account = fields["AccountName"]

      endpoint =
        fields["BlobEndpoint"] ||
          if account do
            protocol = fields["DefaultEndpointsProtocol"] || "https"
            "#{protocol}://#{account}.blob.#{fields["EndpointSuffix"] || "core.windows.net"}"
          end

      options = [
        account: account,
        account_key: fields["AccountKey"],
        sas_token: fields["SharedAccessSignature"],
        endpoint: endpoint
      ]

      {:ok, Enum.reject(options, fn {_, value} -> value == nil end)}
    else
      {:error, {:invalid_option, :connection_string, :not_key_value_pairs}}
    end
  end

  defp option(opts, name, env), do: Keyword.get(opts, name) || HTTP.env(env)

  defp check_account(nil), do: :ok

  defp check_account(account) when is_binary(account) do
    if account =~ ~r/^[A-Za-z0-9-]+$/,
      do: :ok,
      else: {:error, {:invalid_option, :account, account}}
  end

  defp check_account(account), do: {:error, {:invalid_option, :account, account}}

  defp endpoint(opts, account) do
    case {Keyword.get(opts, :endpoint), account} do
      {nil, nil} -> {:error, {:missing_option, :account}}
      {nil, account} -> HTTP.endpoint("https://#{account}.blob.core.windows.net", :endpoint)
      {url, _} -> HTTP.endpoint(url, :endpoint)
    end
  end

  defp credentials(opts, account) do
    case {option(opts, :account_key, "AZURE_STORAGE_KEY"),
          option(opts, :sas_token, "AZURE_STORAGE_SAS_TOKEN")} do
      {nil, nil} ->
        {:ok, nil}

      {key, _} when is_binary(key) and is_binary(account) ->
        case Base.decode64(key) do
          {:ok, decoded} -> {:ok, {:shared_key, fn -> decoded end}}
          :error -> {:error, {:invalid_option, :account_key, :not_base64}}
        end

      {key, _} when is_binary(key) ->
        {:error, {:missing_option, :account}}

      {nil, "?" <> sas} ->
        {:ok, {:sas, fn -> sas end}}

      {nil, sas} when is_binary(sas) ->
        {:ok, {:sas, fn -> sas end}}

      {nil, _} ->
        {:error, {:invalid_option, :sas_token, :not_a_string}}

      {_, _} ->
        {:error, {:invalid_option, :account_key, :not_a_string}}
    end
  end

  ## Requests

  @doc """
  Sends one Blob service request (with retries) for a blob name in the container (`""` for
  the container itself) and returns the status, the response headers and the body.

  Options: `query:` (decoded pairs), `headers:`, `body:` (iodata) and `content_type:`.

      {:ok, 201, _, _} =
        ExZarr.Storage.Azure.request(store.state, :put, "", query: [{"restype", "container"}])
  """
  @spec request(t(), HTTP.method(), String.t(), keyword()) ::
          HTTP.response() | {:error, term()}
  def request(%__MODULE__{} = az, method, name, opts \\ []) do
    query = Keyword.get(opts, :query, [])
    path = az.endpoint.path <> "/" <> HTTP.encode(az.container) <> blob_path(name)

    {body_opts, length, type} =
      case Keyword.fetch(opts, :body) do
        {:ok, body} ->
          type = Keyword.get(opts, :content_type, "application/octet-stream")
          {[body: body, content_type: type], IO.iodata_length(body), type}

        :error ->
          {[], 0, ""}
      end

    HTTP.with_retries(az.http, fn ->
      headers = [
        {"x-ms-date", List.to_string(:httpd_util.rfc1123_date())},
        {"x-ms-version", @api_version} | Keyword.get(opts, :headers, [])
      ]

      signed = %{
        method: method |> Atom.to_string() |> String.upcase(),
        account: az.account,
        path: path,
        query: query,
        headers: headers,
        content_length: length,
        content_type: type
      }

      {headers, query_string} = authorize(az.credentials, signed)
      url = URI.to_string(%URI{az.endpoint | path: path, query: query_string})
      HTTP.request(az.http, method, url, headers, body_opts)
    end)
  end

  defp blob_path(""), do: ""

  defp blob_path(name),
    do: "/" <> (name |> String.split("/") |> Enum.map_join("/", &HTTP.encode/1))

  defp authorize(nil, request), do: {request.headers, query_string(request.query, nil)}

  defp authorize({:sas, sas}, request), do: {request.headers, query_string(request.query, sas.())}

  defp authorize({:shared_key, key}, request) do
    authorization = SharedKey.authorization(request, key.())
    {[{"authorization", authorization} | request.headers], query_string(request.query, nil)}
  end

  defp query_string([], nil), do: nil
  defp query_string(query, nil), do: HTTP.query(query)
  defp query_string([], sas), do: sas
  defp query_string(query, sas), do: HTTP.query(query) <> "&" <> sas

  defp failure({:ok, status, headers, body}), do: {:error, error(status, headers, body)}
  defp failure({:error, reason}), do: {:error, reason}

  # A Blob service error as {:azure_error, status, code, message}.
  defp error(status, headers, body) do
    fields =
      case XML.select(body, [["Error", "Code"], ["Error", "Message"]]) do
        {:ok, found} -> Map.new(found, fn {[_, name], _, text} -> {name, text} end)
        {:error, _} -> %{}
      end

    code = HTTP.header(headers, "x-ms-error-code") || Map.get(fields, "Code", "")
    message = fields |> Map.get("Message", "") |> String.split("\n") |> hd()
    {:azure_error, status, code, message}
  end

  # A 404 means "no such key" only when the blob is what is missing (not the container).
  defp not_found?(headers), do: HTTP.header(headers, "x-ms-error-code") in [nil, "BlobNotFound"]

  @doc """
  Creates the store's container; an existing one is fine.

      :ok = ExZarr.Storage.Azure.create_container(store.state)
  """
  @spec create_container(t()) :: :ok | {:error, term()}
  def create_container(%__MODULE__{} = az) do
    case request(az, :put, "", query: [{"restype", "container"}], body: "") do
      {:ok, 201, _, _} ->
        :ok

      {:ok, 409, headers, _} = result ->
        if HTTP.header(headers, "x-ms-error-code") == "ContainerAlreadyExists",
          do: :ok,
          else: failure(result)

      other ->
        failure(other)
    end
  end

  ## Reads

  @impl true
  def get(%__MODULE__{} = az, key, range) do
    with {:ok, bytes, _etag} <- read(az, key, range, nil), do: {:ok, bytes}
  end

  @doc "Ranges with the blob's ETag as generation, read on the condition `If-Match`."
  @impl true
  def get_ranges_with_generation(%__MODULE__{} = az, key, ranges, expected),
    do: ExZarr.Storage.ranges_with_generation(ranges, expected, &read(az, key, &1, &2))

  @doc "The account's endpoint, the container and the blob's name."
  @impl true
  def identity(%__MODULE__{} = az, key),
    do: {__MODULE__, URI.to_string(az.endpoint), az.container, az.prefix <> key}

  # A range and the ETag of the blob it came from; with `expected`, only from that ETag. A
  # suffix is read from the blob whose size was asked.
  defp read(az, key, range, expected) do
    name = az.prefix <> key

    case range do
      nil ->
        download(az, name, nil, expected)

      {_offset, 0} ->
        size(az, name, expected, fn _size, etag -> {:ok, <<>>, etag} end)

      {:suffix, 0} ->
        size(az, name, expected, fn _size, etag -> {:ok, <<>>, etag} end)

      {:suffix, n} ->
        size(az, name, expected, fn size, etag ->
          download(az, name, {max(size - n, 0), n}, etag)
        end)

      range ->
        download(az, name, range, expected)
    end
  end

  defp if_match(nil), do: []
  defp if_match(etag), do: [{"if-match", etag}]

  defp download(az, name, range, expected) do
    headers = if range, do: [{"x-ms-range", ObjectStore.range_header(range)}], else: []

    az
    |> request(:get, name, headers: headers ++ if_match(expected))
    |> ObjectStore.read_answer(range, "etag", expected, &read_failure/1)
  end

  # Get Blob Properties, then `then.(size, etag)`.
  defp size(az, name, expected, then) do
    with {:ok, 200, headers, _} <- request(az, :head, name, headers: if_match(expected)),
         {:ok, size} <- ObjectStore.content_length(headers) do
      then.(size, HTTP.header(headers, "etag"))
    else
      {:ok, 412, _, _} -> {:error, :generation_mismatch}
      {:ok, _, _, _} = result -> read_failure(result)
      {:error, _} = result -> read_failure(result)
      _no_size -> {:error, {:azure_error, 200, "", "the blob's properties have no size"}}
    end
  end

  defp read_failure({:ok, 404, headers, _} = result),
    do: if(not_found?(headers), do: {:error, :not_found}, else: failure(result))

  defp read_failure(result), do: failure(result)

  ## Writes

  @impl true
  def put(%__MODULE__{} = az, key, value) do
    with {:ok, _etag} <- write(az, key, value, []), do: :ok
  end

  @doc "Put Blob (or Put Block List) with `If-Match` / `If-None-Match: *`; see the module doc."
  @impl true
  def put_if(%__MODULE__{} = az, key, value, condition) do
    case ObjectStore.etag_condition(condition) do
      {:ok, headers} -> write(az, key, value, headers)
      :never -> {:error, :generation_mismatch}
    end
  end

  # -> {:ok, etag} of the new blob.
  defp write(az, key, value, condition) do
    with {:ok, value} <- Keys.to_binary(value) do
      if byte_size(value) > az.block_threshold,
        do: put_blocks(az, az.prefix <> key, value, condition),
        else: put_blob(az, az.prefix <> key, value, condition)
    end
  end

  defp put_blob(az, name, value, condition) do
    headers = [{"x-ms-blob-type", "BlockBlob"} | condition]
    written(request(az, :put, name, headers: headers, body: value))
  end

  defp written({:ok, 201, headers, _}), do: {:ok, HTTP.header(headers, "etag")}
  defp written({:ok, 412, _, _}), do: {:error, :generation_mismatch}

  defp written({:ok, 409, headers, _} = result) do
    if HTTP.header(headers, "x-ms-error-code") == "BlobAlreadyExists",
      do: {:error, :generation_mismatch},
      else: failure(result)
  end

  defp written(other), do: failure(other)

  # Uncommitted blocks belong to the blob until a block list commits some of them; the
  # upload's own tag in every block id keeps concurrent uploads of one blob apart.
  defp put_blocks(az, name, value, condition) do
    tag = Base.encode16(:crypto.strong_rand_bytes(6), case: :lower)

    ids =
      ObjectStore.upload_parts(value, az.block_size, az.upload_concurrency, fn n, block ->
        id = Base.encode64("#{tag}-#{String.pad_leading(Integer.to_string(n), 6, "0")}")

        case request(az, :put, name, query: [{"comp", "block"}, {"blockid", id}], body: block) do
          {:ok, 201, _, _} -> {:ok, id}
          other -> failure(other)
        end
      end)

    with {:ok, ids} <- ids do
      body = [
        ~s(<?xml version="1.0" encoding="utf-8"?><BlockList>),
        for(id <- ids, do: ["<Latest>", id, "</Latest>"]),
        "</BlockList>"
      ]

      written(
        request(az, :put, name,
          query: [{"comp", "blocklist"}],
          headers: condition,
          body: body,
          content_type: "application/xml"
        )
      )
    end
  end

  @impl true
  def delete(%__MODULE__{} = az, key) do
    case request(az, :delete, az.prefix <> key) do
      {:ok, status, _, _} when status in [200, 202] -> :ok
      {:ok, 404, headers, _} = result -> if not_found?(headers), do: :ok, else: failure(result)
      other -> failure(other)
    end
  end

  @doc "Delete Blob with `If-Match`: the service deletes only the blob of that ETag (412 otherwise)."
  @impl true
  def delete_if(%__MODULE__{} = az, key, generation) do
    case ObjectStore.etag_condition(generation) do
      {:ok, [{"if-match", _}] = headers} ->
        case request(az, :delete, az.prefix <> key, headers: headers) do
          {:ok, status, _, _} when status in [200, 202] ->
            :ok

          {:ok, 412, _, _} ->
            {:error, :generation_mismatch}

          {:ok, 404, headers, _} = result ->
            if not_found?(headers), do: mismatch(), else: failure(result)

          other ->
            failure(other)
        end

      _absent_any_or_foreign ->
        mismatch()
    end
  end

  defp mismatch, do: {:error, :generation_mismatch}

  ## Listings

  @impl true
  def list(%__MODULE__{} = az, prefix),
    do: ObjectStore.list(az.prefix, prefix, &list_page(az, &1, &2, &3))

  @impl true
  def list_dir(%__MODULE__{} = az, prefix),
    do: ObjectStore.list_dir(az.prefix, prefix, &list_page(az, &1, &2, &3))

  @blob_name ["EnumerationResults", "Blobs", "Blob", "Name"]
  @prefix_name ["EnumerationResults", "Blobs", "BlobPrefix", "Name"]
  @next_marker ["EnumerationResults", "NextMarker"]

  # One page of a List Blobs listing (see `t:ExZarr.Storage.ObjectStore.page/0`).
  defp list_page(az, prefix, delimiter, marker) do
    query =
      [
        {"restype", "container"},
        {"comp", "list"},
        {"prefix", prefix},
        {"maxresults", Integer.to_string(az.list_page_size)}
      ] ++
        if(delimiter, do: [{"delimiter", delimiter}], else: []) ++
        if(marker, do: [{"marker", marker}], else: [])

    with {:ok, 200, _, body} <- request(az, :get, "", query: query),
         {:ok, found} <- XML.select(body, [@blob_name, @prefix_name, @next_marker]) do
      page = Enum.group_by(found, fn {path, _, _} -> path end, &name/1)

      next =
        case Map.get(page, @next_marker) do
          [next] -> next
          _ -> nil
        end

      {:ok, Map.get(page, @blob_name, []), Map.get(page, @prefix_name, []), next}
    else
      {:error, {:invalid_xml, reason}} ->
        {:error, {:azure_error, 200, "InvalidXml", inspect(reason)}}

      other ->
        failure(other)
    end
  end

  # Names with characters XML cannot carry come percent-encoded, marked Encoded="true".
  defp name({_path, %{"Encoded" => "true"}, text}), do: URI.decode(text)
  defp name({_path, _attrs, text}), do: text

  @doc "The blob's size, from its properties."
  @impl true
  def size(%__MODULE__{} = az, key),
    do: size(az, az.prefix <> key, nil, fn size, _etag -> {:ok, size} end)

  @impl true
  def describe(%__MODULE__{container: container, prefix: prefix}),
    do: ObjectStore.location_url("az://", container, prefix)

  @impl true
  def supports_ranges?(_az), do: true

  @impl true
  def io_concurrency(_az), do: HTTP.io_concurrency()
end
