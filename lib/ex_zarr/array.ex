defmodule ExZarr.Array do
  @moduledoc """
  An open Zarr array: its metadata, its storage and the codec pipeline for its chunks.

  Data goes in and out as one binary of packed elements in C order, little-endian, whatever
  the stored order and byte order are; for the variable-length types `:string` and `:bytes`
  as a list of binaries in C order.

      iex> {:ok, a} = ExZarr.create(shape: {4, 4}, chunks: {2, 2}, dtype: :uint8, storage: :memory)
      iex> ExZarr.Array.set_slice(a, :binary.copy(<<7>>, 4), start: {1, 1}, stop: {3, 3})
      :ok
      iex> ExZarr.Array.get_slice(a, start: {1, 0}, stop: {2, 4})
      {:ok, <<0, 7, 7, 0>>}

  Every call validates its arguments, plans them over the chunk grid (`ExZarr.Indexing`),
  maps over the chunks it touches in parallel (`ExZarr.Parallel`: `max_concurrency:`,
  default two more than the dirty CPU schedulers, up to four more to write small chunks, or
  the store's `ExZarr.Storage.io_concurrency/1` for remote stores; `timeout:` per chunk, default
  `:infinity`), each chunk moved by the codec pipeline (`ExZarr.Codec.Pipeline`), and
  finishes. A chunk whose values all equal the fill value is not stored, and an existing one
  is deleted, unless the array was opened with `write_empty_chunks: true` (as in zarr-python).

  Beyond boxes: `get_slice/2` and `set_slice/3` take `step:`, and orthogonal
  (`get_orthogonal/3`, also `array[{0..99//4, :all}]` through `Access`), point
  (`get_coordinates/3`), mask (`get_mask/3`) and block (`get_blocks/3`) selections read and
  write through the same loops (`ExZarr.Indexing.Selection` plans them): each chunk touched
  is read (and rewritten) once and its selected elements are gathered or scattered by the NIF.

  A sharded array (`ExZarr.create(shards: ...)`, the `sharding_indexed` codec) has shards as
  its chunks: its reads fetch only the index and the inner chunks they need, its writes
  rewrite a shard once. `read_chunk(a, coords, level: :inner)` reads one inner chunk and
  `chunk_stream(a, level: :inner)` streams them.

  ## Concurrent writers

  Any number of processes, OS processes and machines may write one array, as tensorstore
  allows: each chunk write is atomic; writers of disjoint elements of one chunk or shard
  never lose an update; writers of the same element end with one of the written values; and
  concurrent `append/4`s each land once, in a region of their own. A write covering a whole
  chunk simply replaces it. A write of part of a chunk (or of a shard: its index and inner
  chunks together) is a read-modify-write on the stored value's generation
  (`ExZarr.Storage.update/4`), retried with backoff when another writer changed it first; a
  chunk that becomes the fill value everywhere this way is deleted on the generation read
  (in one step where the store deletes conditionally, `ExZarr.Storage.conditional_deletes?/1`:
  every built-in store but S3 servers not known to honour `If-Match` on DELETE, like MinIO;
  there the generation is checked again just before the delete, so a write from another OS
  process in that window of one request is lost: `write_empty_chunks: true` never deletes).

  Partial writes to a store without conditional writes (a custom backend, S3 with
  `conditional_writes: false`) are refused with
  `{:error, {:conditional_writes_unsupported, backend}}` unless the array is opened or
  created with `single_writer: true`: the caller then promises that only this BEAM node
  writes the array, and the node-wide lock of each chunk alone orders its writers.
  """

  alias ExZarr.{ChunkCache, DType, Indexing, Limits, Metadata, Options, Parallel, Result, Shape}
  alias ExZarr.Storage
  alias ExZarr.Telemetry
  alias ExZarr.Array.{Pipelines, Reshape}
  alias ExZarr.Codec.{Chunk, Pipeline}
  alias ExZarr.Indexing.Selection
  alias ExZarr.ChunkGrid
  alias ExZarr.Storage.Keys
  import ExZarr.Result, only: [unwrap!: 1]

  @enforce_keys [:metadata, :storage, :pipeline]
  defstruct [
    :metadata,
    :storage,
    :pipeline,
    :fill_element,
    :chunk_bytes,
    :chunk_cache,
    :grid,
    shape_pipelines: %{},
    prefix: "",
    write_empty_chunks: false,
    single_writer: false
  ]

  @type t :: %__MODULE__{
          metadata: Metadata.t(),
          storage: Storage.t(),
          pipeline: Pipeline.t(),
          fill_element: binary(),
          chunk_bytes: non_neg_integer(),
          chunk_cache: ExZarr.ChunkCache.t() | nil,
          grid: ExZarr.ChunkGrid.compiled(),
          shape_pipelines: %{tuple() => Pipeline.t()},
          prefix: String.t(),
          write_empty_chunks: boolean(),
          single_writer: boolean()
        }

  # The options each public function takes (see ExZarr.Options).
  @new_opts [:prefix, :write_empty_chunks, :single_writer, :chunk_cache, :recheck]
  @write_opts [:start, :stop, :step, :max_concurrency, :timeout]
  @read_opts [:coalesce_gap | @write_opts]
  @stream_opts [:parallel, :ordered, :timeout, :level]
  @resize_opts [:max_concurrency, :timeout]

  @doc """
  Builds an array handle from metadata and a storage (no I/O). Options: `prefix` (the array's
  path inside the store, "" for the root), `write_empty_chunks`, `chunk_cache` (a name of an
  `ExZarr.ChunkCache`, or a byte size for a private one) and `recheck` (see
  `ExZarr.ChunkCache`; only with `chunk_cache`, else
  `{:error, {:option_requires, :recheck, :chunk_cache}}`).
  """
  @spec new(Metadata.t(), Storage.t(), keyword()) :: {:ok, t()} | {:error, term()}
  def new(meta, storage, opts \\ [])

  def new(%Metadata{} = meta, %Storage{} = storage, opts) do
    with :ok <- Options.check(opts, @new_opts),
         :ok <- ExZarr.Node.check_prefix(Keyword.get(opts, :prefix, "")),
         do: build(meta, storage, opts)
  end

  def new(%Metadata{}, storage, _opts), do: {:error, {:invalid_argument, Storage, storage}}
  def new(meta, _storage, _opts), do: {:error, {:invalid_argument, Metadata, meta}}

  defp build(meta, storage, opts) do
    fill_element = DType.fill_element(meta.dtype, meta.fill_value)

    with {:ok, pipeline, shape_pipelines} <- Pipelines.build(meta),
         {:ok, cache} <- chunk_cache(opts) do
      {:ok,
       %__MODULE__{
         metadata: meta,
         storage: storage,
         pipeline: pipeline,
         fill_element: fill_element,
         chunk_bytes: Pipeline.chunk_bytes(pipeline),
         chunk_cache: cache,
         grid: ChunkGrid.compile(meta.chunks),
         shape_pipelines: shape_pipelines,
         prefix: Keyword.get(opts, :prefix, ""),
         write_empty_chunks: Keyword.get(opts, :write_empty_chunks, false),
         single_writer: Keyword.get(opts, :single_writer, false)
       }}
    end
  end

  # `recheck:` says when a cache's entries are checked again: without `chunk_cache:` it would
  # mean nothing, so it is refused rather than dropped.
  defp chunk_cache(opts) do
    case {Keyword.get(opts, :chunk_cache), Keyword.fetch(opts, :recheck)} do
      {nil, :error} -> {:ok, nil}
      {nil, {:ok, _}} -> {:error, {:option_requires, :recheck, :chunk_cache}}
      {spec, _} -> ExZarr.ChunkCache.attach(spec, Keyword.get(opts, :recheck, :open))
    end
  end

  @doc """
  Reads the box `start:`..`stop:` (exclusive; defaults: the whole array) as one binary (a list
  of binaries for the variable-length types); with `step:` (a tuple of positive integers)
  every step-th element of it along each axis (numpy's `a[start:stop:step]`). Missing chunks read as the fill value. The
  chunks are decoded in parallel straight into the result (see `ExZarr.Native.outbuf_new/2`):
  besides the result, a read holds about one chunk per task in memory. A selection that is
  exactly one chunk (of an array not sharded) returns the decoded chunk itself.

      {:ok, bin} = ExZarr.Array.get_slice(array, start: {0, 0}, stop: {10, 100})
  """
  @spec get_slice(t(), keyword()) :: {:ok, binary() | [binary()]} | {:error, term()}
  def get_slice(a, opts \\ [])

  def get_slice(%__MODULE__{} = a, opts) do
    with :ok <- Options.check(opts, @read_opts),
         do: Telemetry.read(a, :get_slice, %{options: opts}, fn -> read_slice(a, opts) end)
  end

  def get_slice(a, _opts), do: not_an_array(a)

  defp read_slice(a, opts) do
    if Keyword.get(opts, :step),
      do: read_selection(a, Selection.slice(a.metadata.shape, opts), opts),
      else: read_box(a, opts)
  end

  defp read_box(a, opts) do
    with {:ok, sel, parts} <- plan(a, opts) do
      case parts do
        [%{count: count, chunk: coords}] ->
          if count != Indexing.chunk_shape(a.grid, coords) or
               Pipeline.supports_partial_decode?(a.pipeline),
             do: read_parts(a, sel, parts, opts),
             else: read_chunk_or_fill(a, coords)

        _ ->
          read_parts(a, sel, parts, opts)
      end
    end
  end

  @doc "Like `get_slice/2` but raises on error."
  @spec get_slice!(t(), keyword()) :: binary() | [binary()]
  def get_slice!(a, opts \\ []), do: unwrap!(get_slice(a, opts))

  # One output; every part puts its box into it, in parallel; the output becomes the result.
  # Each part gets its stored chunk (`stored:`) once, for the work estimate (where a chunk cache
  # holds the chunk, only its box is copied) and the read.
  defp read_parts(a, sel, parts, opts) do
    p = a.pipeline
    read_opts = [cache: a.chunk_cache] ++ opts
    parts = Enum.map(parts, &Map.put(&1, :stored, chunk(a, &1.chunk)))

    with {:ok, out} <- Pipeline.output(p, sel.shape),
         {:ok, pieces} <-
           parts
           |> run(
             a,
             &with_pipeline(a, &1.chunk, fn cp ->
               Pipeline.read(cp, &1.stored, box(&1), out, read_opts)
             end),
             opts,
             Pipeline.read_work(p, parts, &ChunkCache.cached?(a.chunk_cache, &1.stored))
           )
           |> Result.map_ok(& &1),
         do: Pipeline.finish(out, Enum.concat(pieces))
  end

  @doc """
  Writes `data` (packed C-order little-endian elements of the box's shape; a list of binaries
  for the variable-length types) into the box `start:`..`stop:` (with `step:`, into every
  step-th element of it, as `get_slice/2` reads them). Chunks only partly covered are read,
  merged and rewritten, one writer at a time per chunk on the node.

      :ok = ExZarr.Array.set_slice(array, data, start: {0, 0}, stop: {10, 100})
  """
  @spec set_slice(t(), binary() | [binary()], keyword()) :: :ok | {:error, term()}
  def set_slice(a, data, opts \\ [])

  def set_slice(%__MODULE__{} = a, data, opts) do
    with :ok <- Options.check(opts, @write_opts),
         do:
           Telemetry.write(a, :set_slice, %{options: opts}, data, fn ->
             write_slice(a, data, opts)
           end)
  end

  def set_slice(a, _data, _opts), do: not_an_array(a)

  defp write_slice(a, data, opts) do
    if Keyword.get(opts, :step) do
      write_selection(a, Selection.slice(a.metadata.shape, opts), data, opts)
    else
      with :ok <- Pipeline.check_form(a.pipeline, data),
           {:ok, sel, parts} <- plan(a, opts),
           {:ok, data} <- Pipeline.check_data(a.pipeline, data, Shape.product(sel.shape)),
           do: write_parts(a, sel.shape, parts, data, opts)
    end
  end

  @doc "Like `set_slice/3` but raises on error."
  @spec set_slice!(t(), binary() | [binary()], keyword()) :: :ok
  def set_slice!(a, data, opts \\ []), do: unwrap!(set_slice(a, data, opts))

  # Every part writes its piece of `data` (of `shape`) into its chunk, in parallel.
  defp write_parts(a, shape, parts, data, opts) do
    p = a.pipeline
    array_shape = a.metadata.shape

    parts
    |> Enum.map(&{&1, Pipeline.piece(p, data, shape, box(&1))})
    |> run(
      a,
      fn {part, piece} ->
        extent = Indexing.chunk_extent(array_shape, a.grid, part.chunk)

        with_pipeline(a, part.chunk, fn cp ->
          Pipeline.write(cp, chunk(a, part.chunk), piece, extent, write_opts(a))
        end)
      end,
      opts,
      nil,
      :chunk_writes
    )
    |> Result.each_ok(& &1)
  end

  # -- selections beyond boxes --------------------------------------------------------------

  @doc """
  Reads an orthogonal selection (zarr-python's `oindex`): `selection` has one entry per axis
  (a single entry for a 1-d array), each an integer (negative from the end), a range
  `first..last//step` (inclusive, negative ends from the end, `step >= 1`), `:all`, a list of
  integers (any order, repeats allowed) or a list of booleans as long as the axis. The result
  is the outer product of the axes' selections in C order, its shape `selection_shape/2`.
  Each chunk touched is read once; options as `get_slice/2` (`max_concurrency`, `timeout`,
  `coalesce_gap`).

      {:ok, rows} = ExZarr.Array.get_orthogonal(array, {[5, 0, 99], :all})
      {:ok, thumb} = ExZarr.Array.get_orthogonal(array, {0..-1//16, 0..-1//16})
  """
  @spec get_orthogonal(t(), tuple() | term(), keyword()) ::
          {:ok, binary() | [binary()]} | {:error, term()}
  def get_orthogonal(a, selection, opts \\ []),
    do: read_with(a, :get_orthogonal, {:orthogonal, selection}, opts)

  @doc "Like `get_orthogonal/3` but raises on error."
  @spec get_orthogonal!(t(), tuple() | term(), keyword()) :: binary() | [binary()]
  def get_orthogonal!(a, selection, opts \\ []), do: unwrap!(get_orthogonal(a, selection, opts))

  @doc """
  Writes `data` (of the selection's shape, in C order) into an orthogonal selection (see
  `get_orthogonal/3`); where an index repeats, the last value wins. Each chunk touched is
  read, merged and rewritten once, as a partial `set_slice/3` is.
  """
  @spec set_orthogonal(t(), tuple() | term(), binary() | [binary()], keyword()) ::
          :ok | {:error, term()}
  def set_orthogonal(a, selection, data, opts \\ []),
    do: write_with(a, :set_orthogonal, {:orthogonal, selection}, data, opts)

  @doc "Like `set_orthogonal/4` but raises on error."
  @spec set_orthogonal!(t(), tuple() | term(), binary() | [binary()], keyword()) :: :ok
  def set_orthogonal!(a, selection, data, opts \\ []),
    do: unwrap!(set_orthogonal(a, selection, data, opts))

  @doc """
  Reads the elements at `points` (a list of index tuples, negative from the end), one per
  point in the given order (zarr-python's `vindex`).

      {:ok, values} = ExZarr.Array.get_coordinates(array, [{0, 0}, {10, -1}])
  """
  @spec get_coordinates(t(), [tuple()], keyword()) ::
          {:ok, binary() | [binary()]} | {:error, term()}
  def get_coordinates(a, points, opts \\ []),
    do: read_with(a, :get_coordinates, {:coordinates, points}, opts)

  @doc "Like `get_coordinates/3` but raises on error."
  @spec get_coordinates!(t(), [tuple()], keyword()) :: binary() | [binary()]
  def get_coordinates!(a, points, opts \\ []), do: unwrap!(get_coordinates(a, points, opts))

  @doc "Writes one element of `data` per point; where a point repeats, the last value wins."
  @spec set_coordinates(t(), [tuple()], binary() | [binary()], keyword()) ::
          :ok | {:error, term()}
  def set_coordinates(a, points, data, opts \\ []),
    do: write_with(a, :set_coordinates, {:coordinates, points}, data, opts)

  @doc "Like `set_coordinates/4` but raises on error."
  @spec set_coordinates!(t(), [tuple()], binary() | [binary()], keyword()) :: :ok
  def set_coordinates!(a, points, data, opts \\ []),
    do: unwrap!(set_coordinates(a, points, data, opts))

  @doc """
  Reads the elements a mask selects: `mask` is a binary of one byte per element of the whole
  array in C order, non-zero meaning selected; the elements come in C order.
  """
  @spec get_mask(t(), binary(), keyword()) :: {:ok, binary() | [binary()]} | {:error, term()}
  def get_mask(a, mask, opts \\ []),
    do: read_with(a, :get_mask, {:mask, mask}, opts)

  @doc "Like `get_mask/3` but raises on error."
  @spec get_mask!(t(), binary(), keyword()) :: binary() | [binary()]
  def get_mask!(a, mask, opts \\ []), do: unwrap!(get_mask(a, mask, opts))

  @doc "Writes `data` (one element per selected element, in C order) where `mask` selects."
  @spec set_mask(t(), binary(), binary() | [binary()], keyword()) :: :ok | {:error, term()}
  def set_mask(a, mask, data, opts \\ []),
    do: write_with(a, :set_mask, {:mask, mask}, data, opts)

  @doc "Like `set_mask/4` but raises on error."
  @spec set_mask!(t(), binary(), binary() | [binary()], keyword()) :: :ok
  def set_mask!(a, mask, data, opts \\ []), do: unwrap!(set_mask(a, mask, data, opts))

  @doc """
  Reads whole chunks by their indices in the chunk grid (zarr-python's `blocks`): one entry
  per axis, an integer or a step-1 range of chunk indices (negative from the end), or `:all`.
  No axis is dropped.

      {:ok, block} = ExZarr.Array.get_blocks(array, {0, 1..2})
  """
  @spec get_blocks(t(), tuple() | term(), keyword()) ::
          {:ok, binary() | [binary()]} | {:error, term()}
  def get_blocks(a, selection, opts \\ []),
    do: read_with(a, :get_blocks, {:blocks, selection}, opts)

  @doc "Like `get_blocks/3` but raises on error."
  @spec get_blocks!(t(), tuple() | term(), keyword()) :: binary() | [binary()]
  def get_blocks!(a, selection, opts \\ []), do: unwrap!(get_blocks(a, selection, opts))

  @doc "Writes `data` into whole chunks selected as `get_blocks/3` selects them."
  @spec set_blocks(t(), tuple() | term(), binary() | [binary()], keyword()) ::
          :ok | {:error, term()}
  def set_blocks(a, selection, data, opts \\ []),
    do: write_with(a, :set_blocks, {:blocks, selection}, data, opts)

  @doc "Like `set_blocks/4` but raises on error."
  @spec set_blocks!(t(), tuple() | term(), binary() | [binary()], keyword()) :: :ok
  def set_blocks!(a, selection, data, opts \\ []),
    do: unwrap!(set_blocks(a, selection, data, opts))

  @doc """
  The shape of the data an orthogonal selection reads (numpy's rule: an integer entry drops
  its axis).

      {:ok, {25, 10}} = ExZarr.Array.selection_shape(array, {0..99//4, 3, 0..9})
  """
  @spec selection_shape(t(), tuple() | term()) :: {:ok, tuple()} | {:error, term()}
  def selection_shape(%__MODULE__{} = a, selection) do
    with {:ok, sel} <- Selection.orthogonal(a.metadata.shape, selection),
         do: {:ok, Selection.selection_shape(sel)}
  end

  def selection_shape(a, _selection), do: not_an_array(a)

  @doc "Like `selection_shape/2` but raises on error."
  @spec selection_shape!(t(), tuple() | term()) :: tuple()
  def selection_shape!(a, selection), do: unwrap!(selection_shape(a, selection))

  @sel_read_opts [:max_concurrency, :timeout, :coalesce_gap]
  @sel_write_opts [:max_concurrency, :timeout]

  # A selection read inside the read span of `function` (`selection` as the caller gave
  # it, `{kind, argument}`).
  defp read_with(%__MODULE__{} = a, function, selection, opts) do
    with :ok <- Options.check(opts, @sel_read_opts),
         do:
           Telemetry.read(a, function, %{selection: selection, options: opts}, fn ->
             read_selection(a, select(a, selection), opts)
           end)
  end

  defp read_with(a, _function, _selection, _opts), do: not_an_array(a)

  defp write_with(%__MODULE__{} = a, function, selection, data, opts) do
    with :ok <- Options.check(opts, @sel_write_opts),
         do:
           Telemetry.write(a, function, %{selection: selection, options: opts}, data, fn ->
             write_selection(a, select(a, selection), data, opts)
           end)
  end

  defp write_with(a, _function, _selection, _data, _opts), do: not_an_array(a)

  defp select(a, {:orthogonal, sel}), do: Selection.orthogonal(a.metadata.shape, sel)
  defp select(a, {:coordinates, points}), do: Selection.coordinates(a.metadata.shape, points)
  defp select(a, {:mask, mask}), do: Selection.mask(a.metadata.shape, mask)
  defp select(a, {:blocks, sel}), do: Selection.blocks(a.metadata.shape, a.metadata.chunks, sel)

  # The read loop of `read_parts/4` over a selection's parts, then the caller's order.
  defp read_selection(a, selected, opts) do
    with {:ok, sel} <- selected,
         {:ok, parts, order} <- plan_selection(a, sel),
         {:ok, data} <- read_parts(a, sel, parts, opts),
         do: reorder(a, data, sel.shape, order, :read)
  end

  # The caller's data in the parts' order, then the write loop of `write_parts/5`.
  defp write_selection(a, selected, data, opts) do
    with {:ok, sel} <- selected,
         :ok <- Pipeline.check_form(a.pipeline, data),
         {:ok, parts, order} <- plan_selection(a, sel),
         {:ok, data} <- Pipeline.check_data(a.pipeline, data, Shape.product(sel.shape)),
         {:ok, data} <- reorder(a, data, sel.shape, order, :write),
         do: write_parts(a, sel.shape, parts, data, opts)
  end

  defp plan_selection(a, sel) do
    chunks = a.grid

    with :ok <- Limits.check_elements(:selection, Shape.product(sel.shape), itemsize(a)),
         :ok <- Limits.check_parts(Selection.part_count(sel, chunks)) do
      {parts, order} = Selection.plan(sel, chunks, Pipeline.inner_levels(a.pipeline))
      {:ok, parts, order}
    end
  end

  # Selected data between the parts' order and the caller's (`t:Selection.order/0`).
  defp reorder(_a, data, _shape, nil, _direction), do: {:ok, data}

  defp reorder(a, data, shape, order, direction) do
    data = if is_list(data), do: List.to_tuple(data), else: data
    zero = Shape.zeros(tuple_size(shape))

    {src, dst} =
      case {order, direction} do
        {{:orthogonal, read, _}, :read} -> {read, zero}
        {{:orthogonal, _, write}, :write} -> {write, zero}
        {{:points, order}, :read} -> {zero, {order}}
        {{:points, order}, :write} -> {{order}, zero}
      end

    with {:ok, out} <- Pipeline.rearrange(a.pipeline, data, shape, src, dst),
         do: {:ok, if(direction == :write and is_list(out), do: List.to_tuple(out), else: out)}
  end

  # -- Access -------------------------------------------------------------------------------

  @behaviour Access

  @doc """
  `array[selection]` reads an orthogonal selection (`get_orthogonal!/2`), raising on error:
  `array[{0..99//4, :all}]`.
  """
  @impl Access
  def fetch(%__MODULE__{} = a, selection), do: {:ok, get_orthogonal!(a, selection)}

  @doc """
  Reads an orthogonal selection, passes it to `fun` and writes back the data `fun` returns
  (`{current, new}`): `update_in(array[{0, :all}], &double/1)`-style updates. The array
  handle is returned unchanged (the data lives in the store).
  """
  @impl Access
  def get_and_update(%__MODULE__{} = a, selection, fun) do
    current = get_orthogonal!(a, selection)

    case fun.(current) do
      {get, new} ->
        set_orthogonal!(a, selection, new)
        {get, a}

      :pop ->
        pop(a, selection)

      other ->
        raise ExZarr.Error,
          reason: {:invalid_update, other, "the function must return {get, new_data} or :pop"}
    end
  end

  @doc "Elements cannot be removed from an array: raises `ExZarr.Error`."
  @impl Access
  def pop(%__MODULE__{}, selection),
    do:
      raise(ExZarr.Error,
        reason:
          {:cannot_pop, selection,
           "arrays have a fixed shape; write the fill value with set_orthogonal/3 instead"}
      )

  @doc """
  Reads and decodes one whole chunk (full chunk shape, edge chunks included).
  `{:error, :not_found}` when the chunk is not stored. For a sharded array a chunk is a shard;
  `level: :inner` reads one inner chunk by its coordinates in the inner chunk grid, fetching
  only its bytes.
  """
  @spec read_chunk(t(), tuple(), keyword()) :: {:ok, binary() | [binary()]} | {:error, term()}
  def read_chunk(a, coords, opts \\ [])

  def read_chunk(%__MODULE__{} = a, coords, opts) do
    with :ok <- Options.check(opts, [:level]),
         do:
           Telemetry.read(a, :read_chunk, %{chunk: coords}, fn -> read_whole(a, coords, opts) end)
  end

  def read_chunk(a, _coords, _opts), do: not_an_array(a)

  defp read_whole(a, coords, opts) do
    if Keyword.get(opts, :level) == :inner do
      read_inner_chunk(a, coords)
    else
      with :ok <- check_chunk(a, a.grid, coords),
           do:
             with_pipeline(
               a,
               coords,
               &Pipeline.read_chunk(&1, chunk(a, coords), cache: a.chunk_cache)
             )
    end
  end

  defp read_inner_chunk(%__MODULE__{pipeline: %{layout: :items}}, _coords),
    do: {:error, {:unsupported_option, :level, "inner chunks of variable-length arrays"}}

  defp read_inner_chunk(a, coords) do
    with {:ok, inner} <- Pipeline.inner_chunk_shape(a.pipeline),
         :ok <- check_chunk(a, inner, coords) do
      {shard, local} = Indexing.locate(a.grid, Shape.mul(coords, inner))
      local = Shape.zip_with(local, inner, &div/2)
      with_pipeline(a, shard, &Pipeline.read_inner_chunk(&1, chunk(a, shard), local))
    end
  end

  @doc """
  Encodes and stores one whole chunk (`data` has the full chunk shape: in a rectilinear grid,
  `ExZarr.Indexing.chunk_shape/2` of the coordinates). A chunk equal to the fill value
  everywhere is deleted instead, unless `write_empty_chunks` is on.
  """
  @spec write_chunk(t(), tuple(), binary() | [binary()]) :: :ok | {:error, term()}
  def write_chunk(%__MODULE__{} = a, coords, data) do
    with :ok <- check_chunk(a, a.grid, coords),
         do:
           Telemetry.write(a, :write_chunk, %{chunk: coords}, data, fn ->
             write_whole(a, coords, data)
           end)
  end

  def write_chunk(a, _coords, _data), do: not_an_array(a)

  defp write_whole(a, coords, data) do
    shape = Indexing.chunk_shape(a.grid, coords)
    zero = Shape.zeros(tuple_size(shape))

    with :ok <- Pipeline.check_form(a.pipeline, data),
         {:ok, data} <- Pipeline.check_data(a.pipeline, data, Shape.product(shape)),
         {:ok, p} <- chunk_pipeline(a, coords) do
      piece = {data, shape, zero, zero, shape}
      Pipeline.write(p, chunk(a, coords), piece, shape, write_opts(a))
    end
  end

  @doc """
  A stream of `{chunk_coords, binary}` for every chunk of the grid, decoded in parallel.
  Chunks that are not stored come as fill-value chunks.

  Options: `parallel:` (number of chunks decoded at once; default two more than the dirty
  CPU schedulers, or `ExZarr.Storage.io_concurrency/1` for remote stores; `1` decodes in the
  consuming process with constant memory), `ordered:` (default `true`), `timeout:` (per
  chunk, default `:infinity`).
  Memory stays bounded by `parallel` x chunk size. For a sharded array the chunks are shards;
  `level: :inner` streams `{inner_coords, binary}` for every inner chunk inside the array
  instead, shard by shard (each shard read once).
  """
  @spec chunk_stream(t(), keyword()) :: Enumerable.t()
  def chunk_stream(a, opts \\ [])

  def chunk_stream(%__MODULE__{} = a, opts) do
    unwrap!(Options.check(opts, @stream_opts))
    shards = Indexing.chunk_coords(a.metadata.shape, a.grid)

    if Keyword.get(opts, :level) == :inner do
      unwrap!(inner_chunk_shape(a))

      a
      |> stream(shards, opts, &inner_chunks(a, &1))
      |> Stream.flat_map(& &1)
    else
      stream(a, shards, opts, fn c ->
        with {:ok, data} <- read_chunk_or_fill(a, c), do: {:ok, {c, data}}
      end)
    end
  end

  def chunk_stream(a, _opts), do: unwrap!(not_an_array(a))

  defp inner_chunk_shape(%__MODULE__{pipeline: %{layout: :items}}),
    do: {:error, {:unsupported_option, :level, "inner chunks of variable-length arrays"}}

  defp inner_chunk_shape(a), do: Pipeline.inner_chunk_shape(a.pipeline)

  # The inner chunks of a shard that lie inside the array, cut from the decoded shard.
  defp inner_chunks(a, shard) do
    with {:ok, data} <- read_chunk_or_fill(a, shard) do
      Pipeline.inner_chunks(
        a.pipeline,
        data,
        Indexing.chunk_shape(a.grid, shard),
        Indexing.chunk_origin(a.grid, shard),
        a.metadata.shape
      )
    end
  end

  # Maps `fun` (giving `{:ok, value}` or `{:error, reason}`) over `items` lazily
  # (`ExZarr.Parallel.stream/3`): a failure raises `ExZarr.Error` in the consumer.
  defp stream(a, items, opts, fun) do
    n = in_flight(a, Keyword.get(opts, :parallel))
    Parallel.stream(items, fun, Keyword.put(opts, :max_concurrency, n))
  end

  @doc """
  Validates a `start:`/`stop:` selection and plans it over the chunk grid (see
  `ExZarr.Indexing.plan/2`), refusing selections whose result or bookkeeping would not fit
  in memory (`ExZarr.Limits`), inner chunks of a sharded array included.
  """
  @spec plan(t(), keyword()) ::
          {:ok, Indexing.selection(), [Indexing.part()]} | {:error, term()}
  def plan(%__MODULE__{metadata: meta} = a, opts) do
    with {:ok, sel} <- Indexing.selection(meta.shape, opts),
         :ok <- Limits.check_elements(:selection, Shape.product(sel.shape), itemsize(a)),
         :ok <- Limits.check_parts(Indexing.part_count(sel, a.grid)),
         :ok <- check_inner_parts(a, sel) do
      {:ok, sel, Indexing.plan(sel, a.grid)}
    end
  end

  defp check_inner_parts(a, sel) do
    case Pipeline.inner_chunk_shape(a.pipeline) do
      {:ok, inner} -> Limits.check_parts(Indexing.part_count(sel, inner))
      {:error, :not_sharded} -> :ok
    end
  end

  @doc """
  The storage key of a chunk (including the array's prefix). Raises `ExZarr.Error`
  (`{:invalid_chunk_coords, coords}`) when `coords` is not a chunk of the grid.
  """
  @spec chunk_key(t(), tuple()) :: String.t()
  def chunk_key(%__MODULE__{metadata: meta, prefix: prefix} = a, coords) do
    unwrap!(check_chunk(a, a.grid, coords))
    Keys.join(prefix, Metadata.chunk_key(meta, coords))
  end

  # -- attributes and shape changes ---------------------------------------------------------

  @doc "The array's attributes (a map of JSON values)."
  @spec attributes(t()) :: map()
  def attributes(%__MODULE__{metadata: meta}), do: meta.attributes

  @doc """
  Replaces the array's attributes and persists them (`.zattrs` for v2, `zarr.json` for v3).
  Returns the updated array. See `ExZarr.Metadata.Attributes` for the values allowed.

      {:ok, array} = ExZarr.Array.set_attributes(array, %{"units" => "K"})
  """
  @spec set_attributes(t(), map()) :: {:ok, t()} | {:error, term()}
  def set_attributes(a, attributes), do: change_attributes(a, {:set, attributes})

  @doc "Merges `attributes` into the array's attributes (top-level keys) and persists them."
  @spec update_attributes(t(), map()) :: {:ok, t()} | {:error, term()}
  def update_attributes(a, attributes), do: change_attributes(a, {:update, attributes})

  @doc "Removes attribute keys (missing keys are ignored) and persists the rest."
  @spec delete_attributes(t(), [String.t() | atom()]) :: {:ok, t()} | {:error, term()}
  def delete_attributes(a, keys), do: change_attributes(a, {:delete, keys})

  defp change_attributes(%__MODULE__{} = a, change) do
    with {:ok, meta} <-
           ExZarr.Node.change_attributes(a.storage, a.prefix, {:array, a.metadata}, change),
         do: {:ok, %{a | metadata: meta}}
  end

  defp change_attributes(a, _change), do: not_an_array(a)

  @doc """
  Changes the array's shape (same number of dimensions) and rewrites its metadata (one put of
  `zarr.json` / `.zarray`). Growing keeps all data; the new region reads as the fill value.
  Shrinking deletes the chunks wholly outside the new shape and clears the cut-off part of the
  chunks on the new border to the fill value, so that growing again later shows fill values
  rather than the old data (zarr-python 3.1 deletes the outside chunks but leaves the border
  chunks as they are). The chunks to delete or clear are visited by their coordinates when
  there are at most 65,536 of them, else found by listing the chunks stored under the array
  (zarr-python walks every coordinate): the work never grows with the size of the grid beyond
  that. Options: `max_concurrency`, `timeout`. Returns the resized array.

      {:ok, array} = ExZarr.Array.resize(array, {200, 100})
  """
  @spec resize(t(), tuple(), keyword()) :: {:ok, t()} | {:error, term()}
  def resize(a, new_shape, opts \\ [])

  def resize(%__MODULE__{} = a, new_shape, opts) do
    with :ok <- Options.check(opts, @resize_opts),
         {:ok, new_meta, clear, delete} <- Reshape.resize(a, new_shape),
         :ok <- each_chunk(a, clear, opts, &clear_outside(a, &1, new_shape)),
         :ok <- each_chunk(a, delete, opts, &Pipeline.delete(a.pipeline, chunk(a, &1))),
         :ok <- ExZarr.Node.write_array_metadata(a.storage, a.prefix, new_meta) do
      {:ok, %{a | metadata: new_meta}}
    end
  end

  def resize(a, _new_shape, _opts), do: not_an_array(a)

  @doc """
  Appends `data` (packed C-order little-endian elements; a list of binaries for `:string` and
  `:bytes` arrays) along `axis` (default 0; negative counts from the end): the array grows by
  as many slices as `data` holds and `data` is written into them. The other dimensions of
  `data` are the array's. Options as `resize/3`. The stored shape grows in one conditional
  update of the metadata, so that concurrent appends (from any OS process or node) each get
  their own region, after the shape stored then rather than the handle's. Returns the grown
  array.

      # a {10, 3} array becomes {12, 3}
      {:ok, array} = ExZarr.Array.append(array, two_rows, 0)
  """
  @spec append(t(), binary() | [binary()], integer(), keyword()) :: {:ok, t()} | {:error, term()}
  def append(a, data, axis \\ 0, opts \\ [])

  def append(%__MODULE__{} = a, data, axis, opts) do
    with :ok <- Options.check(opts, @resize_opts),
         {:ok, grown, region} <- Reshape.append(a, data, axis),
         :ok <- write_appended(region, data, opts),
         do: {:ok, grown}
  end

  def append(a, _data, _axis, _opts), do: not_an_array(a)

  defp write_appended(nil, _data, _opts), do: :ok

  defp write_appended({writer, start, stop}, data, opts),
    do: set_slice(writer, data, Keyword.merge(opts, start: start, stop: stop))

  defp each_chunk(a, coords, opts, fun), do: coords |> run(a, fun, opts) |> Result.each_ok(& &1)

  # The chunk's part inside the new shape is kept, the rest becomes fill (one read-modify-write
  # under the chunk's lock, see `ExZarr.Codec.Pipeline.keep/4`).
  defp clear_outside(a, coords, new_shape) do
    keep = Indexing.chunk_extent(new_shape, a.grid, coords)
    with_pipeline(a, coords, &Pipeline.keep(&1, chunk(a, coords), keep, write_opts(a)))
  end

  # -- helpers ------------------------------------------------------------------------------

  defp chunk(a, coords), do: Chunk.new(a.storage, chunk_key(a, coords))

  defp read_chunk_or_fill(a, coords),
    do:
      with_pipeline(
        a,
        coords,
        &Pipeline.read_chunk_or_fill(&1, chunk(a, coords), cache: a.chunk_cache)
      )

  # The pipeline of the chunk at `coords`: the array's, or in a rectilinear grid one for the
  # chunk's own shape (see `ExZarr.Array.Pipelines`).
  defp chunk_pipeline(%{pipeline: p} = a, coords) do
    shape = Indexing.chunk_shape(a.grid, coords)

    cond do
      shape == p.chunk_spec.shape ->
        {:ok, p}

      Map.has_key?(a.shape_pipelines, shape) ->
        Map.fetch(a.shape_pipelines, shape)

      true ->
        Pipeline.new(a.metadata.codecs, %{p.chunk_spec | shape: shape},
          zarr_format: a.metadata.zarr_format
        )
    end
  end

  defp with_pipeline(a, coords, fun) do
    with {:ok, p} <- chunk_pipeline(a, coords), do: fun.(p)
  end

  defp write_opts(a),
    do: [keep_fill: a.write_empty_chunks, cache: a.chunk_cache, single_writer: a.single_writer]

  defp box(part), do: {part.chunk_start, part.out_start, part.count}

  # Runs `fun` over the chunks' work items in parallel (`ExZarr.Parallel.chunks/6`, `kind`
  # `:chunks` or `:chunk_writes`: as many as asked or the store's default, within what memory
  # holds of them, see `ExZarr.Codec.Pipeline.max_in_flight/1`); `bytes` is the work's size
  # in all (default: a whole chunk each).
  defp run(items, a, fun, opts, bytes \\ nil, kind \\ :chunks) do
    opts =
      Keyword.merge(opts,
        max_in_flight: Pipeline.max_in_flight(a.pipeline),
        chunk_bytes: a.chunk_bytes
      )

    Parallel.chunks(items, fun, a.storage, bytes || length(items) * a.chunk_bytes, opts, kind)
  end

  # Chunks a stream decodes at once: as asked, else the store's default, within what memory
  # holds of them (variable-length chunks, see `ExZarr.Codec.Pipeline.max_in_flight/1`).
  defp in_flight(a, asked) do
    Parallel.concurrency(:chunks, a.storage,
      max_concurrency: asked,
      max_in_flight: Pipeline.max_in_flight(a.pipeline)
    )
  end

  defp check_chunk(a, chunk_shape, coords) do
    if Indexing.valid_chunk?(a.metadata.shape, chunk_shape, coords),
      do: :ok,
      else: {:error, {:invalid_chunk_coords, coords}}
  end

  defp itemsize(a), do: byte_size(a.fill_element)

  defp not_an_array(a), do: {:error, {:invalid_argument, __MODULE__, a}}
end
