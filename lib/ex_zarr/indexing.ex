defmodule ExZarr.Indexing do
  @moduledoc """
  Pure selection arithmetic: which chunks a region touches and, for each, which part of the
  chunk maps to which part of the output.

  A selection is a box given by `start` (inclusive) and `stop` (exclusive) tuples. `chunks` is
  a chunk grid as `ExZarr.ChunkGrid` describes it: a tuple of chunk lengths (regular) or with
  lists of edges on some axes (rectilinear), or such a grid compiled by
  `ExZarr.ChunkGrid.compile/1` (cheaper when a grid is used many times).

      iex> {:ok, sel} = ExZarr.Indexing.selection({10}, start: {3}, stop: {7})
      iex> ExZarr.Indexing.plan(sel, {4})
      [
        %{chunk: {0}, chunk_start: {3}, out_start: {0}, count: {1}},
        %{chunk: {1}, chunk_start: {0}, out_start: {1}, count: {3}}
      ]
  """

  alias ExZarr.{ChunkGrid, Shape}

  @typedoc "A validated box: start and stop tuples and the resulting shape."
  @type selection :: %{start: tuple(), stop: tuple(), shape: tuple()}

  @typedoc "One chunk's share of a selection."
  @type part :: %{chunk: tuple(), chunk_start: tuple(), out_start: tuple(), count: tuple()}

  @doc """
  Validates `start:`/`stop:` options against an array shape (defaults: the whole array).

      iex> ExZarr.Indexing.selection({5, 5}, start: {0, 4}, stop: {2, 6})
      {:error, {:out_of_bounds, start: {0, 4}, stop: {2, 6}, shape: {5, 5}}}
  """
  @spec selection(tuple(), keyword()) :: {:ok, selection()} | {:error, term()}
  def selection(shape, opts) do
    n = tuple_size(shape)
    start = Keyword.get(opts, :start) || Tuple.duplicate(0, n)
    stop = Keyword.get(opts, :stop) || shape

    cond do
      not index_tuple?(start, n) ->
        {:error, {:invalid_start, start, ndim: n}}

      not index_tuple?(stop, n) ->
        {:error, {:invalid_stop, stop, ndim: n}}

      not in_bounds?(start, stop, shape, n) ->
        {:error, {:out_of_bounds, start: start, stop: stop, shape: shape}}

      true ->
        {:ok, %{start: start, stop: stop, shape: Shape.sub(stop, start)}}
    end
  end

  @doc """
  The chunks a selection touches, in C order of chunk coordinates, with the box inside each
  chunk (`chunk_start`, `count`) and where it lands in the output (`out_start`).
  An empty selection touches no chunk.
  """
  @spec plan(selection(), tuple()) :: [part()]
  def plan(%{start: start, stop: stop, shape: shape}, chunks) do
    if Shape.product(shape) == 0 do
      []
    else
      start
      |> per_axis(stop, ChunkGrid.compile(chunks), tuple_size(chunks), [])
      |> combine({}, {}, {}, {}, [])
    end
  end

  @doc """
  How many chunks `plan/2` would return, computed without building the plan.

      iex> {:ok, sel} = ExZarr.Indexing.selection({10, 10}, start: {3, 0}, stop: {7, 10})
      iex> ExZarr.Indexing.part_count(sel, {4, 4})
      6
  """
  @spec part_count(selection(), tuple()) :: non_neg_integer()
  def part_count(%{start: start, stop: stop, shape: shape}, chunks) do
    if Shape.product(shape) == 0,
      do: 0,
      else: count_parts(start, stop, ChunkGrid.compile(chunks), tuple_size(chunks), 1)
  end

  defp count_parts(_start, _stop, _chunks, 0, acc), do: acc

  defp count_parts(start, stop, chunks, i, acc) do
    c = elem(chunks, i - 1)

    n =
      ChunkGrid.axis_chunk(c, elem(stop, i - 1) - 1) - ChunkGrid.axis_chunk(c, elem(start, i - 1)) +
        1

    count_parts(start, stop, chunks, i - 1, acc * n)
  end

  @doc """
  The chunk holding the element at `index` and the element's position inside that chunk.

      iex> ExZarr.Indexing.locate({[16, 10], [24, 14]}, {20, 15})
      {{1, 0}, {4, 15}}
      iex> ExZarr.Indexing.locate({4, 4}, {9, 3})
      {{2, 0}, {1, 3}}
  """
  @spec locate(tuple(), tuple()) :: {tuple(), tuple()}
  def locate(chunks, index) do
    grid = ChunkGrid.compile(chunks)
    coords = Shape.zip_with(grid, index, &ChunkGrid.axis_chunk/2)
    {coords, Shape.zip_with(index, chunk_origin(grid, coords), &-/2)}
  end

  @doc """
  Where the chunk at `coords` starts in the array.

      iex> ExZarr.Indexing.chunk_origin({[16, 10], 24}, {1, 2})
      {16, 48}
  """
  @spec chunk_origin(tuple(), tuple()) :: tuple()
  def chunk_origin(chunks, coords),
    do: Shape.zip_with(ChunkGrid.compile(chunks), coords, &ChunkGrid.axis_start/2)

  @doc """
  The full shape of the chunk at `coords` (an edge chunk is whole; see `chunk_extent/3`).

      iex> ExZarr.Indexing.chunk_shape({[16, 10], 24}, {1, 0})
      {10, 24}
  """
  @spec chunk_shape(tuple(), tuple()) :: tuple()
  def chunk_shape(chunks, coords), do: ChunkGrid.chunk_shape(chunks, coords)

  @doc """
  Number of chunks along each axis.

      iex> ExZarr.Indexing.grid_shape({10, 0, 7}, {5, 3, 7})
      {2, 0, 1}
  """
  @spec grid_shape(tuple(), tuple()) :: tuple()
  def grid_shape(shape, chunks),
    do: Shape.zip_with(ChunkGrid.compile(chunks), shape, &ChunkGrid.axis_count/2)

  @doc """
  Every chunk coordinate of the grid, lazily, in C order.

      iex> ExZarr.Indexing.chunk_coords({3, 4}, {2, 4}) |> Enum.to_list()
      [{0, 0}, {1, 0}]
  """
  @spec chunk_coords(tuple(), tuple()) :: Enumerable.t()
  def chunk_coords(shape, chunks) do
    grid = grid_shape(shape, chunks)
    Stream.map(0..(Shape.product(grid) - 1)//1, &Shape.unravel(&1, grid))
  end

  @typedoc "A box of chunk coordinates of a chunk grid: first and stop (exclusive) along each axis."
  @type grid_box :: {tuple(), tuple()}

  @doc """
  What changing an array's shape from `old` to `new` (same number of dimensions) does to its
  grid of `chunks`, as disjoint boxes of chunk coordinates of the old grid (empty boxes left
  out): `clear`, the chunks kept but cut by a shrunk dimension (their part beyond the new
  shape is to be reset to the fill value), and `delete`, the chunks wholly outside the new
  shape. Growing a dimension changes no chunk. Computed from the grid's shape alone: the
  boxes may hold more coordinates than there are chunks (see `box_size/1`).

      iex> ExZarr.Indexing.resize_boxes({10, 10}, {5, 10}, {4, 4})
      %{clear: [{{1, 0}, {2, 3}}], delete: [{{2, 0}, {3, 3}}]}
      iex> ExZarr.Indexing.resize_boxes({10, 10}, {12, 10}, {4, 4})
      %{clear: [], delete: []}
  """
  @spec resize_boxes(tuple(), tuple(), tuple()) :: %{clear: [grid_box()], delete: [grid_box()]}
  def resize_boxes(old, new, chunks) do
    chunks = ChunkGrid.compile(chunks)
    old_grid = grid_shape(old, chunks)
    kept = Shape.zip_with(old_grid, grid_shape(new, chunks), &min/2)
    dims = Enum.to_list(0..(tuple_size(old) - 1)//1)
    zero = Tuple.duplicate(0, tuple_size(old))

    # The k-th shrunk dimension's boxes: its removed (or border) chunks, the earlier shrunk
    # dimensions limited to what they keep (covered by their own box otherwise).
    split = fn shrunk, slab, earlier_stop ->
      shrunk
      |> Enum.with_index()
      |> Enum.map(fn {d, k} ->
        stop = Enum.reduce(Enum.take(shrunk, k), old_grid, &put_elem(&2, &1, earlier_stop.(&1)))
        {first, last} = slab.(d)
        {put_elem(zero, d, first), put_elem(stop, d, last)}
      end)
      |> Enum.reject(&(box_size(&1) == 0))
    end

    outside = Enum.filter(dims, &(elem(kept, &1) < elem(old_grid, &1)))

    cut =
      Enum.filter(dims, fn d ->
        elem(new, d) < elem(old, d) and not ChunkGrid.boundary?(elem(chunks, d), elem(new, d))
      end)

    # Only the kept chunks can be cut: the box of kept chunks, less the border of earlier cuts.
    kept_box = fn d -> {elem(kept, d) - 1, elem(kept, d)} end

    clear =
      cut
      |> split.(kept_box, &(elem(kept, &1) - 1))
      |> Enum.map(fn {first, stop} -> {first, Shape.zip_with(stop, kept, &min/2)} end)
      |> Enum.reject(&(box_size(&1) == 0))

    %{
      clear: clear,
      delete: split.(outside, &{elem(kept, &1), elem(old_grid, &1)}, &elem(kept, &1))
    }
  end

  @doc """
  The number of chunk coordinates in a box (or a list of disjoint boxes).

      iex> ExZarr.Indexing.box_size({{1, 0}, {3, 4}})
      8
      iex> ExZarr.Indexing.box_size([{{0}, {2}}, {{5}, {4}}])
      2
  """
  @spec box_size(grid_box() | [grid_box()]) :: non_neg_integer()
  def box_size(boxes) when is_list(boxes), do: boxes |> Enum.map(&box_size/1) |> Enum.sum()
  def box_size({first, stop}), do: Shape.product(Shape.zip_with(stop, first, &max(&1 - &2, 0)))

  @doc """
  Every chunk coordinate of a box, lazily, in C order (no work for an empty box, however
  large its other dimensions).

      iex> ExZarr.Indexing.box_coords({{1, 0}, {3, 2}}) |> Enum.to_list()
      [{1, 0}, {1, 1}, {2, 0}, {2, 1}]
  """
  @spec box_coords(grid_box()) :: Enumerable.t()
  def box_coords({first, stop} = box) do
    extent = Shape.zip_with(stop, first, &max(&1 - &2, 0))

    Stream.map(0..(box_size(box) - 1)//1, fn i ->
      Shape.zip_with(Shape.unravel(i, extent), first, &+/2)
    end)
  end

  @doc """
  True when chunk coordinates lie in one of the boxes.

      iex> ExZarr.Indexing.in_boxes?({2, 5}, [{{0, 0}, {1, 9}}, {{2, 0}, {3, 9}}])
      true
  """
  @spec in_boxes?(tuple(), [grid_box()]) :: boolean()
  def in_boxes?(coords, boxes) do
    Enum.any?(boxes, fn {first, stop} ->
      tuple_size(coords) == tuple_size(first) and
        Enum.all?(0..(tuple_size(first) - 1)//1, fn d ->
          elem(coords, d) >= elem(first, d) and elem(coords, d) < elem(stop, d)
        end)
    end)
  end

  @doc """
  The part of chunk `coords` that lies inside the array (the rest of an edge chunk is padding),
  as a selection-local box: `{count}` along each axis.

      iex> ExZarr.Indexing.chunk_extent({10, 10}, {4, 4}, {2, 0})
      {2, 4}
  """
  @spec chunk_extent(tuple(), tuple(), tuple()) :: tuple()
  def chunk_extent(shape, chunks, coords),
    do: extent(shape, ChunkGrid.compile(chunks), coords, tuple_size(shape), [])

  defp extent(_shape, _chunks, _coords, 0, acc), do: List.to_tuple(acc)

  defp extent(shape, chunks, coords, i, acc) do
    {axis, c} = {elem(chunks, i - 1), elem(coords, i - 1)}
    n = min(ChunkGrid.axis_size(axis, c), elem(shape, i - 1) - ChunkGrid.axis_start(axis, c))
    extent(shape, chunks, coords, i - 1, [n | acc])
  end

  @doc """
  Where the box `start`/`count` of a C-order array of `shape` lies when its elements are one
  contiguous run: `{:ok, first_element, element_count}`, else `:error`. A box is contiguous
  when it is a single index along every axis before some axis and whole along every axis after
  it.

      iex> ExZarr.Indexing.contiguous({8, 4}, {2, 0}, {3, 4})
      {:ok, 8, 12}
      iex> ExZarr.Indexing.contiguous({8, 4}, {2, 1}, {3, 2})
      :error
  """
  @spec contiguous(tuple(), tuple(), tuple()) ::
          {:ok, non_neg_integer(), non_neg_integer()} | :error
  def contiguous(shape, start, count), do: contiguous(shape, start, count, tuple_size(shape), 1)

  # From the last axis: whole axes while the count equals the shape; then one partial axis;
  # then single indices only. `stride` is the element count of one index of the current axis.
  defp contiguous(_shape, _start, _count, 0, _stride), do: {:ok, 0, 1}

  defp contiguous(shape, start, count, i, stride) do
    size = elem(shape, i - 1)

    if elem(count, i - 1) == size and i > 1 do
      contiguous(shape, start, count, i - 1, stride * size)
    else
      if singles?(count, i - 1),
        do: {:ok, offset(shape, start, i, stride, 0), elem(count, i - 1) * stride},
        else: :error
    end
  end

  defp singles?(_count, 0), do: true
  defp singles?(count, i), do: elem(count, i - 1) == 1 and singles?(count, i - 1)

  # Element offset of the box's first element: start[k] * stride(k) for the axes up to `i`.
  defp offset(_shape, _start, 0, _stride, acc), do: acc

  defp offset(shape, start, i, stride, acc),
    do:
      offset(shape, start, i - 1, stride * elem(shape, i - 1), acc + elem(start, i - 1) * stride)

  @doc "True when the coordinates name a chunk of the grid."
  @spec valid_chunk?(tuple(), tuple(), tuple()) :: boolean()
  def valid_chunk?(shape, chunks, coords),
    do:
      index_tuple?(coords, tuple_size(shape)) and
        in_grid?(grid_shape(shape, chunks), coords, tuple_size(shape))

  defp in_grid?(_grid, _coords, 0), do: true

  defp in_grid?(grid, coords, i),
    do: elem(coords, i - 1) < elem(grid, i - 1) and in_grid?(grid, coords, i - 1)

  # For each axis, `{chunk, start_in_chunk, start_in_output, count}` of the chunks it crosses,
  # last chunk first.
  defp per_axis(_start, _stop, _chunks, 0, acc), do: acc

  defp per_axis(start, stop, chunks, i, acc) do
    {a, b, axis} = {elem(start, i - 1), elem(stop, i - 1), elem(chunks, i - 1)}

    parts =
      axis_parts(a, b, axis, ChunkGrid.axis_chunk(axis, a), ChunkGrid.axis_chunk(axis, b - 1), [])

    per_axis(start, stop, chunks, i - 1, [parts | acc])
  end

  defp axis_parts(_start, _stop, _axis, c, last, acc) when c > last, do: acc

  defp axis_parts(start, stop, axis, c, last, acc) do
    first = ChunkGrid.axis_start(axis, c)
    lo = max(start, first)
    hi = min(stop, first + ChunkGrid.axis_size(axis, c))
    axis_parts(start, stop, axis, c + 1, last, [{c, lo - first, lo - start, hi - lo} | acc])
  end

  # The cartesian product of the axes' parts as plan parts, in C order: the tuples grow one
  # axis at a time and each axis is walked from its end, so parts are prepended in order.
  defp combine([], c, s, o, n, acc),
    do: [%{chunk: c, chunk_start: s, out_start: o, count: n} | acc]

  defp combine([axis | rest], c, s, o, n, acc), do: combine_axis(axis, rest, c, s, o, n, acc)

  defp combine_axis([], _rest, _c, _s, _o, _n, acc), do: acc

  defp combine_axis([{ci, si, oi, ni} | more], rest, c, s, o, n, acc) do
    acc =
      combine(
        rest,
        :erlang.append_element(c, ci),
        :erlang.append_element(s, si),
        :erlang.append_element(o, oi),
        :erlang.append_element(n, ni),
        acc
      )

    combine_axis(more, rest, c, s, o, n, acc)
  end

  defp index_tuple?(t, n) when is_tuple(t) and tuple_size(t) == n, do: indices?(t, n)
  defp index_tuple?(_t, _n), do: false

  defp indices?(_t, 0), do: true

  defp indices?(t, i) do
    case elem(t, i - 1) do
      v when is_integer(v) and v >= 0 -> indices?(t, i - 1)
      _ -> false
    end
  end

  defp in_bounds?(_start, _stop, _shape, 0), do: true

  defp in_bounds?(start, stop, shape, i) do
    b = elem(stop, i - 1)
    elem(start, i - 1) <= b and b <= elem(shape, i - 1) and in_bounds?(start, stop, shape, i - 1)
  end
end
