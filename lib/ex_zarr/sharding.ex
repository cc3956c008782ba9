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

  The index and the inner chunks of a shard are read from one generation of it (see
  "Generations" in `ExZarr.Storage`): inner chunks are fetched on the condition that the shard
  is still at the generation the index came from. Indexes are cached per array handle with
  their generation (`ExZarr.Sharding.IndexCache`), so a read usually costs one request; when
  another handle or program has rewritten the shard in between, the stale index is dropped
  and the index and chunks are read again (up to 8 times, then `{:error, {:shard_changed,
  key}}`). A read thus returns, for every element, what was stored there at some point,
  never the bytes of another inner chunk. A cached index that leaves nothing to read (all the
  touched inner chunks missing) is not trusted: the index is read again. On a store without
  generations (Mnesia, custom backends) indexes are not cached and reads are not checked.

  ## Writing

  A write covering a whole shard encodes its inner chunks in parallel and stores the shard
  once, without reading it. A write covering part of a shard reads it once, decodes only the
  inner chunks the write partly covers, keeps the other inner chunks' encoded bytes as they
  are, and stores the new shard in one `put` (atomic on the filesystem). A shard left with no
  inner chunk is deleted. Inner chunks equal to the fill value are not stored unless the array
  has `write_empty_chunks: true`.

  Partial writes of a shard hold its node-wide lock (`ExZarr.Storage.Lock`, the same for every
  handle on the node that reaches the shard, released if the writer dies) from the read to the
  store, so concurrent writes to different parts of a shard, through one handle or several,
  never lose data; writes of whole shards need no lock. Writers in other OS processes or on
  other machines must not write the same shard at the same time: that is the caller's to
  arrange. Reads are not isolated from a concurrent write of the same shard (as in
  zarr-python): each inner chunk read is one that was stored, old or new.

  ## Chunk-level access

  `ExZarr.Array.read_chunk/3` and `ExZarr.Array.write_chunk/3` work on whole shards (the
  array's chunk grid is the shard grid). `read_chunk(a, coords, level: :inner)` reads one inner
  chunk by its coordinates in the inner chunk grid, fetching only its bytes; and
  `chunk_stream(a, level: :inner)` streams `{inner_coords, binary}` for every inner chunk, shard
  by shard (each shard read once).
  """

  alias ExZarr.{Array, Indexing, Limits, Result, Storage}
  alias ExZarr.Codecs.ShardingIndexed
  alias ExZarr.Codec.Pipeline
  alias ExZarr.Sharding.IndexCache
  alias ExZarr.Storage.Lock

  @enforce_keys [:codec, :ref]
  defstruct [:codec, :ref, :cache]

  @type t :: %__MODULE__{
          codec: ShardingIndexed.t(),
          ref: reference(),
          cache: IndexCache.table()
        }

  @coalesce_gap 32 * 1024
  # Reads of one region in flight at once (they wait on storage more than on CPU).
  @io_concurrency 16
  # Reads of one region from a local store up to this many bytes in all run one after another.
  @local_read_bytes 1024 * 1024
  # Reads of a shard, with a fresh index each, before a shard rewritten during every one of
  # them gives up.
  @attempts 8

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
    gap = Keyword.get(opts, :coalesce_gap, @coalesce_gap)

    with {:ok, sel, parts} <- plan(a, opts),
         {:ok, planned} <- Result.map_ok(parts, &plan_part(a, &1, gap)),
         {fills, reads} = Enum.split_with(planned, &match?({:fill, _}, &1)),
         {:ok, fetched} <- run_reads(a, reads) do
      placed = Enum.map(fills, &elem(&1, 1)) ++ fetched
      ShardingIndexed.assemble(a.sharding.codec, sel.shape, Enum.concat(placed))
    end
  end

  # What one part of a region needs from its shard, with each inner chunk tagged by its
  # geometry `{start_in_chunk, start_in_output, count}`.
  defp plan_part(a, part, gap) do
    s = a.sharding.codec
    stop = add(part.chunk_start, part.count)

    inner =
      for ip <-
            Indexing.plan(
              %{start: part.chunk_start, stop: stop, shape: part.count},
              s.chunk_shape
            ),
          do:
            {ShardingIndexed.linear(s, ip.chunk),
             {ip.chunk_start, add(part.out_start, ip.out_start), ip.count}}

    plan_shard(a, Array.chunk_key(a, part.chunk), inner, gap)
  end

  # The read of `inner` (`{i, tag}` inner chunks) from one shard:
  #   * `{:fill, [{tag, nil}]}`: nothing stored to read (the shard or the chunks are missing);
  #   * `{:ranges, key, generation, groups, fills, inner, gap}`: the stored chunks, with a
  #     group per run of nearby ones, to read from that generation of the shard; `fills` are
  #     the `{tag, nil}` of the others;
  #   * `{:shard, key, inner}`: the whole shard, when the store cannot read ranges.
  # A cached index is used only when it leaves something to read (the read then proves it
  # current); otherwise the index is read.
  defp plan_shard(a, key, inner, gap) do
    if Storage.supports_ranges?(a.storage),
      do: plan_ranges(a, key, inner, gap),
      else: {:ok, {:shard, key, inner}}
  end

  defp plan_ranges(a, key, inner, gap) do
    %__MODULE__{cache: cache, ref: ref} = a.sharding

    with {:ok, {index, generation}} <- IndexCache.fetch(cache, ref, key),
         {:ok, {:ranges, _, _, _, _, _, _}} = plan <-
           ranges_plan(a, key, index, generation, inner, gap) do
      plan
    else
      _no_index_nothing_to_read_or_corrupt -> plan_fresh(a, key, inner, gap)
    end
  end

  # As plan_ranges/4, with the index read from the store (and cached).
  defp plan_fresh(a, key, inner, gap) do
    %__MODULE__{codec: s, cache: cache, ref: ref} = a.sharding

    case Storage.get_ranges_with_generation(a.storage, key, [ShardingIndexed.index_range(s)]) do
      {:ok, [bytes], generation} ->
        with {:ok, index} <- with_key(ShardingIndexed.decode_index(s, bytes, nil), key) do
          IndexCache.put(cache, ref, key, {index, generation})
          ranges_plan(a, key, index, generation, inner, gap)
        end

      {:error, :not_found} ->
        {:ok, {:fill, for({_, tag} <- inner, do: {tag, nil})}}

      error ->
        error
    end
  end

  defp ranges_plan(a, key, index, generation, inner, gap) do
    s = a.sharding.codec

    split =
      Result.map_ok(inner, fn {i, tag} ->
        case ShardingIndexed.entry(s, index, i) do
          :empty -> {:ok, {:fill, {tag, nil}}}
          {:error, _} = error -> with_key(error, key)
          {offset, nbytes} -> {:ok, {:read, {offset, nbytes, tag}}}
        end
      end)

    with {:ok, split} <- split do
      {reads, fills} = Enum.split_with(split, &match?({:read, _}, &1))
      fills = Enum.map(fills, &elem(&1, 1))

      if reads == [],
        do: {:ok, {:fill, fills}},
        else:
          {:ok,
           {:ranges, key, generation, coalesce(Enum.map(reads, &elem(&1, 1)), gap), fills, inner,
            gap}}
    end
  end

  # Runs the reads of a region; each gives `{tag, bytes | nil}` for its inner chunks. Several
  # reads run concurrently, except small ones (below @local_read_bytes in all) on a store that
  # serves many ranges in one request (the filesystem): there a read costs about its bytes,
  # less than a task (32^3 cutouts across shards: p90 -40%).
  defp run_reads(a, reads) do
    concurrent? =
      match?([_, _ | _], reads) and
        (not Storage.multi_range?(a.storage) or read_bytes(reads, 0) >= @local_read_bytes)

    if concurrent? do
      reads
      |> Task.async_stream(&run_read(a, &1), max_concurrency: @io_concurrency, timeout: :infinity)
      |> Enum.map(fn {:ok, result} -> result end)
      |> Result.map_ok(& &1)
    else
      Result.map_ok(reads, &run_read(a, &1))
    end
  end

  # The bytes the reads fetch (a whole-shard read counts as large).
  defp read_bytes([], acc), do: acc
  defp read_bytes([{:shard, _, _} | _], _acc), do: @local_read_bytes

  defp read_bytes([{:ranges, _, _, groups, _, _, _} | rest], acc),
    do: read_bytes(rest, Enum.reduce(groups, acc, fn {first, last, _}, n -> n + last - first end))

  defp run_read(a, read, attempt \\ 1)

  defp run_read(_a, {:fill, fills}, _attempt), do: {:ok, fills}

  # Inner chunks read from the generation of the shard the index came from. When the shard
  # has been rewritten since (another handle or program), the index is stale: it is dropped,
  # read again and the chunks with it, up to @attempts times.
  defp run_read(a, {:ranges, key, generation, groups, fills, inner, gap}, attempt) do
    case fetch_groups(a.storage, key, generation, groups) do
      {:ok, fetched} ->
        {:ok, fills ++ fetched}

      {:error, {:shard_changed, ^key}} when attempt < @attempts ->
        %__MODULE__{cache: cache, ref: ref} = a.sharding
        IndexCache.delete(cache, ref, key)

        with {:ok, plan} <- plan_fresh(a, key, inner, gap),
             do: run_read(a, plan, attempt + 1)

      error ->
        error
    end
  end

  defp run_read(a, {:shard, key, inner}, _attempt) do
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

  # The spans of one value, read in one request from `generation` of it (any, when nil);
  # `{tag, bytes}` for each of their members. `{:shard_changed, key}` when the value is gone
  # or at another generation.
  defp fetch_groups(storage, key, generation, groups) do
    spans = for {first, last, _} <- groups, do: {first, last - first}

    case Storage.get_ranges_with_generation(storage, key, spans, generation) do
      {:ok, parts, _generation} ->
        groups
        |> Enum.zip(parts)
        |> Result.map_ok(fn {group, bytes} -> slice_group(key, group, bytes) end)
        |> case do
          {:ok, sliced} -> {:ok, Enum.concat(sliced)}
          error -> error
        end

      {:error, reason} when reason in [:not_found, :generation_mismatch] ->
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

  @doc """
  `ExZarr.Array.read_chunk/3` with `level: :inner`: one inner chunk, by its coordinates in the
  array's inner chunk grid (full inner chunk shape). `{:error, :not_found}` when not stored.
  """
  @spec read_inner_chunk(Array.t(), tuple()) :: {:ok, binary()} | {:error, term()}
  def read_inner_chunk(%Array{sharding: nil}, _coords), do: {:error, :not_sharded}

  def read_inner_chunk(%Array{} = a, coords) do
    s = a.sharding.codec

    if Indexing.valid_chunk?(a.metadata.shape, s.chunk_shape, coords) do
      shard = map2(coords, s.grid, &div/2)
      i = ShardingIndexed.linear(s, map2(coords, s.grid, &rem/2))

      with {:ok, [{^i, stored}]} <- read_stored(a, Array.chunk_key(a, shard), [{i, i}]),
           do: decode_inner(s, i, stored)
    else
      {:error, {:invalid_chunk_coords, coords}}
    end
  end

  @doc false
  # The stored bytes of inner chunks `inner` (`{i, tag}`) of the shard at `key`, all from one
  # generation of it: `{:ok, [{tag, bytes | nil}]}`, nil for a chunk not stored. Shared with
  # `ExZarr.Array.VarLen`.
  @spec read_stored(Array.t(), String.t(), [{non_neg_integer(), term()}]) ::
          {:ok, [{term(), binary() | nil}]} | {:error, term()}
  def read_stored(%Array{} = a, key, inner) do
    with {:ok, plan} <- plan_shard(a, key, inner, @coalesce_gap), do: run_read(a, plan)
  end

  defp decode_inner(_s, _i, nil), do: {:error, :not_found}

  defp decode_inner(s, i, stored) do
    with {:ok, [{_, chunk}]} <- ShardingIndexed.decode_chunks(s, [{i, stored}]), do: {:ok, chunk}
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
    |> Array.stream_map(shards, opts, &shard_inner_chunks(a, &1))
    |> Stream.flat_map(& &1)
  end

  defp shard_inner_chunks(a, shard_coords) do
    s = a.sharding.codec
    key = Array.chunk_key(a, shard_coords)

    with :ok <- ShardingIndexed.check_whole(s),
         {:ok, shard, index} <- load_shard(a, key) do
      inside =
        for i <- 0..(s.count - 1)//1,
            global <- [add(map2(shard_coords, s.grid, &(&1 * &2)), ShardingIndexed.coords(s, i))],
            Indexing.valid_chunk?(a.metadata.shape, s.chunk_shape, global),
            do: {i, global}

      stored =
        for {i, _} <- inside,
            {offset, nbytes} <- [ShardingIndexed.entry(index, i)],
            do: {i, binary_part(shard, offset, nbytes)}

      with {:ok, decoded} <- ShardingIndexed.decode_chunks(s, stored) do
        decoded = Map.new(decoded)
        fill = :binary.copy(a.fill_element, Indexing.product(s.chunk_shape))
        {:ok, for({i, global} <- inside, do: {global, Map.get(decoded, i, fill)})}
      end
    end
  end

  # -- writing ------------------------------------------------------------------------------

  @doc "`ExZarr.Array.set_slice/3` for sharded arrays."
  @spec set_slice(Array.t(), binary(), keyword()) :: :ok | {:error, term()}
  def set_slice(%Array{} = a, data, opts) do
    with {:ok, sel, parts} <- plan(a, opts),
         :ok <- Array.check_size(data, Indexing.product(sel.shape) * itemsize(a)) do
      a
      |> Array.run_parallel(parts, opts, &write_part(a, data, sel, &1))
      |> Result.each_ok(& &1)
    end
  end

  defp write_part(a, data, sel, part) do
    s = a.sharding.codec
    key = Array.chunk_key(a, part.chunk)
    extent = Indexing.chunk_extent(a.metadata.shape, a.metadata.chunks, part.chunk)
    stop = add(part.chunk_start, part.count)

    inner =
      Indexing.plan(%{start: part.chunk_start, stop: stop, shape: part.count}, s.chunk_shape)

    whole? = part.count == extent and zero?(part.chunk_start)

    write = fn ->
      with {:ok, shard, index} <- if(whole?, do: {:ok, nil, nil}, else: load_shard(a, key)) do
        touched = Map.new(inner, &{ShardingIndexed.linear(s, &1.chunk), &1})

        sources =
          for {i, ip} <- touched do
            piece = {data, sel.shape, add(part.out_start, ip.out_start), ip.chunk_start, ip.count}

            covered? =
              ip.count == Indexing.chunk_extent(extent, s.chunk_shape, ip.chunk) and
                zero?(ip.chunk_start)

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
                {i, offset, nbytes} <- ShardingIndexed.stored(index),
                not is_map_key(touched, i),
                do: {i, binary_part(shard, offset, nbytes)}
              )

        with {:ok, encoded} <- ShardingIndexed.encode_chunks(s, sources, a.write_empty_chunks),
             do: store_shard(a, key, kept ++ encoded)
      end
    end

    if whole?, do: write.(), else: Lock.run(a.storage, key, write)
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
    zeros = Tuple.duplicate(0, tuple_size(coords))

    cond do
      not Indexing.valid_chunk?(a.metadata.shape, a.metadata.chunks, coords) ->
        {:error, {:invalid_chunk_coords, coords}}

      byte_size(data) != Indexing.product(s.shard_shape) * itemsize(a) ->
        Array.check_size(data, Indexing.product(s.shard_shape) * itemsize(a))

      true ->
        with :ok <- ShardingIndexed.check_whole(s) do
          sources =
            for i <- 0..(s.count - 1)//1,
                do: {i, {data, s.shard_shape, ShardingIndexed.origin(s, i), zeros, s.chunk_shape}}

          with {:ok, encoded} <- ShardingIndexed.encode_chunks(s, sources, a.write_empty_chunks),
               do: store_shard(a, Array.chunk_key(a, coords), encoded)
        end
    end
  end

  defp store_shard(a, key, chunks) do
    %__MODULE__{codec: s, cache: cache, ref: ref} = a.sharding

    case ShardingIndexed.build_shard(s, chunks) do
      {:ok, {_shard, _index, 0}} ->
        with :ok <- Storage.delete(a.storage, key), do: IndexCache.delete(cache, ref, key)

      {:ok, {shard, _index, _count}} ->
        with :ok <- Storage.put(a.storage, key, shard), do: IndexCache.delete(cache, ref, key)

      error ->
        error
    end
  end

  # -- helpers ------------------------------------------------------------------------------

  # The array's planning and limits, plus the limit on the inner chunks a request touches.
  defp plan(a, opts) do
    with {:ok, sel, parts} <- Array.plan(a, opts),
         :ok <- Limits.check_parts(Indexing.part_count(sel, a.sharding.codec.chunk_shape)),
         do: {:ok, sel, parts}
  end

  defp itemsize(a), do: byte_size(a.fill_element)

  defp zero?(tuple), do: tuple |> Tuple.to_list() |> Enum.all?(&(&1 == 0))

  defp add(a, b), do: map2(a, b, &+/2)

  defp map2(a, b, fun),
    do: Enum.zip_with(Tuple.to_list(a), Tuple.to_list(b), fun) |> List.to_tuple()
end
