defmodule ExZarr.Storage.ObjectStore do
  @moduledoc """
  What the object-store backends (`ExZarr.Storage.S3`, `ExZarr.Storage.GCS`,
  `ExZarr.Storage.Azure`; `ExZarr.Storage.HttpStore` for its ranged reads) share above the
  HTTP transport (`ExZarr.Storage.HTTP`): where a store lives (bucket and key prefix), how a
  ranged read's answer becomes bytes (200 / 206 / 416, then 412 and the backend's errors),
  ETag conditions, listings page after page and the direct children they give, and uploads
  sent in parts. A backend keeps only its signing, its URLs and the shapes of its answers.
  """

  alias ExZarr.Storage.{HTTP, Keys, Range}

  @typedoc """
  One page of a listing, as a backend fetches it: `page.(prefix, delimiter, token)` with
  `delimiter` nil or `"/"` and `token` nil for the first page. It returns the object names
  and, with a delimiter, the common prefixes on the page (whole names, as the service gives
  them), and the token of the next page (nil or `""` after the last one).
  """
  @type page ::
          (String.t(), String.t() | nil, String.t() | nil ->
             {:ok, [String.t()], [String.t()], String.t() | nil} | {:error, term()})

  @doc """
  The bucket (or container) and the key prefix of an object store from its options: the
  bucket in `option` and the path in `:path`, or both in a URL with the given scheme in
  `:path` (`"gs://bucket/some/prefix"`). The prefix is `""` or ends with `/`.

      iex> ExZarr.Storage.ObjectStore.location([path: "gs://b/x/y/"], :bucket, "gs://")
      {:ok, "b", "x/y/"}
      iex> ExZarr.Storage.ObjectStore.location([bucket: "b", path: "../x"], :bucket, "gs://")
      {:error, {:invalid_option, :path, "../x"}}
      iex> ExZarr.Storage.ObjectStore.location([bucket: "b", path: 5], :bucket, "gs://")
      {:error, {:invalid_option, :path, 5}}
  """
  @spec location(keyword(), atom(), String.t()) ::
          {:ok, String.t(), String.t()} | {:error, {atom(), atom()} | {atom(), atom(), term()}}
  def location(opts, option, scheme) do
    case {Keyword.get(opts, option), Keyword.get(opts, :path, "")} do
      {nil, path} when is_binary(path) ->
        case String.split(path, scheme, parts: 2) do
          ["", rest] ->
            [bucket | prefix] = String.split(rest, "/", parts: 2)
            location([{option, bucket}, path: Enum.join(prefix)], option, scheme)

          _ ->
            {:error, {:missing_option, option}}
        end

      {bucket, path} when is_binary(bucket) and bucket != "" and is_binary(path) ->
        prefix = String.trim(path, "/")

        cond do
          String.contains?(bucket, "/") -> {:error, {:invalid_option, option, bucket}}
          prefix == "" -> {:ok, bucket, ""}
          ExZarr.Storage.validate_key(prefix) == :ok -> {:ok, bucket, prefix <> "/"}
          true -> {:error, {:invalid_option, :path, path}}
        end

      {bucket, path} when is_binary(bucket) and bucket != "" ->
        {:error, {:invalid_option, :path, path}}

      {nil, path} ->
        {:error, {:invalid_option, :path, path}}

      {bucket, _path} ->
        {:error, {:invalid_option, option, bucket}}
    end
  end

  @doc """
  The URL of a bucket and prefix as `location/3` reads it back.

      iex> ExZarr.Storage.ObjectStore.location_url("gs://", "b", "x/y/")
      "gs://b/x/y"
  """
  @spec location_url(String.t(), String.t(), String.t()) :: String.t()
  def location_url(scheme, bucket, prefix),
    do: String.trim_trailing(scheme <> bucket <> "/" <> prefix, "/")

  @doc """
  How to read `range` (a `t:ExZarr.Storage.range/0`) with a `Range` header: `:whole` (no
  header), `:empty` (no bytes wanted, only whether the object exists matters) or the value.

      iex> ExZarr.Storage.ObjectStore.range_header({10, 5})
      "bytes=10-14"
      iex> ExZarr.Storage.ObjectStore.range_header({:suffix, 8})
      "bytes=-8"
      iex> ExZarr.Storage.ObjectStore.range_header({3, 0})
      :empty
  """
  @spec range_header(ExZarr.Storage.range()) :: :whole | :empty | String.t()
  def range_header(nil), do: :whole
  def range_header({_offset, 0}), do: :empty
  def range_header({:suffix, 0}), do: :empty
  def range_header({:suffix, n}), do: "bytes=-#{n}"
  def range_header({offset, length}), do: "bytes=#{offset}-#{offset + length - 1}"

  @doc """
  The value a ranged `GET` (or a `HEAD` for an empty range) read, from its answer: 200 is the
  whole value (a server that ignores `Range`), cut to `range` here; 206 is the range itself,
  checked against its `Content-Range` (where it starts and how long it is) so a wrong part
  is never taken for the right one (without one, only its length is checked); 416 (the
  range starts at or past the end) is no bytes.
  Any other answer is returned as it is, for the backend to map.

      iex> ExZarr.Storage.ObjectStore.ranged_body({:ok, 200, [], "0123456789"}, {:suffix, 3})
      {:ok, "789"}
      iex> ExZarr.Storage.ObjectStore.ranged_body({:ok, 206, [{"content-range", "bytes 2-4/10"}], "234"}, {2, 3})
      {:ok, "234"}
      iex> ExZarr.Storage.ObjectStore.ranged_body({:ok, 206, [{"content-range", "bytes 0-2/10"}], "012"}, {2, 3})
      {:error, {:http_error, {:bad_content_range, "bytes 0-2/10"}}}
  """
  @spec ranged_body(HTTP.response() | {:error, term()}, ExZarr.Storage.range()) ::
          {:ok, binary()} | HTTP.response() | {:error, term()}
  def ranged_body({:ok, 200, _headers, body}, range), do: {:ok, Range.slice(body, range)}
  def ranged_body({:ok, 416, _headers, _body}, _range), do: {:ok, <<>>}

  def ranged_body({:ok, 206, headers, body}, range) do
    value = HTTP.header(headers, "content-range")

    if partial_matches?(value && content_range(value), byte_size(body), range),
      do: {:ok, body},
      else: {:error, {:http_error, {:bad_content_range, value}}}
  end

  def ranged_body(other, _range), do: other

  @doc """
  `ranged_body/2` plus the object's generation, read from the response header `generation`
  (`"etag"`, `"x-goog-generation"`): `{:ok, value, generation}`. A 416 carries no reliable
  header; stores check a read's condition before its range, so it answers for `expected`.
  """
  @spec ranged_body(
          HTTP.response() | {:error, term()},
          ExZarr.Storage.range(),
          String.t(),
          term()
        ) ::
          {:ok, binary(), term()} | HTTP.response() | {:error, term()}
  def ranged_body({:ok, status, headers, _body} = answer, range, generation, expected)
      when status in [200, 206, 416] do
    with {:ok, value} <- ranged_body(answer, range) do
      case status do
        416 -> {:ok, value, expected || HTTP.header(headers, generation)}
        _ -> {:ok, value, HTTP.header(headers, generation)}
      end
    end
  end

  def ranged_body(other, _range, _generation, _expected), do: other

  # "bytes first-last/size" ("*" for an unknown size) as {first, last, size | nil}.
  defp content_range("bytes " <> spec) do
    with [first, rest] <- :binary.split(spec, "-"),
         [last, size] <- :binary.split(rest, "/"),
         {first, ""} <- Integer.parse(first),
         # "bytes 10-9/10": no bytes, at the end (Azurite, fake-gcs-server).
         {last, ""} when last >= first - 1 <- Integer.parse(last),
         {:ok, size} <- total_size(size) do
      {first, last, size}
    else
      _ -> :invalid
    end
  end

  defp content_range(_value), do: :invalid

  defp total_size("*"), do: {:ok, nil}

  defp total_size(digits) do
    case Integer.parse(digits) do
      {size, ""} -> {:ok, size}
      _ -> :error
    end
  end

  defp partial_matches?({first, last, size}, got, range) when got == last - first + 1 do
    case range do
      {:suffix, n} -> got <= n and (size == nil or last == size - 1)
      {offset, length} -> first == offset and got <= length
      nil -> first == 0 and last == size - 1
    end
  end

  defp partial_matches?(nil, got, range) do
    case range do
      {:suffix, n} -> got <= n
      {_offset, length} -> got <= length
      nil -> false
    end
  end

  defp partial_matches?(_content_range, _got, _range), do: false

  @doc """
  The request headers of a conditional write on an ETag (S3, Azure): none for `:any`,
  `If-None-Match: *` for `:absent`, `If-Match` for an ETag; `:never` for anything that cannot
  be an ETag this store gave (it matches no object).

      iex> ExZarr.Storage.ObjectStore.etag_condition(:absent)
      {:ok, [{"if-none-match", "*"}]}
      iex> ExZarr.Storage.ObjectStore.etag_condition(~s("abc"))
      {:ok, [{"if-match", ~s("abc")}]}
      iex> ExZarr.Storage.ObjectStore.etag_condition("a" <> <<13, 10>> <> "x-evil: 1")
      :never
  """
  @spec etag_condition(ExZarr.Storage.condition()) :: {:ok, HTTP.headers()} | :never
  def etag_condition(:any), do: {:ok, []}
  def etag_condition(:absent), do: {:ok, [{"if-none-match", "*"}]}

  def etag_condition(etag) when is_binary(etag) and etag != "" do
    if String.valid?(etag) and :binary.match(etag, ["\r", "\n", <<0>>]) == :nomatch,
      do: {:ok, [{"if-match", etag}]},
      else: :never
  end

  def etag_condition(_other), do: :never

  @doc """
  A read's result from the answer to a ranged `GET` (see `ranged_body/4`):
  `{:ok, value, generation}`; 412 (the read's condition does not hold) is
  `{:error, :generation_mismatch}`; any other answer goes to the backend's `failure`, which
  maps its 404s and its error bodies.
  """
  @spec read_answer(
          HTTP.response() | {:error, term()},
          ExZarr.Storage.range(),
          String.t(),
          term(),
          (HTTP.response() | {:error, term()} -> {:error, term()})
        ) :: {:ok, binary(), term()} | {:error, term()}
  def read_answer(answer, range, generation, expected, failure) do
    case ranged_body(answer, range, generation, expected) do
      {:ok, value, generation} -> {:ok, value, generation}
      {:ok, 412, _, _} -> {:error, :generation_mismatch}
      other -> failure.(other)
    end
  end

  @doc """
  The size in a `Content-Length` response header.

      iex> ExZarr.Storage.ObjectStore.content_length([{"content-length", "42"}])
      {:ok, 42}
      iex> ExZarr.Storage.ObjectStore.content_length([{"content-length", "-1"}])
      :error
  """
  @spec content_length(HTTP.headers()) :: {:ok, non_neg_integer()} | :error
  def content_length(headers) do
    case Integer.parse(HTTP.header(headers, "content-length") || "") do
      {size, ""} when size >= 0 -> {:ok, size}
      _ -> :error
    end
  end

  @doc """
  The keys of a store rooted at `root` (`""` or a prefix ending with `/`) below `prefix`
  (`c:ExZarr.Storage.list/2`), sorted, from every page of a listing of `root <> prefix`.
  """
  @spec list(String.t(), String.t(), page()) :: {:ok, [String.t()]} | {:error, term()}
  def list(root, prefix, page) do
    with {:ok, names, _prefixes} <- all_pages(page, root <> Keys.dir_prefix(prefix), nil),
         do: {:ok, names |> strip_prefix(root) |> Keys.under(prefix)}
  end

  @doc """
  The direct children of `prefix` (`c:ExZarr.Storage.list_dir/2`) in a store rooted at
  `root`, from one listing with the delimiter `/`: the object names there are the keys, the
  common prefixes (which end with `/`) the sub-directories.
  """
  @spec list_dir(String.t(), String.t(), page()) ::
          {:ok, %{keys: [String.t()], prefixes: [String.t()]}} | {:error, term()}
  def list_dir(root, prefix, page) do
    dir = root <> Keys.dir_prefix(prefix)

    with {:ok, names, prefixes} <- all_pages(page, dir, "/") do
      folders = for p <- strip_prefix(prefixes, dir), do: String.trim_trailing(p, "/")
      {:ok, %{keys: Enum.sort(strip_prefix(names, dir)), prefixes: Enum.sort(folders)}}
    end
  end

  defp all_pages(page, prefix, delimiter, token \\ nil, names \\ [], prefixes \\ []) do
    case page.(prefix, delimiter, token) do
      {:ok, more_names, more_prefixes, next} ->
        names = [more_names | names]
        prefixes = [more_prefixes | prefixes]

        if is_binary(next) and next != "",
          do: all_pages(page, prefix, delimiter, next, names, prefixes),
          else: {:ok, flatten(names), flatten(prefixes)}

      {:error, _} = error ->
        error
    end
  end

  # Pages collected last first, as one list.
  defp flatten(pages), do: pages |> Enum.reverse() |> Enum.concat()

  # The names that start with `prefix`, without it (others are dropped).
  defp strip_prefix(names, prefix) do
    skip = byte_size(prefix)

    for name <- names,
        String.starts_with?(name, prefix),
        do: binary_part(name, skip, byte_size(name) - skip)
  end

  @doc """
  Sends `value` in parts of `part_size` bytes (the last one shorter), `concurrency` at a
  time: `send.(index, part)`, `index` counting from 0, returns `{:ok, result}` or an error.
  The results in the order of the parts, or the first error.
  """
  @spec upload_parts(
          binary(),
          pos_integer(),
          pos_integer(),
          (non_neg_integer(), binary() ->
             {:ok, term()} | {:error, term()})
        ) ::
          {:ok, [term()]} | {:error, term()}
  def upload_parts(value, part_size, concurrency, send) do
    size = byte_size(value)

    0..(size - 1)//part_size
    |> Enum.with_index()
    |> ExZarr.Parallel.map(
      fn {offset, index} ->
        send.(index, binary_part(value, offset, min(part_size, size - offset)))
      end,
      max_concurrency: concurrency
    )
    |> ExZarr.Result.map_ok(& &1)
  end
end
