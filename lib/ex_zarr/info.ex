defmodule ExZarr.Info do
  @moduledoc """
  What `ExZarr.info/1` tells about an array or a group (like zarr-python's
  `info_complete()`), its text form for people (`format/1`) and its JSON form (`to_json/1`).
  `mix zarr.info` prints one or the other.

  An array's facts:
    * `node_type` (`:array`), `zarr_format`, `name` (`"/"` for a store's root node, else
      `"/" <> path`), `store` (where it is: `ExZarr.Storage.describe/1` and the path);
    * `shape`, `chunks` (the chunk shape; the inner chunk shape of a sharded array), `shards`
      (the shard shape, or `nil`), `dtype`, `fill_value`, `codecs` (as in `zarr.json`, for v2
      arrays too), `chunk_key_encoding`, `dimension_names`, `attributes`;
    * the stored picture: `chunks_initialized` of `chunks_total` (objects of the chunk grid:
      shards when sharded), `bytes` (the uncompressed size, `nil` for variable-length types),
      `bytes_stored` (metadata documents and chunks) and `compression_ratio`
      (`bytes / bytes_stored`). These are `nil` on a store that cannot list (HTTP).

  A group's facts: `node_type` (`:group`), `zarr_format`, `name`, `store`, `attributes`,
  `consolidated` (whether it was opened from consolidated metadata), and its direct children:
  `members`, `arrays`, `groups` (`nil` when the store cannot list them).

  Sizes come from `ExZarr.Storage.size/2` (one stat or `HEAD` per stored object, requests
  in flight as for chunk reads), so a large array on an object store costs as many requests
  as it has stored chunks, as in zarr-python.
  """

  alias ExZarr.{Array, DType, Group, Indexing, JSON, Metadata, Node, Parallel, Storage}
  alias ExZarr.Storage.Keys
  require DType

  @type t :: %{required(:node_type) => :array | :group, optional(atom()) => term()}

  @doc "The facts about an array or a group (see the moduledoc)."
  @spec info(Array.t() | Group.t()) :: {:ok, t()} | {:error, term()}
  def info(%Array{metadata: meta} = a) do
    with {:ok, stored} <- stored(a) do
      bytes = nbytes(meta)
      {chunks, shards} = Metadata.chunk_shapes(meta)

      {:ok,
       Map.merge(
         %{
           node_type: :array,
           zarr_format: meta.zarr_format,
           name: "/" <> a.prefix,
           store: location(a.storage, a.prefix),
           shape: meta.shape,
           chunks: chunks,
           shards: shards,
           dtype: meta.dtype,
           fill_value: meta.fill_value,
           codecs: Enum.map(meta.codecs, &ExZarr.Codec.to_json/1),
           chunk_key_encoding: meta.chunk_key_encoding,
           dimension_names: meta.dimension_names,
           attributes: meta.attributes,
           chunks_total: Tuple.product(Indexing.grid_shape(meta.shape, meta.chunks)),
           bytes: bytes,
           compression_ratio: ratio(bytes, stored.bytes_stored)
         },
         stored
       )}
    end
  end

  def info(%Group{metadata: meta} = g) do
    with {:ok, children} <- children(g) do
      {:ok,
       Map.merge(
         %{
           node_type: :group,
           zarr_format: meta.zarr_format,
           name: Group.name(g),
           store: location(g.storage, g.prefix),
           attributes: meta.attributes,
           consolidated: meta.consolidated != nil
         },
         children
       )}
    end
  end

  def info(other), do: {:error, {:invalid_argument, [Array, Group], other}}

  @doc """
  Where a node is, for people: the store's description and the node's path in it.

      iex> {:ok, store} = ExZarr.Storage.new(:filesystem, path: "/data/t.zarr")
      iex> ExZarr.Info.location(store, "a/b")
      "file:///data/t.zarr/a/b"
  """
  @spec location(Storage.t(), String.t()) :: String.t()
  def location(storage, ""), do: Storage.describe(storage)
  def location(storage, prefix), do: Storage.describe(storage) <> "/" <> prefix

  # -- the stored picture -------------------------------------------------------------------

  defp stored(%Array{metadata: meta, storage: storage, prefix: prefix}) do
    case Node.array_keys(storage, prefix, meta) do
      {:ok, %{documents: documents, chunks: chunks}} ->
        keys = documents ++ Enum.map(chunks, &elem(&1, 0))

        with {:ok, sizes} <- sizes(storage, prefix, keys) do
          {:ok, %{chunks_initialized: length(chunks), bytes_stored: Enum.sum(sizes)}}
        end

      :unlistable ->
        {:ok, %{chunks_initialized: nil, bytes_stored: nil}}

      error ->
        error
    end
  end

  defp sizes(storage, prefix, keys) do
    keys
    |> Parallel.map(&Storage.size(storage, Keys.join(prefix, &1)),
      max_concurrency: Storage.io_concurrency(storage) || Parallel.concurrency(:nodes)
    )
    |> ExZarr.Result.map_ok(& &1)
  end

  defp nbytes(%Metadata{dtype: dtype}) when DType.is_var_len(dtype), do: nil

  defp nbytes(%Metadata{dtype: dtype, shape: shape}),
    do: DType.itemsize(dtype) * Tuple.product(shape)

  defp ratio(bytes, stored) when is_integer(bytes) and is_integer(stored) and stored > 0,
    do: bytes / stored

  defp ratio(_bytes, _stored), do: nil

  defp children(group) do
    case Group.members(group) do
      {:ok, members} ->
        arrays = Enum.count(members, &match?({_, %Array{}}, &1))

        {:ok, %{members: length(members), arrays: arrays, groups: length(members) - arrays}}

      {:error, {:not_supported, _}} ->
        {:ok, %{members: nil, arrays: nil, groups: nil}}

      error ->
        error
    end
  end

  # -- text and JSON ------------------------------------------------------------------------

  @array_lines [
    {"Type", :node_type},
    {"Zarr format", :zarr_format},
    {"Name", :name},
    {"Store", :store},
    {"Data type", :dtype},
    {"Fill value", :fill_value},
    {"Shape", :shape},
    {"Shard shape", :shards},
    {"Chunk shape", :chunks},
    {"Chunk key encoding", :chunk_key_encoding},
    {"Dimension names", :dimension_names},
    {"Codecs", :codecs},
    {"Attributes", :attributes},
    {"No. bytes", :bytes},
    {"No. bytes stored", :bytes_stored},
    {"Storage ratio", :compression_ratio},
    {"Chunks initialized", :chunks_initialized}
  ]

  @group_lines [
    {"Type", :node_type},
    {"Zarr format", :zarr_format},
    {"Name", :name},
    {"Store", :store},
    {"Consolidated", :consolidated},
    {"No. members", :members},
    {"No. arrays", :arrays},
    {"No. groups", :groups},
    {"Attributes", :attributes}
  ]

  @doc """
  The facts as text, one `Name : value` line each, like zarr-python's `info_complete()`.
  """
  @spec format(t()) :: String.t()
  def format(%{node_type: type} = info) do
    lines = if type == :array, do: @array_lines, else: @group_lines
    lines = Enum.reject(lines, fn {_label, key} -> key == :shards and info.shards == nil end)
    width = lines |> Enum.map(&String.length(elem(&1, 0))) |> Enum.max()

    Enum.map_join(lines, "", fn {label, key} ->
      String.pad_trailing(label, width) <> " : " <> text(key, info[key], info) <> "\n"
    end)
  end

  defp text(:node_type, type, _info), do: type |> Atom.to_string() |> String.capitalize()
  defp text(key, string, _info) when key in [:name, :store], do: string
  defp text(:dtype, dtype, _info), do: DType.name(dtype)

  defp text(:fill_value, fill, _info) when fill in [:nan, :infinity, :neg_infinity],
    do: json(fill)

  defp text(:codecs, codecs, _info), do: Enum.map_join(codecs, ", ", &codec_text/1)

  defp text(:chunk_key_encoding, %{name: name, separator: sep}, _info),
    do: "#{name} (separator #{sep})"

  defp text(:bytes, nil, _info), do: "unknown (variable-length items)"
  defp text(:compression_ratio, nil, _info), do: "unknown"

  defp text(key, bytes, _info) when key in [:bytes, :bytes_stored] and is_integer(bytes),
    do: bytes(bytes)

  defp text(:compression_ratio, ratio, _info),
    do: :erlang.float_to_binary(ratio, decimals: 1)

  defp text(:chunks_initialized, n, info) when is_integer(n),
    do: "#{n} of #{info.chunks_total}" <> if(info.shards, do: " shards", else: "")

  defp text(_key, nil, %{node_type: :group}), do: "unknown (the store cannot list)"

  defp text(key, nil, _info) when key in [:bytes_stored, :chunks_initialized],
    do: "unknown (the store cannot list)"

  defp text(_key, value, _info), do: compact(value)

  # zstd(level=3, checksum=false); sharding_indexed(codecs=[bytes(endian=little), ...], ...)
  defp codec_text(%{"name" => name} = codec) do
    case Map.get(codec, "configuration", %{}) do
      config when config == %{} -> name
      config -> name <> "(" <> Enum.map_join(config, ", ", &setting_text/1) <> ")"
    end
  end

  defp setting_text({key, [%{"name" => _} | _] = codecs}),
    do: key <> "=[" <> Enum.map_join(codecs, ", ", &codec_text/1) <> "]"

  defp setting_text({key, value}) when is_binary(value), do: key <> "=" <> value
  defp setting_text({key, value}), do: key <> "=" <> compact(value)

  defp compact(value), do: inspect(value, charlists: :as_lists, limit: 50, printable_limit: 200)

  defp bytes(n) when n < 1024, do: Integer.to_string(n)
  defp bytes(n), do: "#{n} (#{human(n / 1024, ~w(KiB MiB GiB TiB PiB))})"

  defp human(value, [_unit | rest]) when value >= 1024 and rest != [],
    do: human(value / 1024, rest)

  defp human(value, [unit | _]), do: :erlang.float_to_binary(value, decimals: 1) <> " " <> unit

  @doc """
  The facts as a JSON document: tuples become arrays, atoms strings, non-finite floats the
  strings Zarr uses (`"NaN"`, `"Infinity"`, `"-Infinity"`), bytes that are not UTF-8 base64.
  """
  @spec to_json(t()) :: String.t()
  def to_json(info) do
    info = with %{dtype: dtype} <- info, do: %{info | dtype: DType.name(dtype)}
    JSON.encode(json(info))
  end

  # What `ExZarr.JSON.encode/1` takes, with strings for what has no JSON form of its own.
  defp json(%{} = map), do: Map.new(map, fn {k, v} -> {to_string(k), json(v)} end)
  defp json(list) when is_list(list), do: Enum.map(list, &json/1)
  defp json(tuple) when is_tuple(tuple), do: tuple |> Tuple.to_list() |> json()
  defp json(:nan), do: "NaN"
  defp json(:infinity), do: "Infinity"
  defp json(:neg_infinity), do: "-Infinity"

  defp json(binary) when is_binary(binary),
    do: if(String.valid?(binary), do: binary, else: Base.encode64(binary))

  defp json(other), do: other
end
