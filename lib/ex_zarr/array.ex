defmodule ExZarr.Array do
  @moduledoc """
  An open Zarr array: its metadata, its storage and the codec pipeline for its chunks.

  Data goes in and out as one binary of packed elements in C order, little-endian, whatever
  the stored order and byte order are; for the variable-length types `:string` and `:bytes`
  as a list of binaries in C order (see `ExZarr.Array.VarLen`).

      {:ok, a} = ExZarr.create(shape: {4, 4}, chunks: {2, 2}, dtype: :uint8, storage: :memory)
      :ok = ExZarr.Array.set_slice(a, :binary.copy(<<7>>, 4), start: {1, 1}, stop: {3, 3})
      {:ok, <<0, 7, 7, 0>>} = ExZarr.Array.get_slice(a, start: {1, 0}, stop: {2, 4})

  Chunks are decoded and encoded in parallel (`max_concurrency:`, default
  `System.schedulers_online/0`; `timeout:` per chunk, default `:infinity`). A chunk whose
  values all equal the fill value is not stored, and an existing one is deleted, unless the
  array was opened with `write_empty_chunks: true` (as in zarr-python).
  """

  alias ExZarr.{DType, Indexing, Metadata, Native, Result, Sharding, Storage}
  alias ExZarr.Array.VarLen
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
         :ok <- check_var_len(meta.dtype, pipeline) do
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
  Missing chunks read as the fill value.

      {:ok, bin} = ExZarr.Array.get_slice(array, start: {0, 0}, stop: {10, 100})
  """
  @spec get_slice(t(), keyword()) :: {:ok, binary()} | {:error, term()}
  def get_slice(a, opts \\ [])
  def get_slice(%__MODULE__{sharding: %Sharding{}} = a, opts), do: Sharding.get_slice(a, opts)

  def get_slice(%__MODULE__{metadata: %{dtype: dtype}} = a, opts) when DType.is_var_len(dtype),
    do: VarLen.get_slice(a, opts)

  def get_slice(%__MODULE__{} = a, opts) do
    with {:ok, sel} <- Indexing.selection(a.metadata.shape, opts) do
      parts = Indexing.plan(sel, a.metadata.chunks)

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
  @spec get_slice!(t(), keyword()) :: binary()
  def get_slice!(a, opts \\ []), do: unwrap!(get_slice(a, opts))

  @doc """
  Writes `data` (packed C-order little-endian elements of the box's shape) into the box
  `start:`..`stop:`. Chunks only partly covered are read, merged and rewritten.

      :ok = ExZarr.Array.set_slice(array, data, start: {0, 0}, stop: {10, 100})
  """
  @spec set_slice(t(), binary(), keyword()) :: :ok | {:error, term()}
  def set_slice(a, data, opts \\ [])

  def set_slice(%__MODULE__{metadata: %{dtype: dtype}} = a, data, opts)
      when DType.is_var_len(dtype),
      do: VarLen.set_slice(a, data, opts)

  def set_slice(%__MODULE__{sharding: %Sharding{}} = a, data, opts) when is_binary(data),
    do: Sharding.set_slice(a, data, opts)

  def set_slice(%__MODULE__{} = a, data, opts) when is_binary(data) do
    with {:ok, sel} <- Indexing.selection(a.metadata.shape, opts),
         :ok <- check_size(data, Indexing.product(sel.shape) * itemsize(a)) do
      sel
      |> Indexing.plan(a.metadata.chunks)
      |> then(&run_parallel(a, &1, opts, fn part -> write_part(a, data, sel, part) end))
      |> Result.each_ok(& &1)
    end
  end

  @doc "Like `set_slice/3` but raises on error."
  @spec set_slice!(t(), binary(), keyword()) :: :ok
  def set_slice!(a, data, opts \\ []), do: unwrap!(set_slice(a, data, opts))

  @doc """
  Reads and decodes one whole chunk (full chunk shape, edge chunks included).
  `{:error, :not_found}` when the chunk is not stored. For a sharded array a chunk is a shard;
  `level: :inner` reads one inner chunk by its coordinates in the inner chunk grid (see
  `ExZarr.Sharding`).
  """
  @spec read_chunk(t(), tuple(), keyword()) :: {:ok, binary()} | {:error, term()}
  def read_chunk(a, coords, opts \\ [])

  def read_chunk(%__MODULE__{metadata: %{dtype: dtype}} = a, coords, _opts)
      when DType.is_var_len(dtype),
      do: VarLen.read_chunk(a, coords)

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

  @doc """
  A stream of `{chunk_coords, binary}` for every chunk of the grid, decoded in parallel.
  Chunks that are not stored come as fill-value chunks.

  Options: `parallel:` (number of chunks decoded at once; default
  `System.schedulers_online/0`; `1` decodes in the consuming process with constant memory),
  `ordered:` (default `true`), `timeout:` (per chunk, default `:infinity`).
  Memory stays bounded by `parallel` x chunk size. For a sharded array the chunks are shards;
  `level: :inner` streams inner chunks instead (see `ExZarr.Sharding.inner_chunk_stream/2`).
  """
  @spec chunk_stream(t(), keyword()) :: Enumerable.t()
  def chunk_stream(a, opts \\ [])

  def chunk_stream(%__MODULE__{metadata: %{dtype: dtype}} = a, opts)
      when DType.is_var_len(dtype),
      do: stream_chunks(a, opts, &VarLen.read_chunk_or_fill/2)

  def chunk_stream(%__MODULE__{} = a, opts) do
    if Keyword.get(opts, :level) == :inner,
      do: Sharding.inner_chunk_stream(a, opts),
      else: stream_chunks(a, opts, &fetch_chunk_or_fill/2)
  end

  defp stream_chunks(a, opts, fetch) do
    coords = Indexing.chunk_coords(a.metadata.shape, a.metadata.chunks)
    read = fn c -> {c, unwrap!(fetch.(a, c))} end

    case Keyword.get(opts, :parallel, System.schedulers_online()) do
      1 ->
        Stream.map(coords, read)

      n ->
        coords
        |> Task.async_stream(read,
          max_concurrency: n,
          ordered: Keyword.get(opts, :ordered, true),
          timeout: Keyword.get(opts, :timeout, :infinity)
        )
        |> Stream.map(fn {:ok, result} -> result end)
    end
  end

  @doc "The storage key of a chunk (including the array's prefix)."
  @spec chunk_key(t(), tuple()) :: String.t()
  def chunk_key(%__MODULE__{metadata: meta, prefix: prefix}, coords),
    do: join_key(prefix, Metadata.chunk_key(meta, coords))

  # -- reading ------------------------------------------------------------------------------

  defp fetch_chunk(a, coords) do
    with {:ok, stored} <- Storage.get(a.storage, chunk_key(a, coords)) do
      case Pipeline.decode(a.pipeline, stored) do
        {:ok, data} -> {:ok, data}
        {:error, reason} -> {:error, {:corrupt_chunk, chunk_key(a, coords), reason}}
      end
    end
  end

  defp fetch_chunk_or_fill(a, coords) do
    case fetch_chunk(a, coords) do
      {:error, :not_found} -> {:ok, fill_chunk(a)}
      other -> other
    end
  end

  defp read_part_whole(a, %{chunk: coords}), do: fetch_chunk_or_fill(a, coords)

  defp assemble(a, sel, parts, opts) do
    decoded = run_parallel(a, parts, opts, &fetch_piece(a, &1))

    with {:ok, pieces} <- Result.map_ok(decoded, & &1) do
      Native.copy_regions(
        sel.shape,
        itemsize(a),
        {:fill, a.fill_element},
        Enum.reject(pieces, &is_nil/1)
      )
    end
  end

  defp fetch_piece(a, part) do
    case fetch_chunk(a, part.chunk) do
      {:ok, data} ->
        {:ok, {data, a.metadata.chunks, part.chunk_start, part.out_start, part.count}}

      {:error, :not_found} ->
        {:ok, nil}

      error ->
        error
    end
  end

  # -- writing ------------------------------------------------------------------------------

  defp write_part(a, data, sel, part) do
    chunk_shape = a.metadata.chunks
    extent = Indexing.chunk_extent(a.metadata.shape, chunk_shape, part.chunk)
    whole? = part.count == extent and Tuple.to_list(part.chunk_start) |> Enum.all?(&(&1 == 0))
    piece = {data, sel.shape, part.out_start, part.chunk_start, part.count}

    with {:ok, base} <- write_base(a, part, whole?, data, sel),
         {:ok, chunk} <- merge(a, base, piece) do
      store_chunk(a, part.chunk, chunk)
    end
  end

  # What the chunk starts from before the new data is copied in.
  defp write_base(a, _part, true, data, sel) do
    if sel.shape == a.metadata.chunks,
      do: {:ok, {:as_is, data}},
      else: {:ok, {:fill, a.fill_element}}
  end

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

  defp check_var_len(dtype, pipeline) when DType.is_var_len(dtype),
    do: VarLen.check(dtype, pipeline)

  defp check_var_len(_dtype, _pipeline), do: :ok

  defp fill_chunk(a), do: :binary.copy(a.fill_element, Indexing.product(a.metadata.chunks))

  # Below this many chunk bytes in all, spawning tasks costs more than it saves.
  @parallel_threshold 512 * 1024

  # A chunk that takes longer than `timeout:` is killed and reported as an error.
  defp run_parallel(a, [_, _ | _] = items, opts, fun)
       when length(items) * a.chunk_bytes >= @parallel_threshold do
    items
    |> Task.async_stream(fun,
      max_concurrency: Keyword.get(opts, :max_concurrency, System.schedulers_online()),
      ordered: false,
      timeout: Keyword.get(opts, :timeout, :infinity),
      on_timeout: :kill_task
    )
    |> Enum.map(fn
      {:ok, result} -> result
      {:exit, reason} -> {:error, {:chunk_task_failed, reason}}
    end)
  end

  defp run_parallel(_a, items, _opts, fun), do: Enum.map(items, fun)

  defp check_chunk(a, coords) do
    if Indexing.valid_chunk?(a.metadata.shape, a.metadata.chunks, coords),
      do: :ok,
      else: {:error, {:invalid_chunk_coords, coords}}
  end

  defp check_size(data, expected) when byte_size(data) == expected, do: :ok

  defp check_size(data, expected),
    do: {:error, {:wrong_data_size, expected: expected, got: byte_size(data)}}

  defp itemsize(a), do: byte_size(a.fill_element)

  defp join_key("", key), do: key
  defp join_key(prefix, key), do: prefix <> "/" <> key

  defp unwrap!({:ok, v}), do: v
  defp unwrap!(:ok), do: :ok
  defp unwrap!({:error, reason}), do: raise(ExZarr.Error, reason: reason)
end
