defmodule ExZarr do
  @moduledoc """
  Zarr (format v2 and v3) arrays for Elixir: chunked, compressed N-dimensional arrays that
  zarr-python, tensorstore and zarrs read and write too.

      iex> {:ok, array} = ExZarr.create(shape: {4, 6}, chunks: {2, 3}, dtype: :int16)
      iex> ExZarr.Array.set_slice(array, <<1::16-little, 2::16-little>>, start: {1, 2}, stop: {2, 4})
      :ok
      iex> ExZarr.Array.get_slice(array, start: {1, 1}, stop: {2, 5})
      {:ok, <<0::16-little, 1::16-little, 2::16-little, 0::16-little>>}
      iex> array.metadata.shape
      {4, 6}

  Storage is chosen with `storage:` (`:memory`, `:filesystem`, ...) and the backend's options
  beside it; `path:` alone means the filesystem, a URL (`"s3://bucket/a.zarr"`,
  `"file:///data/a.zarr"`) picks the backend; nothing means `:memory`.

  Every function takes only the options it documents, its own and those of the storage it
  opens: any other is `{:error, {:unknown_option, name}}`, never ignored (see `ExZarr.Options`).
  Calls that return `{:ok, _}` or `{:error, _}` never raise on bad arguments; the `!`
  variants raise `ExZarr.Error`.

      {:ok, array} = ExZarr.create(shape: {10_000, 10_000}, chunks: {1_000, 1_000}, dtype: :float64,
                                   path: "/tmp/a.zarr", compressor: %{id: "zstd", level: 3})
      {:ok, array} = ExZarr.open(path: "/tmp/a.zarr")

  ## The library

  ExZarr is composed of (the path of `ExZarr.Array.get_slice/2` and `set_slice/3` from here to
  the native code goes down this list):

    * `ExZarr` (you're here!): create and open arrays and groups; options become structs.
    * `ExZarr.Array` and `ExZarr.Group`: the handles. An array call validates its arguments,
      plans them over the chunk grid (`ExZarr.Indexing`), maps over the chunks it touches in
      parallel, and finishes (one output buffer becomes the result). Private beside it:
      `ExZarr.Array.Pipelines` builds the codec pipeline of each chunk shape when an array
      is opened, and `ExZarr.Array.Reshape` plans `resize/3` and `append/4`, which run
      through the same write loop.
    * `ExZarr.Indexing`: pure selection arithmetic, a box to the part of it in each chunk;
      `ExZarr.Indexing.Selection` for steps, orthogonal, point, mask and block selections
      (parts whose elements the copy kernels take by index lists).
    * `ExZarr.Metadata` (with `ExZarr.Metadata.V2` and `ExZarr.Metadata.V3` at the JSON
      edge) and `ExZarr.DType`: one canonical description of an array, and its data types;
      beside it `ExZarr.Metadata.Group`, `ExZarr.Metadata.Consolidated` and
      `ExZarr.Metadata.Attributes` for groups, consolidated metadata and user attributes.
    * `ExZarr.Parallel` (private): the one parallel map, and the concurrency policy (how many
      chunks in flight per store kind).
    * `ExZarr.Codec.Pipeline`: the one way a chunk moves, in both directions: it reads a chunk
      (or the part of it a box needs) into a box of the output, and writes a piece of a chunk,
      choosing between the native decoder, partial access (sharding) and variable-length
      items by what its codecs say they can do. `ExZarr.Codec.Chunk` is where a chunk's bytes
      are.
    * `ExZarr.Codec` (the behaviour), `ExZarr.Codec.Registry` (names to modules, your own
      codecs too) and `ExZarr.Codecs.*`; sharding is a codec,
      `ExZarr.Codecs.ShardingIndexed`.
    * `ExZarr.ChunkCache`: a shared, byte-bounded cache of decoded chunks and shard indexes
      (`chunk_cache:` of `open/1` and `create/1`).
    * `ExZarr.Telemetry` (spans of every array call and storage request), `ExZarr.Info` and
      `ExZarr.Validate` (what `mix zarr.info` and `mix zarr.validate` print).
    * `ExZarr.Storage` (the behaviour) and its backends: `ExZarr.Storage.Memory`,
      `ExZarr.Storage.ETS`, `ExZarr.Storage.Filesystem`, `ExZarr.Storage.Zip`,
      `ExZarr.Storage.Mnesia`, `ExZarr.Storage.S3`, `ExZarr.Storage.GCS`,
      `ExZarr.Storage.Azure`, `ExZarr.Storage.HTTPStore`, `ExZarr.Storage.GridFS` and
      `ExZarr.Storage.Cache`. The object stores share `ExZarr.Storage.ObjectStore` (ranged
      reads, conditions, listings, uploads in parts) over `ExZarr.Storage.HTTP`.
    * `ExZarr.Native` (private): the NIF (`c_src/`): copy kernels, codecs and the output
      buffer.

  ### Following a read and a write

  On an array opened or created here, `ExZarr.Array.get_slice/2` of a box over several chunks
  (zstd-compressed, on the filesystem) passes through 8 modules of this map, in this order:
  `ExZarr.Array` (checks the options, opens a telemetry span) -> `ExZarr.Indexing` (the box
  becomes one part per chunk; steps and selections: `ExZarr.Indexing.Selection`) ->
  `ExZarr.Codec.Pipeline` (`output/2`: one native output buffer) -> `ExZarr.Parallel`
  (`chunks/5`: the parts in parallel, each through `ExZarr.Codec.Pipeline.read/5`) ->
  `ExZarr.Codec.Chunk` -> `ExZarr.Storage` -> the backend (`ExZarr.Storage.Filesystem`) ->
  `ExZarr.Native` (`outbuf_put/4` decodes the chunk straight into its box; `finish/2` makes
  the buffer the result, without a copy). The codec modules run only when a codec has no
  native decoder; a sharded chunk is read in part by
  `ExZarr.Codecs.ShardingIndexed.decode_partial/5`.

  `ExZarr.Array.set_slice/3` of the same box passes through 14: `ExZarr.Array` ->
  `ExZarr.Indexing` -> `ExZarr.Parallel` -> `ExZarr.Codec.Pipeline` (`write/5`: a whole
  chunk is encoded and put; a piece of one is merged under the chunk's node lock,
  `ExZarr.Storage.Lock`, in a read-modify-write on the stored generation,
  `ExZarr.Storage.update/4` and `ExZarr.Storage.Update`, `ExZarr.Indexing.Selection`
  telling how) -> `ExZarr.Codec.Chunk` -> `ExZarr.Storage` -> the backend -> the codecs
  (`ExZarr.Codecs.Bytes`, `ExZarr.Codecs.Zstd`) -> `ExZarr.Native` (merge, compress) ->
  `ExZarr.ChunkCache` (the chunks written are updated or dropped there).

  Both also use 8 helpers: `ExZarr.Options`, `ExZarr.Telemetry`, `ExZarr.Shape`,
  `ExZarr.Limits`, `ExZarr.ChunkGrid`, `ExZarr.Metadata` (chunk keys),
  `ExZarr.Storage.Keys` and `ExZarr.Result`.

  ## Limits

  A hostile or mistaken request gets an `{:error, _}` before anything is allocated: at most
  64 dimensions (`{:too_many_dimensions, n, max: 64}`), elements of at most 2^31 - 1 bytes,
  dimensions of at most 2^63 - 1, and no buffer (a decoded chunk, a selection, the
  bookkeeping of one request) larger than the machine's physical memory or the `:max_bytes`
  application setting (`{:too_large, what, bytes, limit}`). The items of one stored chunk of
  a variable-length array (`:string`, `:bytes`) decode to at most 256 MiB (the
  `:max_vlen_chunk_bytes` setting), so a small hostile chunk cannot inflate without end.
  Settings are read when an array is opened or created, e.g.
  `Application.put_env(:ex_zarr, :max_vlen_chunk_bytes, 1024 ** 3)`.
  """

  alias ExZarr.{Array, Group, Metadata, Node, Options, Result, Storage}
  alias ExZarr.Codec.Pipeline

  # The options each function takes besides the storage ones (see ExZarr.Options).
  @metadata_opts [:shape, :chunks, :dtype, :zarr_format, :fill_value, :compressor, :filters] ++
                   [:order, :endian, :codecs, :chunk_key_encoding, :dimension_separator] ++
                   [:attributes, :dimension_names, :shards]
  @array_opts [:prefix, :write_empty_chunks, :single_writer, :chunk_cache, :recheck]
  @create_opts [:overwrite | @array_opts ++ @metadata_opts]
  @node_opts [:zarr_format, :use_consolidated]
  @open_group_opts [:prefix | @node_opts]
  @open_opts [:write_empty_chunks, :single_writer, :chunk_cache, :recheck | @open_group_opts]
  @group_opts [:zarr_format, :attributes, :overwrite]

  @doc """
  Creates an array and writes its metadata. Options: `shape`, `chunks` (in v3 an axis may be
  a list of chunk edges, a rectilinear grid: see `ExZarr.ChunkGrid`), `dtype`,
  `zarr_format` (3 by default), `fill_value`, `compressor` (numcodecs-style map or `nil`),
  `filters`, `codecs` (explicit v3 pipeline), `order`, `endian`, `dimension_separator`,
  `chunk_key_encoding`, `attributes`, `dimension_names`, `write_empty_chunks`,
  `single_writer` (see "Concurrent writers" in `ExZarr.Array`),
  `overwrite` (default false: an existing node is an error; true deletes it and all its
  chunks first), plus the storage options. An option that neither the array nor the chosen
  storage takes is `{:error, {:unknown_option, name}}`.
  """
  @spec create(keyword()) :: {:ok, Array.t()} | {:error, term()}
  def create(opts),
    do: ExZarr.Telemetry.node(:create, :create, opts, fn -> create_array(opts) end)

  defp create_array(opts) do
    with {:ok, backend, storage_opts} <- split_options(opts, @create_opts),
         prefix = Keyword.get(opts, :prefix, ""),
         :ok <- Node.check_prefix(prefix),
         # the names a group's create_array/3 takes (no "__" start, not only dots)
         {:ok, _} <- Node.normalize_path(prefix),
         {:ok, meta} <- Metadata.new(opts),
         {:ok, storage} <- open_store(backend, storage_opts),
         {:ok, array} <- Array.new(meta, storage, Keyword.take(opts, @array_opts)),
         :ok <- check_absent(storage, prefix, opts),
         :ok <- Group.ensure_ancestors(storage, prefix, meta.zarr_format),
         # store each codec's complete configuration, as zarr-python does
         meta = %{meta | codecs: Pipeline.specs(array.pipeline)},
         :ok <- Node.write_array_metadata(storage, prefix, meta) do
      {:ok, %{array | metadata: meta}}
    end
  end

  @doc """
  Opens the existing array or group at a path (v2 or v3, detected): `{:ok, %ExZarr.Array{}}`
  or `{:ok, %ExZarr.Group{}}`. Takes the storage options and `prefix` (the node's path inside
  the store), `write_empty_chunks` and `single_writer` for arrays, and for groups the options of `open_group/1`.
  `{:error, :not_found}` when there is no node.

  A path or URL alone is `open(path: url)`, with credentials and endpoints from the
  environment (`AWS_*`, `GOOGLE_OAUTH_ACCESS_TOKEN`, `AZURE_STORAGE_*`):

      {:ok, array} = ExZarr.open("s3://bucket/data.zarr")
      {:ok, array} = ExZarr.open("/data/a.zarr")
  """
  @spec open(String.t() | keyword()) :: {:ok, Array.t() | Group.t()} | {:error, term()}
  def open(url) when is_binary(url), do: open(path: url)

  def open(opts), do: ExZarr.Telemetry.node(:open, :open, opts, fn -> open_node(opts) end)

  defp open_node(opts) do
    with {:ok, backend, storage_opts} <- split_options(opts, @open_opts),
         prefix = Keyword.get(opts, :prefix, ""),
         :ok <- Node.check_prefix(prefix),
         {:ok, storage} <- open_store(backend, storage_opts),
         {:ok, node} <- Node.read_node(storage, prefix, Keyword.take(opts, @node_opts)) do
      case node do
        {:array, meta} -> Array.new(meta, storage, Keyword.take(opts, @array_opts))
        {:group, meta} -> {:ok, %Group{storage: storage, prefix: prefix, metadata: meta}}
      end
    end
  end

  @doc "Like `create/1` but raises `ExZarr.Error`."
  @spec create!(keyword()) :: Array.t()
  def create!(opts), do: Result.unwrap!(create(opts))

  @doc "Like `open/1` but raises `ExZarr.Error`."
  @spec open!(String.t() | keyword()) :: Array.t() | Group.t()
  def open!(opts), do: Result.unwrap!(open(opts))

  @doc """
  Opens the storage described by options: `storage: %ExZarr.Storage{}` is used as is;
  `storage: name` with the backend's options; `path:` alone means `:filesystem`
  (a `"file://"` URL is accepted); `"s3://bucket/path"`, `"gs://bucket/path"`,
  `"az://container/path"` and `"zip://file.zip"` URLs pick `:s3`, `:gcs`, `:azure` and `:zip`;
  any other `scheme://` URL is `{:error, {:unsupported_url_scheme, scheme}}`; nothing means
  `:memory`. `cache: max_bytes` puts a byte-bounded LRU cache (`ExZarr.Storage.Cache`) in
  front of the store: the two-tier memory-over-S3 pattern in one option.

  Takes only storage options (see `split_storage_options/1`): any other is
  `{:error, {:unknown_option, name}}`.

      {:ok, store} = ExZarr.storage(path: "s3://bucket/data.zarr", endpoint: "http://127.0.0.1:9000",
                                    cache: 256 * 1024 * 1024)
  """
  @spec storage(keyword()) :: {:ok, Storage.t()} | {:error, term()}
  def storage(opts) do
    with {:ok, backend, storage_opts} <- split_options(opts, []),
         do: open_store(backend, storage_opts)
  end

  # The store of options already split (`split_options/2`), with the cache in front of it.
  defp open_store(backend, storage_opts) do
    with {:ok, store} <- open_storage(backend, storage_opts) do
      case Keyword.get(storage_opts, :cache) do
        nil -> {:ok, store}
        max_bytes -> Storage.new(:cache, inner: store, max_bytes: max_bytes)
      end
    end
  end

  @doc """
  Splits a call's options into the storage's and the others:
  `{:ok, storage_options, other_options}`. The storage's are `storage`, `path`, `cache` and
  the options of the backend they choose (`ExZarr.Storage.option_names/1`). A backend module
  that does not declare its options is given every option, and the others are all but
  `storage`, `path` and `cache`. An unknown backend or an unsupported URL is an error.

      {:ok, [storage: :ets, table_name: :t], [shape: {4}]} =
        ExZarr.split_storage_options(storage: :ets, table_name: :t, shape: {4})
  """
  @spec split_storage_options(keyword()) :: {:ok, keyword(), keyword()} | {:error, term()}
  def split_storage_options(opts) do
    with {:ok, _backend, storage_opts, rest} <- split_storage(opts),
         do: {:ok, storage_opts, rest}
  end

  @facade_storage_opts [:storage, :path, :cache]

  defp split_storage(opts) do
    with :ok <- Options.check_keyword(opts),
         {:ok, backend} <- storage_backend(opts),
         {:ok, names} <- backend_option_names(backend) do
      {storage_opts, rest} =
        case names do
          :any -> {opts, Keyword.drop(opts, @facade_storage_opts)}
          names -> Keyword.split(opts, @facade_storage_opts ++ names)
        end

      {:ok, backend, storage_opts, rest}
    end
  end

  defp storage_backend(opts) do
    case {Keyword.get(opts, :storage), Keyword.get(opts, :path)} do
      {nil, nil} -> {:ok, :memory}
      {nil, path} when is_binary(path) -> url_backend(path)
      {nil, _path} -> {:ok, :filesystem}
      {backend, _} -> {:ok, backend}
    end
  end

  defp url_backend(path) do
    case Storage.url_backend(path) do
      :not_url -> {:ok, :filesystem}
      other -> other
    end
  end

  defp backend_option_names(%Storage{}), do: {:ok, []}
  defp backend_option_names(backend), do: Storage.option_names(backend)

  defp open_storage(%Storage{} = storage, opts) do
    case Keyword.keys(opts) -- [:storage, :cache] do
      [] -> {:ok, storage}
      [name | _] -> {:error, {:unknown_option, name}}
    end
  end

  defp open_storage(backend, opts),
    do: Storage.new(backend, Keyword.drop(opts, [:storage, :cache]))

  # Checks a call's options: its own (`own`) and those of the storage it opens (`storage:`,
  # `path:`, `cache:` and the chosen backend's; everything else for a backend module of the
  # user's). Returns the backend and the storage options.
  defp split_options(opts, own) do
    with {:ok, backend, storage_opts, _rest} <- split_storage(opts),
         :ok <- Options.check(opts, own, Keyword.keys(storage_opts)),
         do: {:ok, backend, Keyword.drop(storage_opts, own)}
  end

  @doc """
  Closes the storage of an array or group (see `ExZarr.Storage.close/1`): finishes a zip being
  written, stops a cache. Other stores need no closing.
  """
  @spec close(Array.t() | Group.t()) :: :ok | {:error, term()}
  def close(%struct{storage: %Storage{} = storage}) when struct in [Array, Group],
    do: Storage.close(storage)

  def close(other), do: {:error, {:invalid_argument, [Array, Group], other}}

  @doc """
  Creates a group (and the missing groups above it). Options: the storage options, `prefix`
  (the group's path in the store, default the root), `zarr_format` (3 by default),
  `attributes`, `overwrite` (default false). See `ExZarr.Group`.

      {:ok, root} = ExZarr.create_group(path: "/tmp/tree.zarr", attributes: %{"title" => "t"})
      {:ok, _} = ExZarr.Group.create_array(root, "a/b", shape: {10}, dtype: :int32)
  """
  @spec create_group(keyword()) :: {:ok, Group.t()} | {:error, term()}
  def create_group(opts),
    do: ExZarr.Telemetry.node(:create, :create_group, opts, fn -> make_group(opts) end)

  defp make_group(opts) do
    with {:ok, backend, storage_opts} <- split_options(opts, [:prefix | @group_opts]),
         {:ok, storage} <- open_store(backend, storage_opts),
         do:
           Group.create(storage, Keyword.get(opts, :prefix, ""), Keyword.take(opts, @group_opts))
  end

  @doc """
  Opens an existing group. Options: the storage options, `prefix`, `zarr_format` (`nil`
  detects), `use_consolidated`: `nil` (default: use consolidated metadata when it is there,
  as zarr-python does), `true` (require it) or `false` (ignore it and read nodes one by one).
  With consolidated metadata the whole tree comes from one read; it is a snapshot taken by
  `consolidate/1`, and keeping it current is the user's choice (see `ExZarr.Metadata.Consolidated`).

      {:ok, root} = ExZarr.open_group(path: "/tmp/tree.zarr")
      %ExZarr.Array{} = root["a/b"]
  """
  @spec open_group(keyword()) :: {:ok, Group.t()} | {:error, term()}
  def open_group(opts),
    do: ExZarr.Telemetry.node(:open, :open_group, opts, fn -> read_group(opts) end)

  defp read_group(opts) do
    with {:ok, backend, storage_opts} <- split_options(opts, @open_group_opts),
         {:ok, storage} <- open_store(backend, storage_opts),
         do: Group.read(storage, Keyword.get(opts, :prefix, ""), Keyword.take(opts, @node_opts))
  end

  @doc "Like `create_group/1` but raises `ExZarr.Error`."
  @spec create_group!(keyword()) :: Group.t()
  def create_group!(opts), do: Result.unwrap!(create_group(opts))

  @doc "Like `open_group/1` but raises `ExZarr.Error`."
  @spec open_group!(keyword()) :: Group.t()
  def open_group!(opts), do: Result.unwrap!(open_group(opts))

  @doc """
  The tree printout of a group (a `%ExZarr.Group{}` or the options of `open_group/1`), like
  zarr-python's `Group.tree()`. See `ExZarr.Group.tree/1`.
  """
  @spec tree(Group.t() | keyword()) :: {:ok, String.t()} | {:error, term()}
  def tree(%Group{} = group), do: Group.tree(group)
  def tree(opts), do: with({:ok, group} <- open_group(opts), do: tree(group))

  @doc """
  The facts about an array or a group as a map, like zarr-python's `info_complete()`: format,
  shape, chunks and shards, data type, fill value, codecs, dimension names, attributes, and
  the stored picture (chunks initialized of the grid, bytes stored, compression ratio). See
  `ExZarr.Info` for the keys; `ExZarr.Info.format/1` prints them. Takes a node, or a path or
  URL, or the options of `open/1`.

      {:ok, %{shape: {1000, 1000}, chunks_initialized: 12, compression_ratio: r}} =
        ExZarr.info("/data/a.zarr")
  """
  @spec info(Array.t() | Group.t() | String.t() | keyword()) ::
          {:ok, ExZarr.Info.t()} | {:error, term()}
  def info(%struct{} = node) when struct in [Array, Group], do: ExZarr.Info.info(node)
  def info(opts), do: with({:ok, node} <- open(opts), do: ExZarr.Info.info(node))

  @doc """
  Copies an array into a new one: the source's metadata overridden by `target_opts` (the
  options of `create/1`: store and path, `chunks`, `shards`, `compressor`/`codecs`,
  `zarr_format`, `fill_value`), its attributes and its data, block by block on the nodes of
  `opts` (see `ExZarr.Jobs.copy/3`): format conversion, recompression, rechunking, resharding.
  """
  @spec copy(Array.t(), keyword(), keyword()) :: {:ok, Array.t()} | {:error, term()}
  defdelegate copy(source, target_opts, opts \\ []), to: ExZarr.Jobs

  @doc """
  Copies a group, its subgroups and arrays into a new hierarchy (see
  `ExZarr.Jobs.copy_group/3`).
  """
  @spec copy_group(Group.t(), keyword(), keyword()) :: {:ok, Group.t()} | {:error, term()}
  defdelegate copy_group(source, target_opts, opts \\ []), to: ExZarr.Jobs

  @doc """
  Writes consolidated metadata for a group (a `%ExZarr.Group{}` or the options of
  `open_group/1`): `.zmetadata` for v2, zarr-python's inline `consolidated_metadata` for v3.
  Returns the group carrying it. See `ExZarr.Group.consolidate/1`.
  """
  @spec consolidate(Group.t() | keyword()) :: {:ok, Group.t()} | {:error, term()}
  def consolidate(%Group{} = group), do: Group.consolidate(group)

  def consolidate(opts) do
    with {:ok, _backend, _storage_opts} <-
           split_options(opts, @open_group_opts -- [:use_consolidated]),
         {:ok, group} <- open_group(Keyword.put(opts, :use_consolidated, false)),
         do: Group.consolidate(group)
  end

  # An existing node is an error, or with `overwrite: true` is removed with all its chunks.
  defp check_absent(storage, prefix, opts) do
    cond do
      not Node.exists?(storage, prefix) -> :ok
      Keyword.get(opts, :overwrite, false) -> Node.delete_tree(storage, prefix)
      true -> {:error, {:already_exists, prefix}}
    end
  end
end
