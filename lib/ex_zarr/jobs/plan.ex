defmodule ExZarr.Jobs.Plan do
  @moduledoc false
  # What a map unit costs in memory, and how a copy keeps under `max_memory:` per node.
  #
  # A unit over `box` holds the source chunks the box touches (decoded and encoded: a read
  # takes whole chunks, the inner chunks of a sharded source), the box's source data, the
  # function's result, and the target chunks it writes (decoded and encoded).
  #
  # The direct plan's block (`block/4`) takes units large enough that they decode the source
  # chunks as few times as the budget allows, while the nodes share the work.
  #
  # A copy whose direct units (blocks of target chunks, each reading the source chunks it
  # touches) do not fit, or decode the source too many times over (`rereads/3`), goes
  # through an intermediate array, choosing chunks by rechunker's
  # rule: the write chunks are target chunks consolidated up to the memory budget (from the
  # last axis to the first), the read chunks are source chunks consolidated up to the same
  # budget but no larger than the write chunks along any axis, and the intermediate chunks
  # are the smaller of the two along each axis. Stage one copies blocks of intermediate
  # chunks about a read chunk large (so each reads few source chunks), stage two copies
  # blocks of target chunks a write chunk large (each reads few intermediate chunks); both
  # write whole chunks (stage one whole shards of the intermediate array), so their units
  # stay idempotent.

  alias ExZarr.{DType, Metadata}

  @type box :: %{start: tuple(), stop: tuple()}
  @type grid :: %{shape: [pos_integer()], chunks: [pos_integer()], itemsize: pos_integer()}

  @doc """
  The read grid of an array (its inner chunks when sharded) or its write grid (its chunks or
  shards), or an error for dtypes without a size and grids without one chunk shape.
  """
  @spec grid(map(), :read | :write) :: {:ok, grid()} | {:error, term()}
  def grid(meta, which) do
    chunks = chunks(meta, which)

    cond do
      DType.itemsize(meta.dtype) == 0 ->
        {:error, {:max_memory_unsupported_dtype, meta.dtype}}

      not Enum.all?(chunks, &is_integer/1) ->
        {:error, {:max_memory_unsupported_grid, meta.chunks}}

      true ->
        {:ok,
         %{shape: Tuple.to_list(meta.shape), chunks: chunks, itemsize: DType.itemsize(meta.dtype)}}
    end
  end

  defp chunks(meta, :read), do: meta |> Metadata.chunk_shapes() |> elem(0) |> Tuple.to_list()
  defp chunks(meta, :write), do: Tuple.to_list(meta.chunks)

  @doc "The bytes a node holds while it runs a map unit over `box` from `src` to `dst`."
  @spec unit_bytes(grid(), grid(), box()) :: non_neg_integer()
  def unit_bytes(src, dst, box) do
    elems = box |> extents() |> Enum.product()
    held(covered(src, box), elems, covered(dst, box), src.itemsize, dst.itemsize)
  end

  # Bytes held by a unit decoding `read` source elements (whole chunks, decoded and encoded)
  # into its box of `elems`, turned into a result, written to `written` target elements
  # (whole chunks, decoded and encoded).
  defp held(read, elems, written, src_size, dst_size),
    do: 2 * read * src_size + elems * (src_size + dst_size) + 2 * written * dst_size

  defp extents(%{start: start, stop: stop}),
    do: Enum.zip_with(Tuple.to_list(start), Tuple.to_list(stop), &(&2 - &1))

  # Elements of the whole chunks of `grid` that `box` touches.
  defp covered(grid, %{start: start, stop: stop}) do
    [grid.shape, grid.chunks, Tuple.to_list(start), Tuple.to_list(stop)]
    |> Enum.zip_with(fn [n, c, s, e] ->
      if e <= s, do: 0, else: min(ceil_div(e, c) * c, n) - div(s, c) * c
    end)
    |> Enum.product()
  end

  defp ceil_div(a, b), do: div(a + b - 1, b)

  @doc """
  The block (target chunks per unit along each axis) of a direct plan from `src` to `dst`
  run by `nodes` nodes, each unit holding at most `budget` bytes (`unit_bytes/3`): the block
  whose units read the fewest source chunks again while the nodes share the work. Its
  estimate of a job's time is the units a node runs in turn (`ceil(units / nodes)`) times
  the largest unit's work (the source chunks it decodes and the target elements it
  encodes): a single unit already decodes and encodes its chunks in parallel on its node, so
  only the nodes count. Ties go to more units; a block of one chunk when none larger fits.
  """
  @spec block(grid(), grid(), pos_integer(), pos_integer()) :: [pos_integer()]
  def block(src, dst, budget, nodes) do
    axes = Enum.zip([src.shape, src.chunks, dst.chunks])
    cap = max(2, floor(:math.pow(20_000, 1 / max(length(axes), 1))))

    axes
    |> Enum.map(&axis_options(&1, cap))
    |> combinations()
    |> Enum.map(&estimate(&1, src.itemsize, dst.itemsize, nodes))
    |> Enum.filter(&(&1.bytes <= budget))
    |> Enum.min_by(&{&1.time, -&1.units}, fn -> nil end)
    |> case do
      nil -> Enum.map(axes, fn _ -> 1 end)
      best -> best.block
    end
  end

  # The candidate blocks along one axis (powers of two, and splits of the axis into one to
  # eight parts, at most `cap` of them), each with its units' count, the most source elements
  # one unit decodes along the axis and its largest extent.
  defp axis_options({n, src_chunk, dst_chunk}, cap) do
    count = ceil_div(n, dst_chunk)
    powers = Stream.iterate(1, &(&1 * 2)) |> Enum.take_while(&(&1 < count))
    splits = for k <- 1..8, k <= count, do: ceil_div(count, k)

    (powers ++ splits)
    |> Enum.uniq()
    |> Enum.sort()
    |> thin(cap)
    |> Enum.map(fn b ->
      units = ceil_div(count, b)
      # the source chunks a unit touches repeat with the unit's start modulo a source chunk:
      # the first `period` units and the last (cut at the array's end) show every case
      period = div(src_chunk, Integer.gcd(b * dst_chunk, src_chunk))
      seen = Enum.uniq([units - 1 | Enum.to_list(0..(min(units, period + 1) - 1))])
      read = Enum.map(seen, &range_read(n, src_chunk, dst_chunk, b, &1))
      %{block: b, units: units, read: Enum.max(read), extent: min(b * dst_chunk, n)}
    end)
  end

  @doc """
  How many times over units of `block` target chunks decode the source: the source elements
  they decode in all (whole chunks of `src`) divided by the array's elements.
  """
  @spec rereads(grid(), grid(), [pos_integer()]) :: number()
  def rereads(src, dst, block) do
    [src.shape, src.chunks, dst.chunks, block]
    |> Enum.zip_with(fn [n, src_chunk, dst_chunk, b] ->
      read = axis_reads(n, src_chunk, dst_chunk, b)
      if n == 0, do: 1, else: Enum.sum(read) / n
    end)
    |> Enum.product()
  end

  # The source elements each unit of `b` target chunks decodes along one axis.
  defp axis_reads(n, src_chunk, dst_chunk, b) do
    units = ceil_div(ceil_div(n, dst_chunk), b)
    for k <- 0..(units - 1)//1, do: range_read(n, src_chunk, dst_chunk, b, k)
  end

  # The source elements that unit `k` (of `b` target chunks) decodes along the axis.
  defp range_read(n, src_chunk, dst_chunk, b, k) do
    {s, e} = {k * b * dst_chunk, min((k + 1) * b * dst_chunk, n)}
    min(ceil_div(e, src_chunk) * src_chunk, n) - div(s, src_chunk) * src_chunk
  end

  # At most `cap` of the sorted `values`, evenly spread, the first and the last kept.
  defp thin(values, cap) when length(values) <= cap, do: values

  defp thin(values, cap) do
    last = length(values) - 1
    Enum.uniq(for i <- 0..(cap - 1), do: Enum.at(values, div(i * last, cap - 1)))
  end

  defp combinations([]), do: [[]]
  defp combinations([axis | rest]), do: for(o <- axis, more <- combinations(rest), do: [o | more])

  defp estimate(options, src_size, dst_size, nodes) do
    units = options |> Enum.map(& &1.units) |> Enum.product()
    read = options |> Enum.map(& &1.read) |> Enum.product()
    box = options |> Enum.map(& &1.extent) |> Enum.product()

    %{
      block: Enum.map(options, & &1.block),
      units: units,
      time: ceil_div(units, nodes) * (read * src_size + box * dst_size),
      bytes: held(read, box, box, src_size, dst_size)
    }
  end

  @doc """
  Rechunker's single-stage plan for a per-unit budget of `budget` bytes: `%{write:, read:,
  intermediate:}` chunk shapes (lists), and the blocks (intermediate chunks per stage-one
  unit, target chunks per stage-two unit).
  """
  @spec rechunk(grid(), grid(), pos_integer()) :: map()
  def rechunk(src, dst, budget) do
    # a unit holds about six copies of its box (see unit_bytes/3); consolidate for one
    mem = div(budget, 6 * max(src.itemsize, dst.itemsize))
    write = consolidate(dst.shape, dst.chunks, mem, dst.shape)
    read = consolidate(src.shape, src.chunks, mem, write)
    int = Enum.zip_with(read, write, &min/2)

    %{
      write: write,
      read: read,
      intermediate: int,
      block1: Enum.zip_with(read, int, &max(1, div(&1, &2))),
      block2: Enum.zip_with(write, dst.chunks, &max(1, div(&1, &2)))
    }
  end

  # Grows `chunks` by whole multiples, last axis first, while the product stays under `mem`
  # elements, no larger than `limits` (nor the shape) along any axis.
  defp consolidate(shape, chunks, mem, limits) do
    axes = Enum.zip([shape, chunks, limits]) |> Enum.with_index() |> Enum.reverse()

    Enum.reduce(axes, chunks, fn {{n, c, limit}, i}, acc ->
      others = div(Enum.product(acc), Enum.at(acc, i))
      cap = min(n, limit)
      fit = min(div(max(mem, 0), others), cap)
      # whole multiples of the chunk, or the whole axis
      grown = if fit == n, do: n, else: div(fit, c) * c
      List.replace_at(acc, i, max(c, grown))
    end)
  end
end
