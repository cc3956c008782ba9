defmodule ExZarr.Array do
  @moduledoc """
  An open Zarr array: its metadata, its storage and the codec pipeline for its chunks.

  Data goes in and out as one binary of packed elements in C order, little-endian, whatever
  the stored order and byte order are; for the variable-length types `:string` and `:bytes`
  as a list of binaries in C order (see `ExZarr.Array.VarLen`).

      {:ok, a} = ExZarr.create(shape: {4, 4}, chunks: {2, 2}, dtype: :uint8, storage: :memory)
      :ok = ExZarr.Array.set_slice(a, :binary.copy(<<7>>, 4), start: {1, 1}, stop: {3, 3})
      {:ok, <<0, 7, 7, 0>>} = ExZarr.Array.get_slice(a, start: {1, 0}, stop: {2, 4})

  Chunks are decoded and encoded in parallel (`max_concurrency:`, default two more than the
  dirty CPU schedulers, or the store's `ExZarr.Storage.io_concurrency/1` for remote stores;
  `timeout:` per chunk, default `:infinity`). A chunk whose values all equal the fill value
  is not stored, and an existing one is deleted, unless the array was opened with
  `write_empty_chunks: true` (as in zarr-python).
  """

  alias ExZarr.{DType, Indexing, Limits, Metadata, Native, Options, Result, Sharding, Storage}
  alias ExZarr.Telemetry
  alias ExZarr.Array.VarLen
  alias ExZarr.Storage.Lock
  alias ExZarr.Codec.Pipeline
  alias ExZarr.Codecs.ShardingIndexed
  require DType

  @enforce_keys [:metadata, :storage, :pipeline]
  defstruct [
    :metadata,
    :storage,
    :pipeline,
    :fill_element,
    :chunk_bytes,
    :sharding,
    prefix: "",
    write_empty_chunks: false
  ]

  @type t :: %__MODULE__{
          metadata: Metadata.t(),
          storage: Storage.t(),
          pipeline: Pipeline.t(),
          fill_element: binary(),
          chunk_bytes: non_neg_integer(),
          sharding: Sharding.t() | nil,
          prefix: String.t(),
          write_empty_chunks: boolean()
        }

  # The options each public function takes (see ExZarr.Options).
  @new_opts [:prefix, :write_empty_chunks]
  @write_opts [:start, :stop, :max_concurrency, :timeout]
  @read_opts [:coalesce_gap | @write_opts]
  @stream_opts [:parallel, :ordered, :timeout, :level]
  @resize_opts [:max_concurrency, :timeout]

  @doc """
  Builds an array handle from metadata and a storage (no I/O). Options: `prefix` (the array's
  path inside the store, "" for the root), `write_empty_chunks` (default false).
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

    spec = %{
      shape: meta.chunks,
      dtype: meta.dtype,
      fill_value: meta.fill_value,
      decoded_size: nil
    }

    with {:ok, pipeline} <- Pipeline.new(meta.codecs, spec),
         :ok <- check_var_len(meta, pipeline) do
      {:ok,
       %__MODULE__{
         metadata: meta,
         storage: storage,
         pipeline: pipeline,
         fill_element: fill_element,
         chunk_bytes: byte_size(fill_element) * Indexing.product(meta.chunks),
         sharding: Sharding.new(pipeline),
         prefix: Keyword.get(opts, :prefix, ""),
         write_empty_chunks: Keyword.get(opts, :write_empty_chunks, false)
       }}
    end
  end

  @doc """
  Reads the box `start:`..`stop:` (exclusive; defaults: the whole array) as one binary.
  Missing chunks read as the fill value. The chunks of an unsharded array are decoded in
  parallel straight into the result (see `ExZarr.Native.outbuf_new/2`): besides the result,
  a read holds about one chunk per task in memory. Options: `start`, `stop`,
  `max_concurrency`, `timeout`, and `coalesce_gap` for sharded arrays (see `ExZarr.Sharding`).

      {:ok, bin} = ExZarr.Array.get_slice(array, start: {0, 0}, stop: {10, 100})
  """
  @spec get_slice(t(), keyword()) :: {:ok, binary() | [binary()]} | {:error, term()}
  def get_slice(a, opts \\ [])

  def get_slice(%__MODULE__{} = a, opts) do
    with :ok <- Options.check(opts, @read_opts),
         do: Telemetry.read(a, :get_slice, %{options: opts}, fn -> read_slice(a, opts) end)
  end

  def get_slice(a, _opts), do: not_an_array(a)

  defp read_slice(%{metadata: %{dtype: dtype}} = a, opts) when DType.is_var_len(dtype),
    do: VarLen.get_slice(a, opts)

  defp read_slice(%{sharding: %Sharding{}} = a, opts), do: Sharding.get_slice(a, opts)

  defp read_slice(a, opts) do
    with {:ok, sel, parts} <- plan(a, opts) do
      case parts do
        [%{count: count} = part] when count == a.metadata.chunks ->
          # The selection is exactly one whole chunk: return the decoded binary itself.
          read_part_whole(a, part)

        _ ->
          assemble(a, sel, parts, opts)
      end
    end
  end

  @doc "Like `get_slice/2` but raises on error."
  @spec get_slice!(t(), keyword()) :: binary() | [binary()]
  def get_slice!(a, opts \\ []), do: unwrap!(get_slice(a, opts))

  @doc """
  Writes `data` (packed C-order little-endian elements of the box's shape) into the box
  `start:`..`stop:`. Chunks only partly covered are read, merged and rewritten. Options:
  `start`, `stop`, `max_concurrency`, `timeout`.

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

  defp write_slice(%{metadata: %{dtype: dtype}} = a, data, opts) when DType.is_var_len(dtype),
    do: VarLen.set_slice(a, data, opts)

  defp write_slice(%{sharding: %Sharding{}} = a, data, opts) when is_binary(data),
    do: Sharding.set_slice(a, data, opts)

  defp write_slice(a, data, opts) when is_binary(data) do
    with {:ok, sel, parts} <- plan(a, opts),
         :ok <- check_size(data, Indexing.product(sel.shape) * itemsize(a)) do
      a
      |> run_parallel(parts, opts, &write_part(a, data, sel, &1))
      |> Result.each_ok(& &1)
    end
  end

  defp write_slice(_a, data, _opts), do: {:error, {:invalid_data, not_binary(data)}}

  @doc "Like `set_slice/3` but raises on error."
  @spec set_slice!(t(), binary() | [binary()], keyword()) :: :ok
  def set_slice!(a, data, opts \\ []), do: unwrap!(set_slice(a, data, opts))

  @doc """
  Reads and decodes one whole chunk (full chunk shape, edge chunks included).
  `{:error, :not_found}` when the chunk is not stored. For a sharded array a chunk is a shard;
  `level: :inner` reads one inner chunk by its coordinates in the inner chunk grid (see
  `ExZarr.Sharding`); the default is `level: :chunk`.
  """
  @spec read_chunk(t(), tuple(), keyword()) :: {:ok, binary() | [binary()]} | {:error, term()}
  def read_chunk(a, coords, opts \\ [])

  def read_chunk(%__MODULE__{} = a, coords, opts) do
    with :ok <- Options.check(opts, [:level]),
         do:
           Telemetry.read(a, :read_chunk, %{chunk: coords}, fn -> read_whole(a, coords, opts) end)
  end

  def read_chunk(a, _coords, _opts), do: not_an_array(a)

  defp read_whole(%{metadata: %{dtype: dtype}} = a, coords, opts) when DType.is_var_len(dtype),
    do: VarLen.read_chunk(a, coords, opts)

  defp read_whole(a, coords, opts) do
    if Keyword.get(opts, :level) == :inner,
      do: Sharding.read_inner_chunk(a, coords),
      else: with(:ok <- check_chunk(a, coords), do: fetch_chunk(a, coords))
  end

  @doc """
  Encodes and stores one whole chunk (`data` has the full chunk shape). A chunk equal to the
  fill value everywhere is deleted instead, unless `write_empty_chunks` is on.
  """
  @spec write_chunk(t(), tuple(), binary() | [binary()]) :: :ok | {:error, term()}
  def write_chunk(%__MODULE__{} = a, coords, data) do
    with :ok <- check_chunk(a, coords),
         do:
           Telemetry.write(a, :write_chunk, %{chunk: coords}, data, fn ->
             write_whole(a, coords, data)
           end)
  end

  def write_chunk(a, _coords, _data), do: not_an_array(a)

  defp write_whole(%{metadata: %{dtype: dtype}} = a, coords, data) when DType.is_var_len(dtype),
    do: VarLen.write_chunk(a, coords, data)

  defp write_whole(%{sharding: %Sharding{}} = a, coords, data) when is_binary(data),
    do: Sharding.write_chunk(a, coords, data)

  defp write_whole(a, coords, data) when is_binary(data) do
    with :ok <- check_size(data, a.chunk_bytes), do: store_chunk(a, coords, data)
  end

  defp write_whole(_a, _coords, data), do: {:error, {:invalid_data, not_binary(data)}}

  @doc """
  A stream of `{chunk_coords, binary}` for every chunk of the grid, decoded in parallel.
  Chunks that are not stored come as fill-value chunks.

  Options: `parallel:` (number of chunks decoded at once; default two more than the dirty
  CPU schedulers, or `ExZarr.Storage.io_concurrency/1` for remote stores; `1` decodes in the
  consuming process with constant memory), `ordered:` (default `true`), `timeout:` (per
  chunk, default `:infinity`).
  Memory stays bounded by `parallel` x chunk size. For a sharded array the chunks are shards;
  `level: :inner` streams inner chunks instead (see `ExZarr.Sharding.inner_chunk_stream/2`).

  A stream cannot return `{:error, reason}`: bad arguments (an unknown option, `level: :inner`
  on an unsharded array) raise `ExZarr.Error` here, before anything is read, and a chunk that
  cannot be read raises `ExZarr.Error` while the stream is consumed.
  """
  @spec chunk_stream(t(), keyword()) :: Enumerable.t()
  def chunk_stream(a, opts \\ [])

  def chunk_stream(%__MODULE__{} = a, opts) do
    case Options.check(opts, @stream_opts) do
      :ok -> stream(a, opts)
      {:error, reason} -> raise ExZarr.Error, reason: reason
    end
  end

  def chunk_stream(a, _opts), do: unwrap!(not_an_array(a))

  defp stream(%{metadata: %{dtype: dtype}} = a, opts) when DType.is_var_len(dtype),
    do: stream_chunks(a, VarLen.stream_opts!(a, opts), &VarLen.read_chunk_or_fill/2)

  defp stream(a, opts) do
    if Keyword.get(opts, :level) == :inner,
      do: Sharding.inner_chunk_stream(a, opts),
      else: stream_chunks(a, opts, &fetch_chunk_or_fill/2)
  end

  defp stream_chunks(a, opts, fetch) do
    coords = Indexing.chunk_coords(a.metadata.shape, a.metadata.chunks)

    stream_map(a, coords, opts, fn c -> with {:ok, data} <- fetch.(a, c), do: {:ok, {c, data}} end)
  end

  @doc false
  # Maps `fun` (giving `{:ok, value}` or `{:error, reason}`) over `items` lazily: in the
  # consuming process with `parallel: 1`, else in up to `parallel:` tasks (default
  # `concurrency/2`), `ordered:` (default true), `timeout:`. The stream gives the values; an
  # error, or a task that timed out, raises `ExZarr.Error` in the consuming process (a task
  # never raises, which would kill the consumer through its link).
  @spec stream_map(t(), Enumerable.t(), keyword(), (term() -> {:ok, term()} | {:error, term()})) ::
          Enumerable.t()
  def stream_map(a, items, opts, fun) do
    case Keyword.get_lazy(opts, :parallel, fn -> concurrency(a, []) end) do
      1 ->
        Stream.map(items, &unwrap!(fun.(&1)))

      n ->
        items
        |> Task.async_stream(fun,
          max_concurrency: n,
          ordered: Keyword.get(opts, :ordered, true),
          timeout: Keyword.get(opts, :timeout, :infinity),
          on_timeout: :kill_task
        )
        |> Stream.map(fn
          {:ok, result} -> unwrap!(result)
          {:exit, reason} -> unwrap!({:error, {:chunk_task_failed, reason}})
        end)
    end
  end

  @doc false
  # Validates a `start:`/`stop:` selection and plans it over the chunk grid (see
  # `ExZarr.Indexing.plan/2`), refusing selections whose result or bookkeeping would not fit
  # in memory (`ExZarr.Limits`). Shared with Sharding; the public functions check the options.
  @spec plan(t(), keyword()) ::
          {:ok, Indexing.selection(), [Indexing.part()]} | {:error, term()}
  def plan(%__MODULE__{metadata: meta} = a, opts) do
    with {:ok, sel} <- Indexing.selection(meta.shape, opts),
         :ok <- Limits.check_elements(:selection, Indexing.product(sel.shape), itemsize(a)),
         :ok <- Limits.check_parts(Indexing.part_count(sel, meta.chunks)) do
      {:ok, sel, Indexing.plan(sel, meta.chunks)}
    end
  end

  @doc "The storage key of a chunk (including the array's prefix)."
  @spec chunk_key(t(), tuple()) :: String.t()
  def chunk_key(%__MODULE__{metadata: meta, prefix: prefix}, coords),
    do: join_key(prefix, Metadata.chunk_key(meta, coords))

  # -- attributes and shape changes ---------------------------------------------------------

  @doc "The array's attributes (a map of JSON values)."
  @spec attributes(t()) :: map()
  def attributes(%__MODULE__{metadata: meta}), do: meta.attributes

  @doc """
  Replaces the array's attributes and persists them (`.zattrs` for v2, `zarr.json` for v3).
  Returns the updated array. See `ExZarr.Attributes` for the values allowed.

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
  there are at most `ExZarr.Limits.max_chunk_visits/0` of them, else found by listing the
  chunks stored under the array (zarr-python walks every coordinate): the work never grows
  with the size of the grid beyond that. Options: `max_concurrency`, `timeout`. Returns the
  resized array.

      {:ok, array} = ExZarr.Array.resize(array, {200, 100})
  """
  @spec resize(t(), tuple(), keyword()) :: {:ok, t()} | {:error, term()}
  def resize(a, new_shape, opts \\ [])

  def resize(%__MODULE__{metadata: meta} = a, new_shape, opts) do
    with :ok <- Options.check(opts, @resize_opts),
         {:ok, new_meta} <- Metadata.resize(meta, new_shape),
         %{clear: clear, delete: delete} <-
           Indexing.resize_boxes(meta.shape, new_shape, meta.chunks),
         {:ok, [clear, delete]} <- chunks_in(a, [clear, delete]),
         :ok <- each_chunk(a, clear, opts, &clear_outside(a, &1, new_shape)),
         :ok <- each_chunk(a, delete, opts, &Storage.delete(a.storage, chunk_key(a, &1))),
         :ok <- ExZarr.Node.write_array_metadata(a.storage, a.prefix, new_meta) do
      {:ok, %{a | metadata: new_meta}}
    end
  end

  def resize(a, _new_shape, _opts), do: not_an_array(a)

  @doc """
  Appends `data` (packed C-order little-endian elements; a list of binaries for `:string` and
  `:bytes` arrays) along `axis` (default 0; negative counts from the end): the array grows by
  as many slices as `data` holds and `data` is written into them. The other dimensions of
  `data` are the array's. Options as `resize/3`. Returns the grown array.

      # a {10, 3} array becomes {12, 3}
      {:ok, array} = ExZarr.Array.append(array, two_rows, 0)
  """
  @spec append(t(), binary() | [binary()], integer(), keyword()) :: {:ok, t()} | {:error, term()}
  def append(a, data, axis \\ 0, opts \\ [])

  def append(%__MODULE__{metadata: meta} = a, data, axis, opts) do
    shape = meta.shape
    ndim = tuple_size(shape)
    axis = if is_integer(axis) and axis < 0, do: axis + ndim, else: axis

    with :ok <- Options.check(opts, @resize_opts),
         :ok <- check_axis(axis, ndim),
         {:ok, count} <- appended_count(a, data, Indexing.product(put_elem(shape, axis, 1))),
         new_shape = put_elem(shape, axis, elem(shape, axis) + count),
         {:ok, a} <- resize(a, new_shape, opts),
         :ok <- append_write(a, data, count, put_elem(zeros(ndim), axis, elem(shape, axis)), opts) do
      {:ok, a}
    end
  end

  def append(a, _data, _axis, _opts), do: not_an_array(a)

  defp append_write(_a, _data, 0, _start, _opts), do: :ok

  defp append_write(a, data, _count, start, opts),
    do: set_slice(a, data, Keyword.merge(opts, start: start, stop: a.metadata.shape))

  defp check_axis(axis, ndim) when is_integer(axis) and axis >= 0 and axis < ndim, do: :ok
  defp check_axis(axis, _ndim), do: {:error, {:invalid_axis, axis}}

  # How many slices along the axis `data` holds; a slice has `slice` elements.
  defp appended_count(a, data, slice) do
    with {:ok, size, unit} <- data_size(a, data) do
      cond do
        slice > 0 and rem(size, slice * unit) == 0 ->
          {:ok, div(size, slice * unit)}

        slice == 0 ->
          {:error, {:cannot_append, "the array has an empty dimension besides the axis"}}

        true ->
          {:error, {:wrong_data_size, expected_multiple_of: slice * unit, got: size}}
      end
    end
  end

  # The size of the caller's data and of one element in it: bytes, or list items.
  defp data_size(%{metadata: %{dtype: dtype}}, data) when DType.is_var_len(dtype) do
    if is_list(data) and not List.improper?(data),
      do: {:ok, length(data), 1},
      else:
        {:error, {:invalid_data, "expected a list of binaries, got #{inspect(data, limit: 3)}"}}
  end

  defp data_size(a, data) when is_binary(data), do: {:ok, byte_size(data), itemsize(a)}
  defp data_size(_a, data), do: {:error, {:invalid_data, not_binary(data)}}

  # The chunks in each list of boxes (see `ExZarr.Indexing.resize_boxes/3`): every coordinate
  # when there are at most `Limits.max_chunk_visits/0` in all, else only the stored chunks
  # (one listing), so that the work follows the chunks stored, not the size of the grid.
  defp chunks_in(a, box_lists) do
    count = Indexing.box_size(Enum.concat(box_lists))

    if count <= Limits.max_chunk_visits() do
      {:ok, Enum.map(box_lists, &Enum.flat_map(&1, fn box -> Indexing.box_coords(box) end))}
    else
      with {:ok, stored} <- stored_chunks(a, count),
           do:
             {:ok,
              Enum.map(box_lists, &Enum.filter(stored, fn c -> Indexing.in_boxes?(c, &1) end))}
    end
  end

  defp stored_chunks(a, count) do
    case Storage.list(a.storage, a.prefix) do
      {:ok, keys} ->
        keys = Enum.map(keys, &String.replace_prefix(&1, join_key(a.prefix, ""), ""))
        {:ok, for(key <- keys, {:ok, c} <- [Metadata.chunk_coords(a.metadata, key)], do: c)}

      {:error, {:not_supported, _}} ->
        {:error, {:too_large, :chunk_visits, count, Limits.max_chunk_visits()}}

      error ->
        error
    end
  end

  defp each_chunk(a, coords, opts, fun),
    do: a |> run_parallel(coords, opts, fun) |> Result.each_ok(& &1)

  # A read-modify-write of the chunk, under its lock as partial writes: what lies beyond the
  # new shape becomes the fill value.
  defp clear_outside(a, coords, new_shape),
    do:
      Lock.run(a.storage, chunk_key(a, coords), fn ->
        keep = Indexing.chunk_extent(new_shape, a.metadata.chunks, coords)

        case read_whole(a, coords, []) do
          {:ok, data} ->
            with {:ok, chunk} <- keep_box(a, data, keep), do: write_chunk(a, coords, chunk)

          {:error, :not_found} ->
            :ok

          error ->
            error
        end
      end)

  # The chunk's box `keep` from its origin, the rest fill.
  defp keep_box(%{metadata: %{chunks: chunks, dtype: dtype}} = a, items, keep)
       when DType.is_var_len(dtype) do
    zero = zeros(tuple_size(chunks))
    piece = {List.to_tuple(items), chunks, zero, zero, keep}
    {:ok, VarLen.assemble(chunks, {:fill, a.fill_element}, [piece])}
  end

  defp keep_box(%{metadata: %{chunks: chunks}} = a, data, keep) do
    zero = zeros(tuple_size(chunks))

    Native.copy_regions(chunks, itemsize(a), {:fill, a.fill_element}, [
      {data, chunks, zero, zero, keep}
    ])
  end

  defp zeros(n), do: Tuple.duplicate(0, n)

  # -- reading ------------------------------------------------------------------------------

  defp fetch_chunk(a, coords) do
    key = chunk_key(a, coords)

    with :ok <- check_whole(a),
         {:ok, stored} <- Storage.get(a.storage, key),
         do: decode_chunk(a, stored, key)
  end

  # A whole shard is decoded only when it fits in memory (its parts are read without it).
  defp check_whole(%{sharding: %Sharding{codec: codec}}), do: ShardingIndexed.check_whole(codec)
  defp check_whole(_a), do: :ok

  defp decode_chunk(a, stored, key) do
    case Pipeline.decode(a.pipeline, stored) do
      {:ok, data} -> {:ok, data}
      {:error, reason} -> {:error, {:corrupt_chunk, key, reason}}
    end
  end

  defp fetch_chunk_or_fill(a, coords) do
    case fetch_chunk(a, coords) do
      {:error, :not_found} -> fill_chunk(a)
      other -> other
    end
  end

  defp read_part_whole(a, %{chunk: coords}), do: fetch_chunk_or_fill(a, coords)

  # Every part writes its box of the output into one native buffer as soon as its chunk is
  # decoded (in parallel, straight from the stored bytes when the NIF knows the pipeline); the
  # buffer then becomes the result without a copy. Memory: the output plus one chunk per task.
  defp assemble(a, sel, parts, opts) do
    with {:ok, buf} <- Native.outbuf_new(sel.shape, itemsize(a)),
         decoder = Pipeline.native_decoder(a.pipeline),
         :ok <-
           a
           |> run_parallel(parts, opts, &put_part(a, buf, decoder, &1))
           |> Result.each_ok(& &1),
         do: Native.outbuf_finish(buf)
  end

  defp put_part(a, buf, decoder, part) do
    key = chunk_key(a, part.chunk)
    box = {a.metadata.chunks, part.chunk_start, part.out_start, part.count}

    case Storage.get(a.storage, key) do
      {:ok, stored} ->
        put_stored(a, buf, decoder, stored, box, key)

      {:error, :not_found} ->
        Native.outbuf_fill(buf, a.fill_element, {part.out_start, part.count})

      error ->
        error
    end
  end

  defp put_stored(a, buf, nil, stored, box, key) do
    with {:ok, data} <- decode_chunk(a, stored, key),
         do: put_decoded(buf, data, :raw, box, key)
  end

  defp put_stored(_a, buf, decoder, stored, box, key),
    do: put_decoded(buf, stored, decoder, box, key)

  # Data that does not decode to the chunk's size, or not at all, is a corrupt chunk.
  defp put_decoded(buf, data, decoder, box, key) do
    case Native.outbuf_put(buf, data, decoder, box) do
      :ok -> :ok
      {:error, reason} -> {:error, {:corrupt_chunk, key, reason}}
    end
  end

  # -- writing ------------------------------------------------------------------------------

  # A chunk only partly covered is read, merged and stored holding its node-wide lock
  # (`ExZarr.Storage.Lock`), so that concurrent writes of other parts of it are kept; a whole
  # chunk is stored without reading, and without the lock.
  defp write_part(a, data, sel, part) do
    chunk_shape = a.metadata.chunks
    extent = Indexing.chunk_extent(a.metadata.shape, chunk_shape, part.chunk)
    whole? = part.count == extent and Tuple.to_list(part.chunk_start) |> Enum.all?(&(&1 == 0))
    piece = {data, sel.shape, part.out_start, part.chunk_start, part.count}

    write = fn ->
      with {:ok, base} <- write_base(a, part, whole?, data, sel),
           {:ok, chunk} <- merge(a, base, piece) do
        store_chunk(a, part.chunk, chunk)
      end
    end

    if whole?, do: write.(), else: Lock.run(a.storage, chunk_key(a, part.chunk), write)
  end

  # What the chunk starts from before the new data is copied in.
  # A whole chunk (not an edge chunk) whose elements are one run of the caller's data (the
  # whole selection, or rows of it) is that run as it is: a sub-binary, no copy.
  defp write_base(a, %{count: count} = part, true, data, sel) when count == a.metadata.chunks do
    case Indexing.contiguous(sel.shape, part.out_start, count) do
      {:ok, first, n} -> {:ok, {:as_is, binary_part(data, first * itemsize(a), n * itemsize(a))}}
      :error -> {:ok, {:fill, a.fill_element}}
    end
  end

  defp write_base(a, _part, true, _data, _sel), do: {:ok, {:fill, a.fill_element}}

  defp write_base(a, part, false, _data, _sel), do: fetch_chunk_or_fill(a, part.chunk)

  defp merge(_a, {:as_is, data}, _piece), do: {:ok, data}

  defp merge(a, base, piece),
    do: Native.copy_regions(a.metadata.chunks, itemsize(a), base, [piece])

  defp store_chunk(a, coords, data) do
    key = chunk_key(a, coords)

    if not a.write_empty_chunks and all_fill?(a, data) do
      Storage.delete(a.storage, key)
    else
      with {:ok, encoded} <- Pipeline.encode(a.pipeline, data),
           do: Storage.put(a.storage, key, encoded)
    end
  end

  defp all_fill?(a, data),
    do: fill_data?(a.metadata.dtype, a.metadata.fill_value, a.fill_element, data)

  @doc false
  # True when every element equals the fill value: NaN fill values compare equal to any NaN,
  # as in zarr-python; everything else bitwise. Shared with the sharding codec.
  @spec fill_data?(DType.t(), term(), binary(), binary()) :: boolean()
  def fill_data?(dtype, :nan, fill_element, data) when dtype in [:float16, :float32, :float64],
    do: Native.all_nan(data, byte_size(fill_element))

  def fill_data?(_dtype, _fill_value, fill_element, data),
    do: Native.all_equal(data, fill_element)

  # -- helpers ------------------------------------------------------------------------------

  defp check_var_len(%Metadata{dtype: dtype} = meta, pipeline) when DType.is_var_len(dtype),
    do: VarLen.check(meta, pipeline)

  defp check_var_len(_meta, _pipeline), do: :ok

  # Allocated by the NIF, so a chunk too large for memory is an error, not a VM abort.
  defp fill_chunk(a),
    do: Native.copy_regions(a.metadata.chunks, itemsize(a), {:fill, a.fill_element}, [])

  # Below this many chunk bytes in all, spawning tasks costs more than it saves.
  @parallel_threshold 512 * 1024

  @doc false
  # Runs `fun` on every item, in parallel when the chunks are large enough to pay for it; a
  # chunk that takes longer than `timeout:` is killed and reported as an error. Shared with
  # `ExZarr.Array.VarLen`.
  @spec run_parallel(t(), list(), keyword(), (term() -> term())) :: list()
  def run_parallel(a, [_, _ | _] = items, opts, fun) do
    remote? = Storage.io_concurrency(a.storage) != nil

    if remote? or length(items) * a.chunk_bytes >= @parallel_threshold do
      items
      |> Task.async_stream(fun,
        max_concurrency: concurrency(a, opts),
        ordered: false,
        timeout: Keyword.get(opts, :timeout, :infinity),
        on_timeout: :kill_task
      )
      |> Enum.map(fn
        {:ok, result} -> result
        {:exit, reason} -> {:error, {:chunk_task_failed, reason}}
      end)
    else
      Enum.map(items, fun)
    end
  end

  def run_parallel(_a, items, _opts, fun), do: Enum.map(items, fun)

  @doc false
  # Chunks in flight at once: `max_concurrency:`, else what the store prefers (remote stores
  # want many requests in flight), else two more than the dirty CPU schedulers. Chunks are
  # decoded and encoded there but read and stored on the dirty I/O schedulers: the extra
  # chunks keep the codecs busy while others wait on the store (measured on 2 cores: with one
  # extra chunk writes left the encoders idle 4-8% of the time, with two 1-3%; full reads of
  # 4096^2 float64 in 512^2 or 4096x128 zstd chunks took 20-30% less than with two in flight).
  @spec concurrency(t(), keyword()) :: pos_integer()
  def concurrency(a, opts) do
    Keyword.get(opts, :max_concurrency) || Storage.io_concurrency(a.storage) ||
      :erlang.system_info(:dirty_cpu_schedulers_online) + 2
  end

  defp check_chunk(a, coords) do
    if Indexing.valid_chunk?(a.metadata.shape, a.metadata.chunks, coords),
      do: :ok,
      else: {:error, {:invalid_chunk_coords, coords}}
  end

  @doc false
  # `:ok` when the caller's data has the byte size the selection needs. Shared with Sharding.
  @spec check_size(binary(), non_neg_integer()) :: :ok | {:error, term()}
  def check_size(data, expected) when byte_size(data) == expected, do: :ok

  def check_size(data, expected),
    do: {:error, {:wrong_data_size, expected: expected, got: byte_size(data)}}

  # Element data of the fixed-size types is one binary; say what came instead.
  defp not_binary(data) when is_list(data), do: "expected a binary of packed elements, got a list"

  defp not_binary(data),
    do: "expected a binary of packed elements, got #{inspect(data, limit: 3)}"

  defp itemsize(a), do: byte_size(a.fill_element)

  defp not_an_array(a), do: {:error, {:invalid_argument, __MODULE__, a}}

  defp join_key("", key), do: key
  defp join_key(prefix, key), do: prefix <> "/" <> key

  defp unwrap!({:ok, v}), do: v
  defp unwrap!(:ok), do: :ok
  defp unwrap!({:error, reason}), do: raise(ExZarr.Error, reason: reason)
end
