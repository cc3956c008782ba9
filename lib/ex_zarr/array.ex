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

  alias ExZarr.{DType, Indexing, Limits, Metadata, Native, Parallel, Result, Shape, Sharding}
  alias ExZarr.Storage
  alias ExZarr.Array.VarLen
  alias ExZarr.Storage.Keys
  alias ExZarr.Codec.Pipeline
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

  @doc """
  Builds an array handle from metadata and a storage (no I/O). `prefix` is the array's path
  inside the store ("" for the root).
  """
  @spec new(Metadata.t(), Storage.t(), keyword()) :: {:ok, t()} | {:error, term()}
  def new(%Metadata{} = meta, %Storage{} = storage, opts \\ []) do
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
         chunk_bytes: byte_size(fill_element) * Shape.product(meta.chunks),
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
  a read holds about one chunk per task in memory.

      {:ok, bin} = ExZarr.Array.get_slice(array, start: {0, 0}, stop: {10, 100})
  """
  @spec get_slice(t(), keyword()) :: {:ok, binary() | [binary()]} | {:error, term()}
  def get_slice(a, opts \\ [])

  def get_slice(%__MODULE__{metadata: %{dtype: dtype}} = a, opts) when DType.is_var_len(dtype),
    do: VarLen.get_slice(a, opts)

  def get_slice(%__MODULE__{sharding: %Sharding{}} = a, opts), do: Sharding.get_slice(a, opts)

  def get_slice(%__MODULE__{} = a, opts) do
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
  `start:`..`stop:`. Chunks only partly covered are read, merged and rewritten.

      :ok = ExZarr.Array.set_slice(array, data, start: {0, 0}, stop: {10, 100})
  """
  @spec set_slice(t(), binary() | [binary()], keyword()) :: :ok | {:error, term()}
  def set_slice(a, data, opts \\ [])

  def set_slice(%__MODULE__{metadata: %{dtype: dtype}} = a, data, opts)
      when DType.is_var_len(dtype),
      do: VarLen.set_slice(a, data, opts)

  def set_slice(%__MODULE__{sharding: %Sharding{}} = a, data, opts) when is_binary(data),
    do: Sharding.set_slice(a, data, opts)

  def set_slice(%__MODULE__{} = a, data, opts) when is_binary(data) do
    with {:ok, sel, parts} <- plan(a, opts),
         :ok <- check_size(data, Shape.product(sel.shape) * itemsize(a)) do
      a
      |> run_parallel(parts, opts, &write_part(a, data, sel, &1))
      |> Result.each_ok(& &1)
    end
  end

  def set_slice(%__MODULE__{}, data, _opts), do: {:error, {:invalid_data, not_binary(data)}}

  @doc "Like `set_slice/3` but raises on error."
  @spec set_slice!(t(), binary() | [binary()], keyword()) :: :ok
  def set_slice!(a, data, opts \\ []), do: unwrap!(set_slice(a, data, opts))

  @doc """
  Reads and decodes one whole chunk (full chunk shape, edge chunks included).
  `{:error, :not_found}` when the chunk is not stored. For a sharded array a chunk is a shard;
  `level: :inner` reads one inner chunk by its coordinates in the inner chunk grid (see
  `ExZarr.Sharding`).
  """
  @spec read_chunk(t(), tuple(), keyword()) :: {:ok, binary() | [binary()]} | {:error, term()}
  def read_chunk(a, coords, opts \\ [])

  def read_chunk(%__MODULE__{metadata: %{dtype: dtype}} = a, coords, opts)
      when DType.is_var_len(dtype),
      do: VarLen.read_chunk(a, coords, opts)

  def read_chunk(%__MODULE__{} = a, coords, opts) do
    if Keyword.get(opts, :level) == :inner,
      do: Sharding.read_inner_chunk(a, coords),
      else: with(:ok <- check_chunk(a, coords), do: fetch_chunk(a, coords))
  end

  @doc """
  Encodes and stores one whole chunk (`data` has the full chunk shape). A chunk equal to the
  fill value everywhere is deleted instead, unless `write_empty_chunks` is on.
  """
  @spec write_chunk(t(), tuple(), binary() | [binary()]) :: :ok | {:error, term()}
  def write_chunk(%__MODULE__{metadata: %{dtype: dtype}} = a, coords, data)
      when DType.is_var_len(dtype),
      do: VarLen.write_chunk(a, coords, data)

  def write_chunk(%__MODULE__{sharding: %Sharding{}} = a, coords, data) when is_binary(data),
    do: Sharding.write_chunk(a, coords, data)

  def write_chunk(%__MODULE__{} = a, coords, data) when is_binary(data) do
    with :ok <- check_chunk(a, coords),
         :ok <- check_size(data, a.chunk_bytes),
         do: store_chunk(a, coords, data)
  end

  def write_chunk(%__MODULE__{}, _coords, data), do: {:error, {:invalid_data, not_binary(data)}}

  @doc """
  A stream of `{chunk_coords, binary}` for every chunk of the grid, decoded in parallel.
  Chunks that are not stored come as fill-value chunks.

  Options: `parallel:` (number of chunks decoded at once; default two more than the dirty
  CPU schedulers, or `ExZarr.Storage.io_concurrency/1` for remote stores; `1` decodes in the
  consuming process with constant memory), `ordered:` (default `true`), `timeout:` (per
  chunk, default `:infinity`).
  Memory stays bounded by `parallel` x chunk size. For a sharded array the chunks are shards;
  `level: :inner` streams inner chunks instead (see `ExZarr.Sharding.inner_chunk_stream/2`).
  """
  @spec chunk_stream(t(), keyword()) :: Enumerable.t()
  def chunk_stream(a, opts \\ [])

  def chunk_stream(%__MODULE__{metadata: %{dtype: dtype}} = a, opts)
      when DType.is_var_len(dtype),
      do: stream_chunks(a, VarLen.stream_opts!(opts), &VarLen.read_chunk_or_fill/2)

  def chunk_stream(%__MODULE__{} = a, opts) do
    if Keyword.get(opts, :level) == :inner,
      do: Sharding.inner_chunk_stream(a, opts),
      else: stream_chunks(a, opts, &fetch_chunk_or_fill/2)
  end

  defp stream_chunks(a, opts, fetch) do
    coords = Indexing.chunk_coords(a.metadata.shape, a.metadata.chunks)
    stream_map(a, coords, opts, fn c -> {c, unwrap!(fetch.(a, c))} end)
  end

  @doc false
  # Maps `fun` over `items` lazily (`ExZarr.Parallel.stream/3`): `parallel:` tasks (default
  # the store's chunk concurrency), `ordered:` (default true), `timeout:`.
  @spec stream_map(t(), Enumerable.t(), keyword(), (term() -> term())) :: Enumerable.t()
  def stream_map(a, items, opts, fun) do
    n = Keyword.get_lazy(opts, :parallel, fn -> Parallel.concurrency(:chunks, a.storage) end)
    Parallel.stream(items, fun, Keyword.put(opts, :max_concurrency, n))
  end

  @doc """
  Validates a `start:`/`stop:` selection and plans it over the chunk grid (see
  `ExZarr.Indexing.plan/2`), refusing selections whose result or bookkeeping would not fit
  in memory (`ExZarr.Limits`).
  """
  @spec plan(t(), keyword()) ::
          {:ok, Indexing.selection(), [Indexing.part()]} | {:error, term()}
  def plan(%__MODULE__{metadata: meta} = a, opts) do
    with {:ok, sel} <- Indexing.selection(meta.shape, opts),
         :ok <- Limits.check(:selection, Shape.product(sel.shape) * itemsize(a)),
         :ok <- Limits.check_parts(Indexing.part_count(sel, meta.chunks)) do
      {:ok, sel, Indexing.plan(sel, meta.chunks)}
    end
  end

  @doc "The storage key of a chunk (including the array's prefix)."
  @spec chunk_key(t(), tuple()) :: String.t()
  def chunk_key(%__MODULE__{metadata: meta, prefix: prefix}, coords),
    do: Keys.join(prefix, Metadata.chunk_key(meta, coords))

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

  @doc """
  Changes the array's shape (same number of dimensions) and rewrites its metadata (one put of
  `zarr.json` / `.zarray`). Growing keeps all data; the new region reads as the fill value.
  Shrinking deletes the chunks wholly outside the new shape and clears the cut-off part of the
  chunks on the new border to the fill value, so that growing again later shows fill values
  rather than the old data (zarr-python 3.1 deletes the outside chunks but leaves the border
  chunks as they are). Options: `max_concurrency`, `timeout`. Returns the resized array.

      {:ok, array} = ExZarr.Array.resize(array, {200, 100})
  """
  @spec resize(t(), tuple(), keyword()) :: {:ok, t()} | {:error, term()}
  def resize(%__MODULE__{metadata: meta} = a, new_shape, opts \\ []) do
    with :ok <- check_new_shape(meta.shape, new_shape),
         :ok <- clear_border_chunks(a, new_shape, opts),
         :ok <- delete_outside_chunks(a, new_shape, opts) do
      meta = %{meta | shape: new_shape}

      with :ok <- ExZarr.Node.write_array_metadata(a.storage, a.prefix, meta),
           do: {:ok, %{a | metadata: meta}}
    end
  end

  @doc """
  Appends `data` (packed C-order little-endian elements) along `axis` (default 0; negative
  counts from the end): the array grows by as many slices as `data` holds and `data` is
  written into them. The other dimensions of `data` are the array's. Returns the grown array.

      # a {10, 3} array becomes {12, 3}
      {:ok, array} = ExZarr.Array.append(array, two_rows, 0)
  """
  @spec append(t(), binary(), integer(), keyword()) :: {:ok, t()} | {:error, term()}
  def append(%__MODULE__{metadata: meta} = a, data, axis \\ 0, opts \\ []) when is_binary(data) do
    shape = meta.shape
    ndim = tuple_size(shape)
    axis = if is_integer(axis) and axis < 0, do: axis + ndim, else: axis

    with :ok <- check_axis(axis, ndim),
         {:ok, count} <- appended_count(data, put_elem(shape, axis, 1), itemsize(a)),
         new_shape = put_elem(shape, axis, elem(shape, axis) + count),
         {:ok, a} <- resize(a, new_shape, opts),
         :ok <-
           append_write(
             a,
             data,
             count,
             put_elem(Shape.zeros(ndim), axis, elem(shape, axis)),
             opts
           ) do
      {:ok, a}
    end
  end

  defp append_write(_a, _data, 0, _start, _opts), do: :ok

  defp append_write(a, data, _count, start, opts),
    do: set_slice(a, data, Keyword.merge(opts, start: start, stop: a.metadata.shape))

  defp check_axis(axis, ndim) when is_integer(axis) and axis >= 0 and axis < ndim, do: :ok
  defp check_axis(axis, _ndim), do: {:error, {:invalid_axis, axis}}

  # How many slices along the axis `data` holds; `slice` is the shape of one slice.
  defp appended_count(data, slice, itemsize) do
    slice_bytes = Shape.product(slice) * itemsize

    cond do
      slice_bytes > 0 and rem(byte_size(data), slice_bytes) == 0 ->
        {:ok, div(byte_size(data), slice_bytes)}

      slice_bytes == 0 ->
        {:error, {:cannot_append, "the array has an empty dimension besides the axis"}}

      true ->
        {:error, {:wrong_data_size, expected_multiple_of: slice_bytes, got: byte_size(data)}}
    end
  end

  defp check_new_shape(old, new) when is_tuple(new) and tuple_size(new) == tuple_size(old) do
    if Enum.all?(Tuple.to_list(new), &(is_integer(&1) and &1 >= 0)),
      do: :ok,
      else: {:error, {:invalid_shape, new}}
  end

  defp check_new_shape(_old, new), do: {:error, {:invalid_shape, new}}

  # Border chunks of the new shape along each shrunk dimension that cuts through a chunk:
  # their part beyond the new shape is reset to the fill value.
  defp clear_border_chunks(a, new_shape, opts) do
    %{shape: old, chunks: chunks} = a.metadata
    old_grid = Indexing.grid_shape(old, chunks)
    new_grid = Indexing.grid_shape(new_shape, chunks)
    ndim = tuple_size(old)

    cut =
      for d <- 0..(ndim - 1)//1,
          elem(new_shape, d) < elem(old, d) and rem(elem(new_shape, d), elem(chunks, d)) != 0,
          do: {d, div(elem(new_shape, d), elem(chunks, d))}

    # For the k-th cut dimension, the chunks at its border index that are not on the border
    # of an earlier cut dimension (so that no chunk is visited twice).
    cut
    |> Enum.with_index()
    |> Stream.flat_map(fn {{d, border}, k} ->
      earlier = Map.new(Enum.take(cut, k))

      0..(ndim - 1)//1
      |> Enum.map(fn j ->
        upto = min(elem(old_grid, j), elem(new_grid, j)) - 1

        cond do
          j == d -> [border]
          Map.has_key?(earlier, j) -> Enum.reject(0..upto//1, &(&1 == earlier[j]))
          true -> 0..upto//1
        end
      end)
      |> coords_product()
    end)
    |> Enum.to_list()
    |> then(&run_parallel(a, &1, opts, fn coords -> clear_outside(a, coords, new_shape) end))
    |> Result.each_ok(& &1)
  end

  defp clear_outside(a, coords, new_shape) do
    chunks = a.metadata.chunks

    case fetch_chunk(a, coords) do
      {:ok, data} ->
        # the part of the chunk inside the new shape
        keep =
          Shape.zip_with(
            chunks,
            Shape.sub(new_shape, Shape.mul(coords, chunks)),
            &min(&1, max(&2, 0))
          )

        zero = Shape.zeros(tuple_size(chunks))

        with {:ok, chunk} <-
               Native.copy_regions(chunks, itemsize(a), {:fill, a.fill_element}, [
                 {data, chunks, zero, zero, keep}
               ]),
             do: write_chunk(a, coords, chunk)

      {:error, :not_found} ->
        :ok

      error ->
        error
    end
  end

  # Chunks of the old grid with an index beyond the new grid in some dimension.
  defp delete_outside_chunks(a, new_shape, opts) do
    %{shape: old, chunks: chunks} = a.metadata
    old_grid = Indexing.grid_shape(old, chunks)
    new_grid = Indexing.grid_shape(new_shape, chunks)
    ndim = tuple_size(old)
    shrunk = for d <- 0..(ndim - 1)//1, elem(new_grid, d) < elem(old_grid, d), do: d

    # For the k-th shrunk dimension: indices beyond the new grid there, inside the new grid in
    # earlier shrunk dimensions (those were covered already), anything in the others.
    shrunk
    |> Enum.with_index()
    |> Stream.flat_map(fn {d, k} ->
      earlier = Enum.take(shrunk, k)

      0..(ndim - 1)//1
      |> Enum.map(fn j ->
        cond do
          j == d -> elem(new_grid, j)..(elem(old_grid, j) - 1)//1
          j in earlier -> 0..(elem(new_grid, j) - 1)//1
          true -> 0..(elem(old_grid, j) - 1)//1
        end
      end)
      |> coords_product()
    end)
    |> Enum.to_list()
    |> then(
      &run_parallel(a, &1, opts, fn coords -> Storage.delete(a.storage, chunk_key(a, coords)) end)
    )
    |> Result.each_ok(& &1)
  end

  # All index tuples of the product of the ranges, lazily, in C order.
  defp coords_product(ranges) do
    Enum.reduce(Enum.reverse(ranges), [[]], fn range, tails ->
      Stream.flat_map(range, fn i -> Stream.map(tails, &[i | &1]) end)
    end)
    |> Stream.map(&List.to_tuple/1)
  end

  # -- reading ------------------------------------------------------------------------------

  defp fetch_chunk(a, coords) do
    key = chunk_key(a, coords)
    with {:ok, stored} <- Storage.get(a.storage, key), do: decode_chunk(a, stored, key)
  end

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

  defp write_part(a, data, sel, part) do
    chunk_shape = a.metadata.chunks
    extent = Indexing.chunk_extent(a.metadata.shape, chunk_shape, part.chunk)
    whole? = part.count == extent and Shape.zero?(part.chunk_start)
    piece = {data, sel.shape, part.out_start, part.chunk_start, part.count}

    with {:ok, base} <- write_base(a, part, whole?, data, sel),
         {:ok, chunk} <- merge(a, base, piece) do
      store_chunk(a, part.chunk, chunk)
    end
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

  defp run_parallel(a, items, opts, fun),
    do: Parallel.chunks(items, fun, a.storage, a.chunk_bytes, opts)

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

  defp unwrap!({:ok, v}), do: v
  defp unwrap!(:ok), do: :ok
  defp unwrap!({:error, reason}), do: raise(ExZarr.Error, reason: reason)
end
