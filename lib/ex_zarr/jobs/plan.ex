defmodule ExZarr.Jobs.Plan do
  @moduledoc false
  # What a map unit costs in memory, and how a copy keeps under `max_memory:` per node.
  #
  # A unit over `box` holds the source chunks the box touches (decoded and encoded: a read
  # takes whole chunks, the inner chunks of a sharded source), the box's source data, the
  # function's result, and the target chunks it writes (decoded and encoded).
  #
  # A copy whose direct units (blocks of target chunks, each reading the source chunks it
  # touches) do not fit goes through an intermediate array, choosing chunks by rechunker's
  # rule: the write chunks are target chunks consolidated up to the memory budget (from the
  # last axis to the first), the read chunks are source chunks consolidated up to the same
  # budget but no larger than the write chunks along any axis, and the intermediate chunks
  # are the smaller of the two along each axis. Stage one copies blocks of intermediate
  # chunks about a read chunk large (so each reads few source chunks), stage two copies
  # blocks of target chunks a write chunk large (each reads few intermediate chunks); both
  # write whole chunks, so their units stay idempotent.

  alias ExZarr.DType

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

  defp chunks(meta, :read) do
    case Enum.find(meta.codecs, &(&1.name == "sharding_indexed")) do
      %{configuration: %{"chunk_shape" => inner}} -> inner_list(inner)
      nil -> Tuple.to_list(meta.chunks)
    end
  end

  defp chunks(meta, :write), do: Tuple.to_list(meta.chunks)

  defp inner_list(inner) when is_tuple(inner), do: Tuple.to_list(inner)
  defp inner_list(inner) when is_list(inner), do: inner

  @doc "The bytes a node holds while it runs a map unit over `box` from `src` to `dst`."
  @spec unit_bytes(grid(), grid(), box()) :: non_neg_integer()
  def unit_bytes(src, dst, box) do
    elems = box |> extents() |> Enum.product()

    2 * covered(src, box) * src.itemsize + elems * (src.itemsize + dst.itemsize) +
      2 * covered(dst, box) * dst.itemsize
  end

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
