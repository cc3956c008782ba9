defmodule ExZarr.Codecs.ShardingIndexed do
  @moduledoc """
  The v3 `sharding_indexed` codec (array->bytes): one stored object (a shard) holds a grid of
  inner chunks, each encoded with its own codec pipeline, plus an index saying where each one is.

  Configuration (as in `zarr.json`):

    * `chunk_shape`: the inner chunk shape; it divides the shard shape
    * `codecs`: the inner chunks' pipeline (may itself end in `sharding_indexed`: nested sharding)
    * `index_codecs`: the index's pipeline; it must have a fixed encoded size (default
      `bytes` little-endian + `crc32c`, as zarr-python writes)
    * `index_location`: `"end"` (default) or `"start"`

  The index is a `uint64` array of shape `chunks_per_shard ++ {2}` in C order: an
  `(offset, nbytes)` pair per inner chunk, offsets absolute within the shard, `2^64-1` twice for
  an inner chunk that is not stored. Inner chunks whose elements all equal the fill value (NaN
  matching NaN) are not stored. Inner chunks are laid out in Morton order, like zarr-python, so
  the index is byte-identical to the one zarr-python writes for the same encoded chunks. The
  order is computed for the chunks being stored when a shard is built (bit interleaving of
  their coordinates), so that opening an array costs the same whatever its inner chunk count.

  ## Reading in part (`decode_partial/5`)

  A box of a shard costs the shard's index (one ranged read of its last bytes, or first ones
  with `index_location: "start"`) and one multi-range request for the inner chunks the box
  needs; inner chunks stored less than `coalesce_gap:` bytes apart are fetched as one range
  (default 32 KiB: with one request per shard, a range costs little more than its bytes; see
  "Measured defaults" in bench/README.md; object stores gain from a larger gap). When the
  inner pipeline is `bytes` (little-endian) plus at most one compressor, the inner chunks of
  a shard are decoded straight into the output by one native call on all cores as soon as
  the shard's bytes are read (`ExZarr.Codec.Pipeline.put_batch/5`): no binary per inner chunk,
  and a shard's bytes are dropped once decoded, not kept until the end of the read.
  A store that cannot serve byte ranges has each touched shard read once, whole.

  The index and the inner chunks of a shard are read from one generation of it (see
  "Generations" in `ExZarr.Storage`): inner chunks are fetched on the condition that the shard
  is still at the generation the index came from. Indexes are cached with their generation,
  per array handle (`ExZarr.Sharding.IndexCache`) or in the array's `ExZarr.ChunkCache`, so a
  read usually costs one request; when another handle or program has rewritten the shard in
  between, the stale index is dropped and the index and chunks are read again (up to 8
  times, then `{:error, {:shard_changed, key}}`). A read thus returns, for every element, what
  was stored there at some point, never the bytes of another inner chunk. A cached index that
  leaves nothing to read (all the touched inner chunks missing) is not trusted: the index is
  read again. On a store without generations indexes are not cached per handle and reads are
  not checked.

  ## Writing in part (`encode_partial/5`)

  A write covering a whole shard encodes its inner chunks in parallel and stores the shard
  once, without reading it; a shard of fill values only is deleted. A write covering part of
  a shard is one `ExZarr.Storage.update/4` of it (a read-modify-write on its generation,
  retried on conflict, under the node-wide lock; see "Concurrent writers" in
  `ExZarr.Array`): it reads the shard, decodes only the inner chunks the write partly
  covers, keeps the other inner chunks' encoded bytes as they are, and stores the new shard,
  index and inner chunks together, on the condition that nobody rewrote it meanwhile. A
  shard it leaves with no inner chunk is deleted on the generation read (see
  `ExZarr.Storage.Update`). Every cache then forgets the shard's index.

  `encode/2` and `decode/2` work on whole shards (`ExZarr.Array.read_chunk/3`, nested
  sharding).

      spec = %{shape: {4, 4}, dtype: :uint8, fill_value: 0, decoded_size: nil}
      config = %{"chunk_shape" => [2, 2], "codecs" => [%{"name" => "bytes"}],
                 "index_codecs" => [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}]}
      {:ok, s} = ExZarr.Codecs.ShardingIndexed.init(config, spec)
      {:ok, shard} = ExZarr.Codecs.ShardingIndexed.encode(:binary.copy(<<1>>, 16), s)
      {:ok, data} = ExZarr.Codecs.ShardingIndexed.decode(IO.iodata_to_binary(shard), s)
  """
  @behaviour ExZarr.Codec

  alias ExZarr.{ChunkCache, DType, Indexing, Limits, Native, Parallel, Result, Shape, Storage}
  alias ExZarr.Indexing.Selection
  alias ExZarr.Codec.{Chunk, Pipeline}
  alias ExZarr.Sharding.IndexCache
  alias ExZarr.Storage.Keys

  @coalesce_gap 32 * 1024
  # Reads of a shard, with a fresh index each, before a shard rewritten during every one of
  # them gives up.
  @attempts 8

  @empty 0xFFFFFFFFFFFFFFFF
  @empty_entry <<@empty::64-little, @empty::64-little>>

  @enforce_keys [:chunk_shape, :shard_shape, :grid, :count, :inner, :index]
  defstruct [
    :chunk_shape,
    :shard_shape,
    :grid,
    :count,
    :inner,
    :index,
    :index_size,
    :location,
    :config,
    :dtype,
    :fill_value,
    :fill_element,
    :ref,
    :cache
  ]

  @type t :: %__MODULE__{
          chunk_shape: tuple(),
          shard_shape: tuple(),
          grid: tuple(),
          count: pos_integer(),
          inner: Pipeline.t(),
          index: Pipeline.t(),
          index_size: pos_integer(),
          location: :start | :end,
          config: map(),
          dtype: DType.t(),
          fill_value: term(),
          fill_element: binary(),
          ref: reference(),
          cache: IndexCache.table()
        }

  @typedoc "A decoded index: `16 * count` bytes of little-endian `(offset, nbytes)` pairs in C order."
  @type index :: binary()

  @impl true
  def name, do: "sharding_indexed"

  @impl true
  def kind, do: :array_to_bytes

  @impl true
  def config_keys, do: ~w(chunk_shape codecs index_codecs index_location)

  defp default_index_codecs,
    do: [%{"name" => "bytes", "configuration" => %{"endian" => "little"}}, %{"name" => "crc32c"}]

  @impl true
  def init(config, %{shape: shard_shape, dtype: dtype, fill_value: fill_value}) do
    with {:ok, chunk_shape} <- chunk_shape(config, shard_shape),
         {:ok, codecs} <- codec_list(config, "codecs", nil),
         {:ok, index_codecs} <- codec_list(config, "index_codecs", default_index_codecs()),
         {:ok, location} <- location(config),
         grid = Indexing.grid_shape(shard_shape, chunk_shape),
         :ok <- Limits.check(:shard_index, 16 * Shape.product(grid)) do
      inner_spec = %{shape: chunk_shape, dtype: dtype, fill_value: fill_value, decoded_size: nil}

      index_spec = %{
        shape: Tuple.append(grid, 2),
        dtype: :uint64,
        fill_value: @empty,
        decoded_size: nil
      }

      with {:ok, inner} <- Pipeline.new(codecs, inner_spec),
           {:ok, index} <- Pipeline.new(index_codecs, index_spec),
           {:ok, index_size} <- fixed_size(index, 16 * Shape.product(grid)) do
        {:ok,
         %__MODULE__{
           chunk_shape: chunk_shape,
           shard_shape: shard_shape,
           grid: grid,
           count: Shape.product(grid),
           inner: inner,
           index: index,
           index_size: index_size,
           location: location,
           config: %{
             "chunk_shape" => Tuple.to_list(chunk_shape),
             "codecs" => Enum.map(Pipeline.specs(inner), &ExZarr.Codec.to_json/1),
             "index_codecs" => Enum.map(Pipeline.specs(index), &ExZarr.Codec.to_json/1),
             "index_location" => Atom.to_string(location)
           },
           dtype: dtype,
           fill_value: fill_value,
           fill_element: DType.fill_element(dtype, fill_value),
           ref: make_ref(),
           cache: IndexCache.table()
         }}
      end
    end
  end

  def init(config, spec), do: {:error, {:invalid_sharding_config, config, spec}}

  defp chunk_shape(%{"chunk_shape" => list}, shard_shape)
       when is_list(list) and length(list) == tuple_size(shard_shape) do
    chunk_shape = List.to_tuple(list)

    divides? =
      Enum.all?(Enum.zip(list, Tuple.to_list(shard_shape)), fn {c, s} ->
        is_integer(c) and c > 0 and rem(s, c) == 0
      end)

    if divides?,
      do: {:ok, chunk_shape},
      else: {:error, {:chunk_shape_does_not_divide_shard, chunk: list, shard: shard_shape}}
  end

  defp chunk_shape(config, shard_shape),
    do:
      {:error,
       {:invalid_sharding_config,
        "chunk_shape must list #{tuple_size(shard_shape)} positive integers, got " <>
          inspect(Map.get(config, "chunk_shape"))}}

  defp codec_list(config, key, default) do
    case Map.get(config, key, default) do
      [_ | _] = list ->
        Result.map_ok(list, fn codec ->
          with :error <- ExZarr.Codec.normalize_spec(codec),
               do: {:error, {:invalid_sharding_config, "#{key}: #{inspect(codec)}"}}
        end)

      other ->
        {:error,
         {:invalid_sharding_config, "#{key} must be a non-empty list, got #{inspect(other)}"}}
    end
  end

  defp location(config) do
    case Map.get(config, "index_location", "end") do
      "end" -> {:ok, :end}
      "start" -> {:ok, :start}
      other -> {:error, {:invalid_sharding_config, "index_location #{inspect(other)}"}}
    end
  end

  # The index pipeline must produce a fixed number of bytes, known before reading a shard.
  defp fixed_size(%Pipeline{} = p, size) do
    stages = p.array_to_array ++ [p.array_to_bytes | p.bytes_to_bytes]

    Enum.reduce_while(stages, {:ok, size}, fn {module, state}, {:ok, size} ->
      with true <- function_exported?(module, :encoded_size, 2),
           n when is_integer(n) <- module.encoded_size(size, state) do
        {:cont, {:ok, n}}
      else
        _ -> {:halt, {:error, {:variable_size_index_codec, module.name()}}}
      end
    end)
  end

  # The Morton code of inner chunk `coords` as zarr-python orders chunks: the bits of the
  # coordinates interleaved, lowest first, each axis with as many bits as it needs (an axis
  # out of bits drops out), so that codes of a non-power-of-two grid stay dense.
  defp morton_code(coords, bits, max_bits) do
    pairs = Enum.zip(coords, bits)

    {code, _} =
      Enum.reduce(0..(max_bits - 1)//1, {0, 0}, fn bit, acc ->
        Enum.reduce(pairs, acc, fn {c, b}, {code, out} ->
          if bit < b,
            do:
              {Bitwise.bor(code, Bitwise.bsl(Bitwise.band(Bitwise.bsr(c, bit), 1), out)), out + 1},
            else: {code, out}
        end)
      end)

    code
  end

  # The bits each axis of the inner chunk grid needs.
  defp axis_bits(grid), do: grid |> Tuple.to_list() |> Enum.map(&bit_length(&1 - 1))

  defp bit_length(0), do: 0
  defp bit_length(n), do: 1 + bit_length(Bitwise.bsr(n, 1))

  # -- the index --------------------------------------------------------------------------

  @doc "The byte range of a shard that holds its index (`{:suffix, n}` or `{0, n}`)."
  @spec index_range(t()) :: ExZarr.Storage.range()
  def index_range(%__MODULE__{location: :end, index_size: n}), do: {:suffix, n}
  def index_range(%__MODULE__{location: :start, index_size: n}), do: {0, n}

  @doc """
  The encoded index of a whole shard (the bytes at `index_range/1`).
  """
  @spec index_bytes(t(), binary()) :: {:ok, binary()} | {:error, term()}
  def index_bytes(%__MODULE__{index_size: n}, shard) when byte_size(shard) < n,
    do:
      {:error,
       {:corrupt_shard_index,
        "shard of #{byte_size(shard)} bytes is shorter than its #{n}-byte index"}}

  def index_bytes(%__MODULE__{location: :end, index_size: n}, shard),
    do: {:ok, binary_part(shard, byte_size(shard) - n, n)}

  def index_bytes(%__MODULE__{location: :start, index_size: n}, shard),
    do: {:ok, binary_part(shard, 0, n)}

  @doc """
  Decodes an encoded index and checks its codecs (e.g. the crc32c checksum). With the
  `shard_size` of a whole shard read, also checks every pair: empty (both `2^64-1`) or a
  range inside the shard's data, not overlapping another; then `entry/2` reads them. Without
  it (only the index was read), pairs are checked one by one as they are used, by `entry/3`:
  a read costs the inner chunks it touches, not the shard's inner chunk count.
  """
  @spec decode_index(t(), binary(), non_neg_integer() | nil) :: {:ok, index()} | {:error, term()}
  def decode_index(%__MODULE__{index_size: n} = s, bytes, shard_size) do
    cond do
      byte_size(bytes) != n ->
        corrupt("index is #{byte_size(bytes)} bytes, expected #{n}")

      true ->
        case Pipeline.decode(s.index, bytes) do
          {:ok, index} when byte_size(index) == 16 * s.count and shard_size == nil ->
            {:ok, index}

          {:ok, index} when byte_size(index) == 16 * s.count ->
            validate_index(s, index, shard_size)

          {:ok, _} ->
            corrupt("index decodes to the wrong size")

          {:error, reason} ->
            corrupt({:index_codecs, reason})
        end
    end
  end

  defp validate_index(s, index, shard_size) do
    {lo, hi} =
      case s.location do
        :start -> {s.index_size, shard_size}
        :end -> {0, shard_size - s.index_size}
      end

    ranges = for {_i, offset, nbytes} <- stored(index), do: {offset, nbytes}

    cond do
      Enum.any?(ranges, fn {o, n} -> o == @empty or n == @empty end) ->
        corrupt("half-empty (offset, nbytes) pair")

      Enum.any?(ranges, fn {o, n} -> o < lo or (hi != nil and o + n > hi) end) ->
        corrupt("inner chunk range outside the shard's data")

      overlapping?(Enum.sort(ranges)) ->
        corrupt("overlapping inner chunk ranges")

      true ->
        {:ok, index}
    end
  end

  defp overlapping?([{o1, n1}, {o2, _} = next | rest]),
    do: o1 + n1 > o2 or overlapping?([next | rest])

  defp overlapping?(_), do: false

  defp corrupt(why), do: {:error, {:corrupt_shard_index, why}}

  @doc """
  The `{offset, nbytes}` of inner chunk `i` (C-order linear index), or `:empty`, in an index
  checked whole by `decode_index/3` with the shard's size.
  """
  @spec entry(index(), non_neg_integer()) :: {non_neg_integer(), non_neg_integer()} | :empty
  def entry(index, i) do
    case binary_part(index, 16 * i, 16) do
      @empty_entry -> :empty
      <<offset::64-little, nbytes::64-little>> -> {offset, nbytes}
    end
  end

  @doc """
  The inner chunks an index says are stored, `{i, offset, nbytes}` in C order (one pass over
  the index, skipping empty entries).
  """
  @spec stored(index()) :: [{non_neg_integer(), non_neg_integer(), non_neg_integer()}]
  def stored(index), do: stored(index, 0, [])

  defp stored(<<@empty::64-little, @empty::64-little, rest::binary>>, i, acc),
    do: stored(rest, i + 1, acc)

  defp stored(<<offset::64-little, nbytes::64-little, rest::binary>>, i, acc),
    do: stored(rest, i + 1, [{i, offset, nbytes} | acc])

  defp stored(<<>>, _i, acc), do: Enum.reverse(acc)

  @doc """
  `entry/2` for an index decoded without the shard's size: also checks the pair (not
  half-empty, not inside the index). Whether it ends inside the shard shows when it is read.
  """
  @spec entry(t(), index(), non_neg_integer()) ::
          {non_neg_integer(), non_neg_integer()} | :empty | {:error, term()}
  def entry(%__MODULE__{} = s, index, i) do
    lo = if s.location == :start, do: s.index_size, else: 0

    case entry(index, i) do
      {offset, nbytes} when offset == @empty or nbytes == @empty ->
        corrupt("half-empty (offset, nbytes) pair")

      {offset, _nbytes} when offset < lo ->
        corrupt("inner chunk range outside the shard's data")

      other ->
        other
    end
  end

  @doc "An index with no stored inner chunk."
  @spec empty_index(t()) :: index()
  def empty_index(%__MODULE__{count: count}), do: :binary.copy(@empty_entry, count)

  @doc "The C-order linear index of inner chunk `coords` within the shard."
  @spec linear(t(), tuple()) :: non_neg_integer()
  def linear(%__MODULE__{grid: grid}, coords), do: Shape.ravel(coords, grid)

  @doc "The inner chunk coordinates (within the shard) of C-order linear index `i`."
  @spec coords(t(), non_neg_integer()) :: tuple()
  def coords(%__MODULE__{grid: grid}, i), do: Shape.unravel(i, grid)

  # -- whole shards -----------------------------------------------------------------------

  @doc """
  `:ok` when a whole shard can be decoded or encoded at once (`ExZarr.Array.read_chunk/3`,
  `ExZarr.Array.write_chunk/3`): its elements fit in memory and so does the bookkeeping of its
  inner chunks (`ExZarr.Limits`), whereas opening the array and reading or writing parts of a
  shard cost only what they touch.
  """
  @impl true
  def check_whole(%__MODULE__{} = s) do
    count = Shape.product(s.shard_shape)

    with :ok <- Limits.check_elements(:chunk, count, DType.itemsize(s.dtype)),
         do: Limits.check_parts(s.count)
  end

  @impl true
  def encode(data, %__MODULE__{} = s) do
    with :ok <- check_whole(s), do: encode_whole(data, s)
  end

  defp encode_whole(data, s) do
    data = if s.inner.layout == :items, do: List.to_tuple(data), else: IO.iodata_to_binary(data)

    items =
      for i <- 0..(s.count - 1)//1,
          do: {i, nil, [{data, s.shard_shape, origin(s, i), zeros(s), s.chunk_shape}]}

    with {:ok, encoded} <- encode_chunks(s, items, false),
         {:ok, {shard, _index, _count}} <- build_shard(s, encoded),
         do: {:ok, shard}
  end

  @impl true
  def decode(shard, %__MODULE__{} = s) do
    with :ok <- check_whole(s),
         {:ok, bytes} <- index_bytes(s, shard),
         {:ok, index} <- decode_index(s, bytes, byte_size(shard)) do
      placed =
        for i <- 0..(s.count - 1)//1,
            do: {{zeros(s), origin(s, i), s.chunk_shape}, stored_bytes(shard, index, i)}

      decode_whole(s, placed)
    end
  end

  # A whole shard's data: one native call when the inner chunks decode natively, else through
  # an output of the inner pipeline.
  defp decode_whole(s, placed) do
    case {s.inner.layout, Pipeline.native_decoder(s.inner)} do
      {:packed, codec} when is_atom(codec) and codec != nil ->
        itemsize = byte_size(s.fill_element)
        batch = batch(placed)
        threads = System.schedulers_online()

        s.shard_shape
        |> Native.decode_into(itemsize, s.fill_element, codec, s.chunk_shape, batch, threads)
        |> inner_error()

      {layout, _} ->
        with {:ok, out} <- Pipeline.output(s.inner, s.shard_shape),
             {:ok, pieces} <- place(s, placed, out, []),
             {:ok, data} <- Pipeline.finish(out, pieces) do
          {:ok, if(layout == :items, do: List.to_tuple(data), else: data)}
        end
    end
  end

  # -- reading in part ----------------------------------------------------------------------

  @impl true
  def inner_chunk_shape(%__MODULE__{chunk_shape: chunk_shape}), do: chunk_shape

  @impl true
  def decode_partial(%__MODULE__{} = s, chunk, {chunk_start, out_start, count}, out, opts) do
    inner = Selection.inner_boxes(chunk_start, out_start, count, s.shard_shape, levels(s))

    with {:ok, placed} <- fetch_inner(s, chunk, inner, opts),
         {:ok, pieces} <- place(s, placed, out, opts) do
      {:ok, pieces}
    end
    |> with_key(chunk.key)
  end

  defp box_selection(start, count),
    do: %{start: start, stop: Shape.add(start, count), shape: count}

  # The chunk grids a selection of a shard is planned over: the inner chunks, then theirs.
  defp levels(s), do: [s.chunk_shape | Pipeline.inner_levels(s.inner)]

  # `{tag, stored_bytes | {:decoded, data} | nil}` for the inner chunks `{i, tag}` of the
  # shard, all from one generation of it: nil for a chunk not stored; with a chunk cache,
  # the inner chunks it holds come decoded and the others are decoded and cached.
  defp fetch_inner(s, chunk, inner, opts) do
    if Chunk.ranges?(chunk) do
      fetch_ranges(s, chunk, inner, opts)
    else
      with {:ok, shard, index} <- load_shard(s, chunk),
           do: {:ok, for({i, tag} <- inner, do: {tag, stored_bytes(shard, index, i)})}
    end
  end

  # With a cached index, the inner chunks are read on the condition that the shard is still
  # at the index's generation; when it is not (another handle or program rewrote it), or when
  # the cached index leaves nothing to read (which would prove nothing), the index is read
  # again, and the chunks with it, up to @attempts times.
  defp fetch_ranges(s, chunk, inner, opts) do
    store = index_store(s, chunk, opts)

    with {:ok, {index, generation}} <- cached_index(store, chunk),
         {:ok, plan} <- plan_inner(s, chunk, store, index, generation, inner, opts),
         true <- trusted?(store, plan),
         {:ok, fetched} <- run_plan(s, chunk, store, plan, generation) do
      {:ok, fetched}
    else
      {:error, reason} when elem(reason, 0) not in [:shard_changed, :corrupt_shard_index] ->
        {:error, reason}

      _stale_missing_or_nothing_to_read ->
        forget_index(store, chunk)
        fetch_fresh(s, chunk, store, inner, opts, 1)
    end
  end

  defp fetch_fresh(s, chunk, store, inner, opts, attempt) do
    with {:ok, {index, generation}} <- fresh_index(s, chunk, store),
         {:ok, plan} <- plan_inner(s, chunk, store, index, generation, inner, opts) do
      case run_plan(s, chunk, store, plan, generation) do
        {:error, {:shard_changed, _}} when attempt < @attempts ->
          forget_index(store, chunk)
          fetch_fresh(s, chunk, store, inner, opts, attempt + 1)

        result ->
          result
      end
    end
  end

  # What a read of `inner` needs: the inner chunks a chunk cache holds (decoded, read from
  # `generation`), the groups of nearby stored ones to fetch, and the ones not stored.
  defp plan_inner(s, chunk, store, index, generation, inner, opts) do
    cache = with({:chunk_cache, cache} <- store, do: cache, else: (_ -> nil))
    gap = Keyword.get(opts, :coalesce_gap, @coalesce_gap)

    # one pass, the three lists built reversed
    planned =
      Enum.reduce_while(inner, {[], [], []}, fn {i, tag}, {hits, reads, fills} ->
        case index && entry(s, index, i) do
          {:error, _} = error ->
            {:halt, error}

          {offset, nbytes} ->
            case cache && ChunkCache.fetch_at(cache, chunk, {:inner, i}, generation) do
              {:ok, data} -> {:cont, {[{tag, {:decoded, data}} | hits], reads, fills}}
              _ -> {:cont, {hits, [{offset, nbytes, {i, tag}} | reads], fills}}
            end

          _empty_or_no_shard ->
            {:cont, {hits, reads, [{tag, nil} | fills]}}
        end
      end)

    case planned do
      {:error, _} = error ->
        error

      {hits, reads, fills} ->
        {:ok, {Enum.reverse(hits), coalesce(Enum.reverse(reads), gap), Enum.reverse(fills)}}
    end
  end

  # A plan from a cached index proves the index current only when it reads something (a
  # chunk cache's own entries are trusted as its `recheck:` says).
  defp trusted?({:chunk_cache, _}, _plan), do: true
  defp trusted?(_store, {_hits, groups, _fills}), do: groups != []

  defp run_plan(s, chunk, store, {hits, groups, fills}, generation) do
    cache = with({:chunk_cache, cache} <- store, do: cache, else: (_ -> nil))

    with {:ok, fetched} <- fetch_cached(s, chunk, cache, generation, groups),
         do: {:ok, hits ++ fetched ++ fills}
  end

  # The grouped inner chunks `{i, tag}`, read from `generation` of the shard; with a cache,
  # decoded and cached.
  defp fetch_cached(_s, chunk, nil, generation, groups) do
    with {:ok, fetched} <- fetch_groups(chunk, groups, generation),
         do: {:ok, for({{_i, tag}, bytes} <- fetched, do: {tag, bytes})}
  end

  defp fetch_cached(s, chunk, cache, generation, groups) do
    tokens =
      for {_, _, members} <- groups,
          {_, _, {i, _}} <- members,
          into: %{},
          do: {i, ChunkCache.register(cache, chunk, {:inner, i})}

    with {:ok, fetched} <- fetch_groups(chunk, groups, generation),
         {:ok, decoded} <- decode_chunks(s, fetched) do
      {:ok,
       for {{i, tag}, data} <- decoded do
         # (a raw inner chunk is part of the bytes read: the cache keeps a copy of its own)
         data = owned(data)
         size = Pipeline.data_size(s.inner, data)
         ChunkCache.fill(cache, chunk, {:inner, i}, data, size, generation, tokens[i])
         {tag, {:decoded, data}}
       end}
    end
  end

  defp owned({:layout, layout}), do: {:layout, Keys.owned(layout)}
  defp owned(data) when is_binary(data), do: Keys.owned(data)
  defp owned(items), do: items

  defp stored_bytes(nil, _index, _i), do: nil

  defp stored_bytes(shard, index, i) do
    case entry(index, i) do
      :empty -> nil
      {offset, nbytes} -> binary_part(shard, offset, nbytes)
    end
  end

  # Places inner chunks into `out`: stored chunks that decode natively in one native batch
  # as soon as the shard's bytes are read (so they are dropped then, not held with every other
  # shard's until the end of the read: memory the VM would fault in afresh), others decoded in
  # parallel first, then put.
  defp place(s, placed, {:packed, _buf} = out, _opts) do
    case Pipeline.native_decoder(s.inner) do
      codec when is_atom(codec) and codec != nil ->
        if Enum.any?(placed, &match?({_, {:decoded, _}}, &1)),
          do: put_decoded(s, placed, out),
          else:
            out
            |> Pipeline.put_batch(codec, batch_shape(s, placed), s.fill_element, batch(placed))
            |> inner_error()

      _ ->
        put_decoded(s, placed, out)
    end
  end

  defp place(s, placed, out, _opts), do: put_decoded(s, placed, out)

  # Points (`{:flat, list}`) take the inner chunks as one flat axis.
  defp batch_shape(s, [{{{:flat, _}, _, _}, _} | _]), do: {Shape.product(s.chunk_shape)}
  defp batch_shape(s, _placed), do: s.chunk_shape

  defp put_decoded(s, placed, out) do
    with {:ok, decoded} <- decode_chunks(s, placed),
         {:ok, pieces} <- Result.map_ok(decoded, &put_one(s, &1, out)),
         do: {:ok, Enum.concat(pieces)}
  end

  defp put_one(s, {box, nil}, out), do: Pipeline.fill(s.inner, box, out)

  defp put_one(s, {box, data}, out) do
    case Pipeline.put_decoded(s.inner, data, box, out) do
      {:error, reason} -> {:error, {:corrupt_inner_chunk, reason}}
      ok -> ok
    end
  end

  # (a map, not a comprehension: a malformed entry must fail, not be skipped)
  defp batch(placed),
    do:
      Enum.map(placed, fn
        {{{:flat, list}, out_start, count}, stored} -> {stored, {list}, out_start, count}
        {{chunk_start, out_start, count}, stored} -> {stored, chunk_start, out_start, count}
      end)

  defp inner_error({:error, {:corrupt_chunk, why}}), do: {:error, {:corrupt_inner_chunk, why}}
  defp inner_error(other), do: other

  # Decodes `{tag, stored | nil}` inner chunks in parallel to `{tag, data | nil}` (their
  # variable-length items as checked layouts, which the tasks hand back by reference: see
  # `Pipeline.decode_to_send/2`).
  defp decode_chunks(s, stored) do
    stored
    |> parallel(chunk_bytes(s), fn
      {tag, nil} ->
        {:ok, {tag, nil}}

      {tag, {:decoded, data}} ->
        {:ok, {tag, data}}

      {tag, bytes} ->
        case Pipeline.decode_to_send(s.inner, bytes) do
          {:ok, data} -> {:ok, {tag, data}}
          {:error, reason} -> {:error, {:corrupt_inner_chunk, reason}}
        end
    end)
    |> Result.map_ok(& &1)
  end

  # Groups `{offset, nbytes, tag}` ranges of one value into `{first, last, members}` spans,
  # merging ranges less than `gap` bytes apart.
  defp coalesce(wanted, gap) do
    wanted
    |> Enum.sort()
    |> Enum.reduce([], fn {offset, nbytes, _} = range, groups ->
      case groups do
        [{first, last, members} | rest] when offset - last <= gap ->
          [{first, max(last, offset + nbytes), [range | members]} | rest]

        _ ->
          [{offset, offset + nbytes, [range]} | groups]
      end
    end)
  end

  # The spans of one value, read in one request; `{tag, bytes}` for each of their members.
  defp fetch_groups(_chunk, [], _generation), do: {:ok, []}

  defp fetch_groups(chunk, groups, generation) do
    spans = for {first, last, _} <- groups, do: {first, last - first}

    case Chunk.get_ranges_with_generation(chunk, spans, generation) do
      {:ok, parts, _generation} ->
        groups
        |> Enum.zip(parts)
        |> Result.map_ok(fn {group, bytes} -> slice_group(group, bytes) end)
        |> case do
          {:ok, sliced} -> {:ok, Enum.concat(sliced)}
          error -> error
        end

      {:error, reason} when reason in [:not_found, :generation_mismatch] ->
        {:error, {:shard_changed, chunk.key}}

      error ->
        error
    end
  end

  defp slice_group({first, last, members}, bytes) when byte_size(bytes) == last - first,
    do: {:ok, for({o, n, tag} <- members, do: {tag, binary_part(bytes, o - first, n)})}

  defp slice_group({first, last, _}, bytes) do
    corrupt(
      "inner chunk bytes #{first}..#{last} run past the end of the shard " <>
        "(#{byte_size(bytes)} bytes read)"
    )
  end

  # A shard's decoded index (nil when the shard is not stored): from the cache, else with one
  # ranged read.
  # Where the shard's index is cached: the array's chunk cache, else the handle's index
  # cache (`ExZarr.Sharding.IndexCache`); nowhere for a shard inside another shard.
  defp index_store(s, chunk, opts) do
    cond do
      not Chunk.stored_value?(chunk) -> nil
      cache = Keyword.get(opts, :cache) -> {:chunk_cache, cache}
      s.cache != nil -> {:index_cache, s}
      true -> nil
    end
  end

  defp cached_index({:chunk_cache, cache}, chunk), do: ChunkCache.fetch(cache, chunk, :index)

  defp cached_index({:index_cache, s}, chunk) do
    with :error <- IndexCache.fetch(s.cache, s.ref, chunk.key), do: :miss
  end

  defp cached_index(nil, _chunk), do: :miss

  # The index read from the store (and cached): `{index | nil, generation}`.
  defp fresh_index(s, chunk, {:chunk_cache, cache}) do
    ChunkCache.read_through(cache, chunk, :index, fn ->
      with {:ok, {index, generation} = entry} <- read_index(s, chunk),
           do: {:ok, entry, generation, if(index, do: byte_size(index), else: 0)}
    end)
  end

  defp fresh_index(s, chunk, store) do
    with {:ok, {index, _} = entry} <- read_index(s, chunk) do
      with {:index_cache, s} <- store,
           true <- index != nil,
           do: IndexCache.put(s.cache, s.ref, chunk.key, entry)

      {:ok, entry}
    end
  end

  # The shard's index and the generation it was read from; nil when the shard is not stored.
  defp read_index(s, chunk) do
    case Chunk.get_ranges_with_generation(chunk, [index_range(s)]) do
      {:ok, [bytes], generation} ->
        with {:ok, index} <- decode_index(s, bytes, nil), do: {:ok, {index, generation}}

      {:error, :not_found} ->
        {:ok, {nil, nil}}

      error ->
        error
    end
  end

  defp forget_index({:chunk_cache, cache}, chunk), do: ChunkCache.forget(cache, chunk, :index)
  defp forget_index({:index_cache, s}, chunk), do: IndexCache.delete(s.cache, s.ref, chunk.key)
  defp forget_index(nil, _chunk), do: :ok

  # A whole shard and its validated index; `{:ok, nil, empty_index}` when it is not stored.
  defp load_shard(s, chunk) do
    case Chunk.get(chunk) do
      {:ok, shard} -> parse_shard(s, shard)
      {:error, :not_found} -> parse_shard(s, nil)
      error -> error
    end
  end

  # The stored shard (nil when absent) and its decoded index.
  defp parse_shard(s, nil), do: {:ok, nil, empty_index(s)}

  defp parse_shard(s, shard) do
    with {:ok, bytes} <- index_bytes(s, shard),
         {:ok, index} <- decode_index(s, bytes, byte_size(shard)),
         do: {:ok, shard, index}
  end

  defp with_key({:error, {:corrupt_shard_index, why}}, key),
    do: {:error, {:corrupt_shard_index, key, why}}

  defp with_key(other, _key), do: other

  @impl true
  def read_inner_chunk(%__MODULE__{} = s, chunk, coords) do
    i = linear(s, coords)

    with {:ok, [{:only, stored}]} <- fetch_inner(s, chunk, [{i, :only}], []),
         {:ok, [{:only, data}]} <- decode_chunks(s, [{:only, stored}]) do
      if data == nil, do: {:error, :not_found}, else: {:ok, data}
    end
    |> with_key(chunk.key)
  end

  # -- writing in part ----------------------------------------------------------------------

  @impl true
  def encode_partial(
        %__MODULE__{} = s,
        chunk,
        {_, _, _, chunk_start, count} = piece,
        extent,
        opts
      ) do
    # (a selection by index lists has at most one inner chunk per element it writes)
    parts =
      if Selection.box?(%{chunk_start: chunk_start}),
        do: Indexing.part_count(box_selection(chunk_start, count), s.chunk_shape),
        else: 0

    with :ok <- Limits.check_parts(parts),
         do: write_box(s, chunk, piece, extent, opts)
  end

  defp write_box(s, chunk, {_, _, _, chunk_start, count} = piece, extent, opts) do
    keep_fill? = Keyword.get(opts, :keep_fill, false)

    if count == extent and Shape.zero?(chunk_start) do
      with {:ok, chunks} <- merge_box(s, nil, empty_index(s), piece, extent, keep_fill?),
           do: store_shard(s, chunk, chunks)
    else
      update_shard(s, chunk, piece, extent, keep_fill?, opts)
    end
    |> with_key(chunk.key)
  end

  # A partial write: one `ExZarr.Storage.update/4` of the shard (its index and inner chunks
  # together), retried on conflict. A shard left with no inner chunk is deleted on the
  # generation read (see ExZarr.Storage.Update).
  defp update_shard(s, chunk, piece, extent, keep_fill?, opts) do
    change = fn stored ->
      with {:ok, shard, index} <- parse_shard(s, stored),
           {:ok, chunks} <- merge_box(s, shard, index, piece, extent, keep_fill?),
           {:ok, {shard, _index, n}} <- build_shard(s, chunks) do
        cond do
          n > 0 -> {:write, shard, :ok}
          stored == nil -> {:keep, :ok}
          true -> {:delete, :ok}
        end
      end
    end

    update_options = Pipeline.update_options(opts)

    with {:ok, :ok, _generation} <-
           Storage.update(chunk.storage, chunk.key, change, update_options),
         do: forget_shard_index(s, chunk)
  end

  # The shard's inner chunks `{i, encoded | nil}` after the piece is written over `shard`
  # (nil: not stored) with its decoded `index`. The piece's box or index lists are planned
  # over the inner chunks; each inner chunk touched gets its pieces in one merge.
  defp merge_box(s, shard, index, {data, from, at, chunk_start, count}, extent, keep_fill?) do
    zero = Shape.zeros(tuple_size(count))
    inner = Selection.subplan(chunk_start, zero, count, s.shard_shape, levels(s))
    touched = Enum.group_by(inner, &linear(s, &1.chunk))

    sources =
      for {i, ips} <- touched do
        pieces =
          for ip <- ips, do: {data, from, Shape.add(at, ip.out_start), ip.chunk_start, ip.count}

        covered? =
          match?([_], ips) and Selection.box?(hd(ips)) and Shape.zero?(hd(ips).chunk_start) and
            hd(ips).count == Indexing.chunk_extent(extent, s.chunk_shape, hd(ips).chunk)

        {i, if(covered?, do: nil, else: stored_bytes(shard, index, i)), pieces}
      end

    kept =
      for {i, offset, nbytes} <- if(shard, do: stored(index), else: []),
          not is_map_key(touched, i),
          do: {i, binary_part(shard, offset, nbytes)}

    with {:ok, encoded} <- encode_chunks(s, sources, keep_fill?), do: {:ok, kept ++ encoded}
  end

  # Encodes inner chunks in parallel: each item is `{i, stored | nil, pieces}`, the pieces
  # copied over the decoded stored chunk (or the fill value) in order. Chunks equal to the
  # fill value everywhere come back as `{i, nil}` unless `keep_fill?`.
  defp encode_chunks(s, items, keep_fill?) do
    items
    |> parallel(chunk_bytes(s), fn {i, stored, pieces} ->
      with {:ok, base} <- decode_base(s, stored),
           {:ok, encoded} <- Pipeline.encode_chunk(s.inner, base, pieces, keep_fill?),
           do: {:ok, {i, encoded}}
    end)
    |> Result.map_ok(& &1)
  end

  defp decode_base(_s, nil), do: {:ok, nil}

  defp decode_base(s, stored) do
    case Pipeline.decode(s.inner, stored) do
      {:ok, base} -> {:ok, base}
      {:error, reason} -> {:error, {:corrupt_inner_chunk, reason}}
    end
  end

  # Stores the shard (deletes it when no inner chunk is left); every cache forgets its index
  # (and with it the inner chunks read with it): the next read reads the index again, with
  # the generation of what was stored.
  defp store_shard(s, chunk, chunks) do
    result =
      case build_shard(s, chunks) do
        {:ok, {_shard, _index, 0}} -> Chunk.delete(chunk)
        {:ok, {shard, _index, _count}} -> Chunk.put(chunk, shard)
        error -> error
      end

    with :ok <- result, do: forget_shard_index(s, chunk)
  end

  defp forget_shard_index(s, chunk) do
    if Chunk.stored_value?(chunk) do
      IndexCache.delete(s.cache, s.ref, chunk.key)
      ChunkCache.written(nil, chunk, [{:index, nil}])
    else
      :ok
    end
  end

  @doc """
  Lays out a shard from `{i, encoded | nil}` inner chunks (missing and nil ones are not
  stored): chunks in Morton order, the index at the configured end. Returns the shard, its
  decoded index and the number of inner chunks stored (with none, the shard is only an
  index: it is deleted instead).
  """
  @spec build_shard(t(), [{non_neg_integer(), iodata() | nil}]) ::
          {:ok, {iodata(), index(), non_neg_integer()}} | {:error, term()}
  def build_shard(%__MODULE__{} = s, chunks) do
    by_index = for {i, enc} <- chunks, enc != nil, into: %{}, do: {i, enc}
    bits = axis_bits(s.grid)
    max_bits = Enum.max(bits, fn -> 0 end)
    start = if s.location == :start, do: s.index_size, else: 0

    {body, ranges, _end} =
      by_index
      |> Enum.sort_by(fn {i, _} ->
        morton_code(Tuple.to_list(Shape.unravel(i, s.grid)), bits, max_bits)
      end)
      |> Enum.reduce({[], [], start}, fn {i, enc}, {body, ranges, offset} ->
        n = IO.iodata_length(enc)
        {[body, enc], [{i, <<offset::64-little, n::64-little>>} | ranges], offset + n}
      end)

    index = IO.iodata_to_binary(index_entries(Enum.sort(ranges), 0, s.count))

    with {:ok, encoded_index} <- Pipeline.encode(s.index, index) do
      shard =
        case s.location do
          :end -> [body, encoded_index]
          :start -> [encoded_index, body]
        end

      {:ok, {shard, index, map_size(by_index)}}
    end
  end

  # The index as iodata: the entries of stored chunks (sorted by linear index) with runs of
  # empty entries between them, from chunk `next` to `count`.
  defp index_entries([], next, count), do: [:binary.copy(@empty_entry, count - next)]

  defp index_entries([{i, entry} | rest], next, count),
    do: [:binary.copy(@empty_entry, i - next), entry | index_entries(rest, i + 1, count)]

  @doc "Where inner chunk `i` starts within the shard, in elements along each axis."
  @spec origin(t(), non_neg_integer()) :: tuple()
  def origin(%__MODULE__{chunk_shape: chunk_shape} = s, i),
    do: Shape.mul(coords(s, i), chunk_shape)

  defp zeros(%__MODULE__{chunk_shape: shape}), do: Shape.zeros(tuple_size(shape))

  # (variable-length items count 8 bytes each, as everywhere: their fill item may be empty)
  defp chunk_bytes(s), do: Pipeline.chunk_bytes(s.inner)

  @impl true
  def configuration(%__MODULE__{config: config}), do: config

  # Inner chunks are worked on in memory: one batch of them per scheduler, in the calling
  # process when there is too little work to pay for tasks.
  defp parallel(items, item_bytes, fun),
    do: Parallel.map(items, fun, bytes: length(items) * item_bytes, batch: true)
end
