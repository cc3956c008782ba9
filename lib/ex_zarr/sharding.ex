defmodule ExZarr.Sharding do
  @moduledoc """
  Reads and writes of sharded arrays (arrays whose codec pipeline is one `sharding_indexed`
  codec, see `ExZarr.Codecs.ShardingIndexed`). `ExZarr.Array` hands these arrays over to this
  module; users call the `ExZarr.Array` functions.

      {:ok, a} = ExZarr.create(shape: {512, 512}, chunks: {32, 32}, shards: {256, 256},
                               dtype: :uint8, compressor: %{id: "blosc", cname: "lz4"})
      :ok = ExZarr.Array.set_slice(a, data, start: {0, 0}, stop: {512, 512})
      {:ok, cutout} = ExZarr.Array.get_slice(a, start: {100, 100}, stop: {132, 132})
      {:ok, inner} = ExZarr.Array.read_chunk(a, {3, 5}, level: :inner)

  ## Reading

  A region read fetches each touched shard's index with one ranged read (the last bytes of
  the shard, or the first ones with `index_location: "start"`), then only the inner chunks the
  region needs, with one multi-range request per shard (`ExZarr.Storage.get_ranges/3`: on the
  filesystem one open, a read per range and one close); inner chunks stored less than
  `coalesce_gap:` bytes apart are fetched as one range (default 32 KiB: with one request per
  shard, a range costs little more than its bytes, and 0 to 32 KiB measured best for 32^3
  cutouts on a local disk, 256 KiB 20% slower; object stores, where a request costs more, gain
  from a larger gap, such as the 1 MiB their clients use). The shards of one region are read
  concurrently, except small ones (under 1 MiB in all) on a store that reads many ranges in one
  request (the filesystem), where a read costs less than a task. The region is then assembled
  by `ExZarr.Codecs.ShardingIndexed.assemble/3`: when the inner pipeline is `bytes`
  (little-endian) plus at most one compressor, one native call decodes every inner chunk into
  a per-thread scratch buffer and copies it into place in the output, on as many threads as
  there are schedulers when the read is large: no binary per inner chunk, no second pass.
  Other inner pipelines go through the native output buffer (`ExZarr.Native.outbuf_new/2`).
  On a
  store that cannot serve byte ranges (`ExZarr.Storage.supports_ranges?/1`) each touched shard
  is read once, whole.

  Indexes are cached per array handle (`ExZarr.Sharding.IndexCache`): writes through the
  handle update the cache; writes by other handles or other programs are seen after the
  handle is opened again. A read that fails with a cached index is retried once with fresh
  indexes.

  ## Writing

  A write covering a whole shard encodes its inner chunks in parallel and stores the shard
  once, without reading it. A write covering part of a shard reads it once, decodes only the
  inner chunks the write partly covers, keeps the other inner chunks' encoded bytes as they
  are, and stores the new shard in one `put` (atomic on the filesystem). A shard left with no
  inner chunk is deleted. Inner chunks equal to the fill value are not stored unless the array
  has `write_empty_chunks: true`.

  Writes to one shard through one array handle are serialized (a lock per handle and shard,
  held by the writing process, released if it dies), so concurrent writes to different parts
  of a shard never lose data. As in zarr-python, writers using different handles, OS processes
  or machines must not write the same shard at the same time: that is the caller's to arrange.
  Reads are not isolated from a concurrent write of the same shard (as in zarr-python): read
  after the write returns.

  ## Chunk-level access

  `ExZarr.Array.read_chunk/3` and `ExZarr.Array.write_chunk/3` work on whole shards (the
  array's chunk grid is the shard grid). `read_chunk(a, coords, level: :inner)` reads one inner
  chunk by its coordinates in the inner chunk grid, fetching only its bytes; and
  `chunk_stream(a, level: :inner)` streams `{inner_coords, binary}` for every inner chunk, shard
  by shard (each shard read once).
  """

  alias ExZarr.{Array, Indexing, Limits, Parallel, Result, Shape, Storage}
  alias ExZarr.Codecs.ShardingIndexed
  alias ExZarr.Codec.Pipeline
  alias ExZarr.Sharding.IndexCache

  @enforce_keys [:codec, :ref]
  defstruct [:codec, :ref, :cache]

  @type t :: %__MODULE__{
          codec: ShardingIndexed.t(),
          ref: reference(),
          cache: IndexCache.table()
        }

  @coalesce_gap 32 * 1024
  # Reads of one region from a local store up to this many bytes in all run one after another.
  @local_read_bytes 1024 * 1024

  @doc """
  The sharding state of an array handle whose pipeline is exactly one `sharding_indexed`
  codec; nil for any other pipeline (those are read and written shard by shard).
  """
  @spec new(Pipeline.t()) :: t() | nil
  def new(%Pipeline{
        array_to_array: [],
        bytes_to_bytes: [],
        array_to_bytes: {ShardingIndexed, codec}
      }),
      do: %__MODULE__{codec: codec, ref: make_ref(), cache: IndexCache.table()}

  def new(%Pipeline{}), do: nil

  # -- reading ------------------------------------------------------------------------------

  @doc "`ExZarr.Array.get_slice/2` for sharded arrays."
  @spec get_slice(Array.t(), keyword()) :: {:ok, binary()} | {:error, term()}
  def get_slice(%Array{} = a, opts) do
    with {:ok, sel, parts} <- plan(a, opts) do
      keys = Enum.map(parts, &Array.chunk_key(a, &1.chunk))
      retrying(a, keys, &read_region(a, sel, parts, opts, &1))
    end
  end

  defp read_region(a, sel, parts, opts, use_cache?) do
    gap = Keyword.get(opts, :coalesce_gap, @coalesce_gap)

    with {:ok, planned} <- Result.map_ok(parts, &plan_reads(a, &1, gap, use_cache?)),
         {reads, fills} = Enum.unzip(planned),
         {:ok, fetched} <- run_reads(a, Enum.concat(reads)) do
      ShardingIndexed.assemble(a.sharding.codec, sel.shape, Enum.concat(fills ++ fetched))
    end
  end

  # The reads one shard needs for a region, and the `{geometry, nil}` of its inner chunks that
  # are not stored (fill). Each read tags the inner chunks it brings with their geometry
  # `{start_in_chunk, start_in_output, count}`: `{:ranges, key, groups}` with a group per run
  # of nearby stored inner chunks (the index comes from the cache or one ranged read), or
  # `{:shard, key, [{i, geometry}]}` (the whole shard) when the store cannot read ranges.
  defp plan_reads(a, part, gap, use_cache?) do
    s = a.sharding.codec
    key = Array.chunk_key(a, part.chunk)
    stop = Shape.add(part.chunk_start, part.count)

    inner =
      for ip <-
            Indexing.plan(
              %{start: part.chunk_start, stop: stop, shape: part.count},
              s.chunk_shape
            ),
          do:
            {ShardingIndexed.linear(s, ip.chunk),
             {ip.chunk_start, Shape.add(part.out_start, ip.out_start), ip.count}}

    if Storage.supports_ranges?(a.storage) do
      case index(a, key, use_cache?) do
        {:ok, index} ->
          {wanted, fills} =
            Enum.reduce(inner, {[], []}, fn {i, geometry}, {wanted, fills} ->
              case ShardingIndexed.entry(index, i) do
                :empty -> {wanted, [{geometry, nil} | fills]}
                {offset, nbytes} -> {[{offset, nbytes, geometry} | wanted], fills}
              end
            end)

          reads = if wanted == [], do: [], else: [{:ranges, key, coalesce(wanted, gap)}]
          {:ok, {reads, fills}}

        {:error, :not_found} ->
          {:ok, {[], for({_, geometry} <- inner, do: {geometry, nil})}}

        error ->
          error
      end
    else
      {:ok, {[{:shard, key, inner}], []}}
    end
  end

  # Runs the reads of a region; `{tag, bytes}` lists. Several reads run concurrently, except
  # small ones (below @local_read_bytes in all) on a store that serves many ranges in one
  # request (the filesystem): there a read costs about its bytes, less than a task (32^3
  # cutouts across shards: p90 -40%).
  defp run_reads(a, reads) do
    reads
    |> Parallel.map(&run_read(a, &1),
      max_concurrency: Parallel.concurrency(:requests),
      bytes: if(Storage.multi_range?(a.storage), do: read_bytes(reads, 0)),
      min_bytes: @local_read_bytes
    )
    |> Result.map_ok(& &1)
  end

  # The bytes the reads fetch (a whole-shard read counts as large).
  defp read_bytes([], acc), do: acc
  defp read_bytes([{:shard, _, _} | _], _acc), do: @local_read_bytes

  defp read_bytes([{:ranges, _, groups} | rest], acc),
    do: read_bytes(rest, Enum.reduce(groups, acc, fn {first, last, _}, n -> n + last - first end))

  defp run_read(a, {:ranges, key, groups}), do: fetch_groups(a.storage, key, groups)

  defp run_read(a, {:shard, key, inner}) do
    with {:ok, shard, index} <- load_shard(a, key) do
      stored =
        for {i, tag} <- inner do
          case ShardingIndexed.entry(index, i) do
            :empty -> {tag, nil}
            {offset, nbytes} -> {tag, binary_part(shard, offset, nbytes)}
          end
        end

      {:ok, stored}
    end
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
  defp fetch_groups(storage, key, groups) do
    spans = for {first, last, _} <- groups, do: {first, last - first}

    case Storage.get_ranges(storage, key, spans) do
      {:ok, parts} ->
        groups
        |> Enum.zip(parts)
        |> Result.map_ok(fn {group, bytes} -> slice_group(key, group, bytes) end)
        |> case do
          {:ok, sliced} -> {:ok, Enum.concat(sliced)}
          error -> error
        end

      {:error, :not_found} ->
        {:error, {:shard_changed, key}}

      error ->
        error
    end
  end

  defp slice_group(_key, {first, last, members}, bytes) when byte_size(bytes) == last - first,
    do: {:ok, for({o, n, tag} <- members, do: {tag, binary_part(bytes, o - first, n)})}

  defp slice_group(key, {first, last, _}, bytes) do
    {:error,
     {:corrupt_shard_index, key,
      "inner chunk bytes #{first}..#{last} run past the end of the shard " <>
        "(#{byte_size(bytes)} bytes read)"}}
  end

  # A shard's decoded index: from the cache, else with one ranged read.
  defp index(a, key, use_cache?) do
    %__MODULE__{codec: s, cache: cache, ref: ref} = a.sharding

    case use_cache? && IndexCache.fetch(cache, ref, key) do
      {:ok, index} ->
        {:ok, index}

      _ ->
        with {:ok, bytes} <- Storage.get(a.storage, key, ShardingIndexed.index_range(s)),
             {:ok, index} <- with_key(ShardingIndexed.decode_index(s, bytes, nil), key) do
          IndexCache.put_new(cache, ref, key, index)
          {:ok, index}
        end
    end
  end

  # A whole shard and its validated index; `{:ok, nil, empty_index}` when it is not stored.
  defp load_shard(a, key) do
    s = a.sharding.codec

    with {:ok, shard} <- Storage.get(a.storage, key),
         {:ok, bytes} <- ShardingIndexed.index_bytes(s, shard),
         {:ok, index} <- ShardingIndexed.decode_index(s, bytes, byte_size(shard)) do
      {:ok, shard, index}
    else
      {:error, :not_found} -> {:ok, nil, ShardingIndexed.empty_index(s)}
      error -> with_key(error, key)
    end
  end

  defp with_key({:error, {:corrupt_shard_index, why}}, key),
    do: {:error, {:corrupt_shard_index, key, why}}

  defp with_key(other, _key), do: other

  # Runs `fun.(true)` (cached indexes allowed); on error, forgets the shards' cached indexes
  # and runs `fun.(false)`: an index cached before another handle rewrote the shard is stale.
  defp retrying(%Array{sharding: %__MODULE__{cache: nil}}, _keys, fun), do: fun.(false)

  defp retrying(a, keys, fun) do
    case fun.(true) do
      {:error, _} ->
        %__MODULE__{cache: cache, ref: ref} = a.sharding
        Enum.each(keys, &IndexCache.delete(cache, ref, &1))
        fun.(false)

      ok ->
        ok
    end
  end

  @doc """
  `ExZarr.Array.read_chunk/3` with `level: :inner`: one inner chunk, by its coordinates in the
  array's inner chunk grid (full inner chunk shape). `{:error, :not_found}` when not stored.
  """
  @spec read_inner_chunk(Array.t(), tuple()) :: {:ok, binary()} | {:error, term()}
  def read_inner_chunk(%Array{sharding: nil}, _coords), do: {:error, :not_sharded}

  def read_inner_chunk(%Array{} = a, coords) do
    s = a.sharding.codec

    if Indexing.valid_chunk?(a.metadata.shape, s.chunk_shape, coords) do
      shard = Shape.zip_with(coords, s.grid, &div/2)
      i = ShardingIndexed.linear(s, Shape.zip_with(coords, s.grid, &rem/2))
      key = Array.chunk_key(a, shard)
      retrying(a, [key], &read_inner(a, key, i, &1))
    else
      {:error, {:invalid_chunk_coords, coords}}
    end
  end

  defp read_inner(a, key, i, use_cache?) do
    s = a.sharding.codec

    stored =
      if Storage.supports_ranges?(a.storage) do
        with {:ok, index} <- index(a, key, use_cache?) do
          case ShardingIndexed.entry(index, i) do
            :empty ->
              {:error, :not_found}

            {offset, nbytes} ->
              fetch_groups(a.storage, key, [{offset, offset + nbytes, [{offset, nbytes, i}]}])
          end
        end
      else
        case load_shard(a, key) do
          {:ok, nil, _} ->
            {:error, :not_found}

          {:ok, shard, index} ->
            case ShardingIndexed.entry(index, i) do
              :empty -> {:error, :not_found}
              {offset, nbytes} -> {:ok, [{i, binary_part(shard, offset, nbytes)}]}
            end

          error ->
            error
        end
      end

    with {:ok, chunks} <- stored,
         {:ok, [{_, chunk}]} <- ShardingIndexed.decode_chunks(s, chunks),
         do: {:ok, chunk}
  end

  @doc """
  `ExZarr.Array.chunk_stream/2` with `level: :inner`: `{inner_coords, binary}` for every inner
  chunk inside the array, shard by shard (in shard C order, then C order within a shard).
  Inner chunks that are not stored come as fill. Options as `ExZarr.Array.chunk_stream/2`;
  memory stays bounded by `parallel` x shard size.
  """
  @spec inner_chunk_stream(Array.t(), keyword()) :: Enumerable.t()
  def inner_chunk_stream(%Array{sharding: nil}, _opts),
    do: raise(ExZarr.Error, reason: :not_sharded)

  def inner_chunk_stream(%Array{} = a, opts) do
    shards = Indexing.chunk_coords(a.metadata.shape, a.metadata.chunks)

    a
    |> Array.stream_map(shards, opts, &unwrap!(shard_inner_chunks(a, &1)))
    |> Stream.flat_map(& &1)
  end

  defp shard_inner_chunks(a, shard_coords) do
    s = a.sharding.codec
    key = Array.chunk_key(a, shard_coords)

    with {:ok, shard, index} <- load_shard(a, key) do
      inside =
        for i <- 0..(s.count - 1)//1,
            global <- [Shape.add(Shape.mul(shard_coords, s.grid), ShardingIndexed.coords(s, i))],
            Indexing.valid_chunk?(a.metadata.shape, s.chunk_shape, global),
            do: {i, global}

      stored =
        for {i, _} <- inside,
            {offset, nbytes} <- [ShardingIndexed.entry(index, i)],
            do: {i, binary_part(shard, offset, nbytes)}

      with {:ok, decoded} <- ShardingIndexed.decode_chunks(s, stored) do
        decoded = Map.new(decoded)
        fill = :binary.copy(a.fill_element, Shape.product(s.chunk_shape))
        {:ok, for({i, global} <- inside, do: {global, Map.get(decoded, i, fill)})}
      end
    end
  end

  # -- writing ------------------------------------------------------------------------------

  @doc "`ExZarr.Array.set_slice/3` for sharded arrays."
  @spec set_slice(Array.t(), binary(), keyword()) :: :ok | {:error, term()}
  def set_slice(%Array{} = a, data, opts) do
    with {:ok, sel, parts} <- plan(a, opts),
         :ok <- Array.check_size(data, Shape.product(sel.shape) * itemsize(a)) do
      parts
      |> Parallel.chunks(&write_part(a, data, sel, &1), a.storage, a.chunk_bytes, opts)
      |> Result.each_ok(& &1)
    end
  end

  defp write_part(a, data, sel, part) do
    s = a.sharding.codec
    key = Array.chunk_key(a, part.chunk)
    extent = Indexing.chunk_extent(a.metadata.shape, a.metadata.chunks, part.chunk)
    stop = Shape.add(part.chunk_start, part.count)

    inner =
      Indexing.plan(%{start: part.chunk_start, stop: stop, shape: part.count}, s.chunk_shape)

    whole? = part.count == extent and Shape.zero?(part.chunk_start)

    locked(a, key, fn ->
      with {:ok, shard, index} <- if(whole?, do: {:ok, nil, nil}, else: load_shard(a, key)) do
        touched = Map.new(inner, &{ShardingIndexed.linear(s, &1.chunk), &1})

        sources =
          for {i, ip} <- touched do
            piece =
              {data, sel.shape, Shape.add(part.out_start, ip.out_start), ip.chunk_start, ip.count}

            covered? =
              ip.count == Indexing.chunk_extent(extent, s.chunk_shape, ip.chunk) and
                Shape.zero?(ip.chunk_start)

            cond do
              covered? and ip.count == s.chunk_shape and sel.shape == s.chunk_shape -> {i, data}
              covered? or shard == nil -> {i, piece}
              true -> {i, merge_source(shard, index, i, piece)}
            end
          end

        kept =
          if shard == nil,
            do: [],
            else:
              for(
                i <- 0..(s.count - 1)//1,
                not is_map_key(touched, i),
                {offset, nbytes} <- [ShardingIndexed.entry(index, i)],
                do: {i, binary_part(shard, offset, nbytes)}
              )

        with {:ok, encoded} <- ShardingIndexed.encode_chunks(s, sources, a.write_empty_chunks),
             do: store_shard(a, key, kept ++ encoded)
      end
    end)
  end

  defp merge_source(shard, index, i, piece) do
    case ShardingIndexed.entry(index, i) do
      :empty -> piece
      {offset, nbytes} -> {:merge, binary_part(shard, offset, nbytes), piece}
    end
  end

  @doc "`ExZarr.Array.write_chunk/3` for sharded arrays: encodes and stores one whole shard."
  @spec write_chunk(Array.t(), tuple(), binary()) :: :ok | {:error, term()}
  def write_chunk(%Array{} = a, coords, data) do
    s = a.sharding.codec
    zeros = Shape.zeros(tuple_size(coords))

    cond do
      not Indexing.valid_chunk?(a.metadata.shape, a.metadata.chunks, coords) ->
        {:error, {:invalid_chunk_coords, coords}}

      byte_size(data) != Shape.product(s.shard_shape) * itemsize(a) ->
        Array.check_size(data, Shape.product(s.shard_shape) * itemsize(a))

      true ->
        key = Array.chunk_key(a, coords)

        sources =
          for i <- 0..(s.count - 1)//1,
              do: {i, {data, s.shard_shape, ShardingIndexed.origin(s, i), zeros, s.chunk_shape}}

        locked(a, key, fn ->
          with {:ok, encoded} <- ShardingIndexed.encode_chunks(s, sources, a.write_empty_chunks),
               do: store_shard(a, key, encoded)
        end)
    end
  end

  defp store_shard(a, key, chunks) do
    %__MODULE__{codec: s, cache: cache, ref: ref} = a.sharding

    case ShardingIndexed.build_shard(s, chunks) do
      {:ok, {_shard, _index, 0}} ->
        with :ok <- Storage.delete(a.storage, key), do: IndexCache.delete(cache, ref, key)

      {:ok, {shard, index, _count}} ->
        with :ok <- Storage.put(a.storage, key, shard), do: IndexCache.put(cache, ref, key, index)

      error ->
        error
    end
  end

  # One writer at a time per (handle, shard); the lock belongs to the calling process.
  defp locked(a, key, fun),
    do: :global.trans({{__MODULE__, a.sharding.ref, key}, self()}, fun, [node()])

  # -- helpers ------------------------------------------------------------------------------

  # The array's planning and limits, plus the limit on the inner chunks a request touches.
  defp plan(a, opts) do
    with {:ok, sel, parts} <- Array.plan(a, opts),
         :ok <- Limits.check_parts(Indexing.part_count(sel, a.sharding.codec.chunk_shape)),
         do: {:ok, sel, parts}
  end

  defp itemsize(a), do: byte_size(a.fill_element)

  defp unwrap!({:ok, v}), do: v
  defp unwrap!({:error, reason}), do: raise(ExZarr.Error, reason: reason)
end
