defmodule ExZarr.Indexing.Selection do
  @moduledoc """
  Pure planning of selections beyond boxes: boxes with steps, orthogonal selections (one
  entry per axis, their outer product), points (coordinates, or a mask over the whole
  array) and blocks of the chunk grid.

  A selection entry, one per axis, is an integer (negative counts from the end, the axis is
  dropped from `selection_shape/1`), a range `first..last//step` (inclusive, negative ends
  count from the end, `step >= 1`), `:all`, a list of integers (any order, repeats allowed)
  or a list of booleans as long as the axis (a mask along it).

  `plan/3` splits a selection into the parts of the chunks it touches, each chunk once, like
  `ExZarr.Indexing.plan/2` does for a box: `chunk_start` is a box start (integers), or holds
  index lists (binaries of little-endian uint64, see `t:ExZarr.Native.start/0`) for the axes
  where the chunk's elements are not one run, or is `{:flat, list}` for points (positions in
  the chunk taken as one flat axis). Within every part the elements are in sorted order, so
  that each part fills a box of the output; the order it returns (`t:order/0`) then puts the
  output in the caller's order.

      iex> {:ok, sel} = ExZarr.Indexing.Selection.orthogonal({10}, {1..8//3})
      iex> ExZarr.Indexing.Selection.selection_shape(sel)
      {3}
      iex> {parts, nil} = ExZarr.Indexing.Selection.plan(sel, {5})
      iex> Enum.map(parts, &{&1.chunk, &1.out_start, &1.count})
      [{{0}, {0}, {2}}, {{1}, {2}, {1}}]
  """

  alias ExZarr.{ChunkGrid, Indexing, Native, Shape}

  @typedoc "One axis of an orthogonal selection: `n` positions from `start` by `step`, or sorted positions."
  @type axis ::
          {:slice, non_neg_integer(), pos_integer(), non_neg_integer()}
          | {:list, [non_neg_integer()]}

  @typedoc """
  A validated selection. `shape` is the output's shape with every axis kept (the data is the
  same as with the dropped axes of `selection_shape/1` removed).
  """
  @type t ::
          %{
            kind: :orthogonal,
            axes: [axis()],
            drop: [boolean()],
            perm: [nil | {binary(), binary()}],
            shape: tuple()
          }
          | %{kind: :points, array: tuple(), points: binary(), shape: {non_neg_integer()}}

  @typedoc """
  How the output of the parts becomes the caller's order, as the start of a gathering piece of
  `ExZarr.Native.copy_regions/4` over the output's shape: `{:orthogonal, read, write}` (`read`
  takes the sorted output to the caller's order, `write` takes the caller's data to sorted
  order), `{:points, order}` (grouped point `j` is the caller's point `order[j]`), or nil when
  the parts are in the caller's order already.
  """
  @type order :: nil | {:orthogonal, tuple(), tuple()} | {:points, binary()}

  @typedoc "A part of a selection: as `t:ExZarr.Indexing.part/0`, with index lists."
  @type part :: %{
          chunk: tuple(),
          chunk_start: tuple() | {:flat, binary()},
          out_start: tuple(),
          count: tuple()
        }

  # -- building selections ------------------------------------------------------------------

  @doc """
  An orthogonal selection: a tuple of one entry per axis (a single entry for a 1-d array).

      iex> ExZarr.Indexing.Selection.orthogonal({4, 5}, {-1, [true, false, true, false, true]})
      ...> |> elem(1) |> ExZarr.Indexing.Selection.selection_shape()
      {3}
      iex> ExZarr.Indexing.Selection.orthogonal({4, 5}, {4, :all})
      {:error, {:index_out_of_range, axis: 0, index: 4, size: 4}}
  """
  @spec orthogonal(tuple(), tuple() | term()) :: {:ok, t()} | {:error, term()}
  def orthogonal(shape, selection) do
    selection = if is_tuple(selection), do: selection, else: {selection}

    with :ok <- check_rank(shape, selection),
         {:ok, entries} <- entries(shape, Tuple.to_list(selection)) do
      {axes, drop, perm} = unzip3(entries)
      {:ok, %{kind: :orthogonal, axes: axes, drop: drop, perm: perm, shape: out_shape(axes)}}
    end
  end

  defp check_rank(shape, selection) do
    if tuple_size(selection) == tuple_size(shape),
      do: :ok,
      else: {:error, {:wrong_selection_rank, got: tuple_size(selection), ndim: tuple_size(shape)}}
  end

  defp entries(shape, list) do
    list
    |> Enum.with_index()
    |> ExZarr.Result.map_ok(fn {e, k} -> entry(e, elem(shape, k), k) end)
  end

  defp unzip3(entries) do
    {Enum.map(entries, &elem(&1, 0)), Enum.map(entries, &elem(&1, 1)),
     Enum.map(entries, &elem(&1, 2))}
  end

  @doc """
  A box with steps: `start:` and `stop:` (exclusive, defaults the whole array) as
  `ExZarr.Indexing.selection/2` takes them, and `step:` (a tuple of positive integers,
  default all 1).

      iex> {:ok, sel} = ExZarr.Indexing.Selection.slice({10, 10}, start: {1, 0}, stop: {10, 10}, step: {4, 5})
      iex> sel.shape
      {3, 2}
      iex> ExZarr.Indexing.Selection.slice({10}, step: {0})
      {:error, {:invalid_step, axis: 0, step: 0}}
  """
  @spec slice(tuple(), keyword()) :: {:ok, t()} | {:error, term()}
  def slice(shape, opts) do
    n = tuple_size(shape)
    step = Keyword.get(opts, :step) || Tuple.duplicate(1, n)

    with {:ok, box} <- Indexing.selection(shape, Keyword.take(opts, [:start, :stop])),
         :ok <- check_steps(step, n) do
      axes =
        for k <- 0..(n - 1)//1 do
          {a, b, s} = {elem(box.start, k), elem(box.stop, k), elem(step, k)}
          {:slice, a, s, div(b - a + s - 1, s)}
        end

      {:ok, boxes(axes)}
    end
  end

  # Axes of sorted positions, none dropped.
  defp boxes(axes) do
    n = length(axes)

    %{
      kind: :orthogonal,
      axes: axes,
      drop: List.duplicate(false, n),
      perm: List.duplicate(nil, n),
      shape: out_shape(axes)
    }
  end

  defp check_steps(step, n) when is_tuple(step) and tuple_size(step) == n do
    Enum.find_value(0..(n - 1)//1, :ok, fn k ->
      s = elem(step, k)
      if not is_integer(s) or s < 1, do: {:error, {:invalid_step, axis: k, step: s}}
    end)
  end

  defp check_steps(step, n), do: {:error, {:invalid_step, step, ndim: n}}

  @doc """
  A selection of whole chunks: one entry per axis, an integer or a step-1 range of chunk
  indices (negative from the end of the grid) or `:all` (zarr-python's `blocks`). No axis is
  dropped.

      iex> {:ok, sel} = ExZarr.Indexing.Selection.blocks({10, 10}, {4, 4}, {-1, 0..1})
      iex> ExZarr.Indexing.Selection.selection_shape(sel)
      {2, 8}
  """
  @spec blocks(tuple(), tuple(), tuple() | term()) :: {:ok, t()} | {:error, term()}
  def blocks(shape, chunks, selection) do
    selection = if is_tuple(selection), do: selection, else: {selection}
    chunks = ChunkGrid.compile(chunks)
    grid = Indexing.grid_shape(shape, chunks)

    with :ok <- check_rank(shape, selection),
         {:ok, axes} <-
           selection
           |> Tuple.to_list()
           |> Enum.with_index()
           |> ExZarr.Result.map_ok(fn {e, k} ->
             block_axis(e, elem(grid, k), elem(chunks, k), elem(shape, k), k)
           end) do
      {:ok, boxes(axes)}
    end
  end

  defp block_axis(e, grid, chunk, size, k) do
    case e do
      %Range{step: step} when step != 1 -> {:error, {:invalid_step, axis: k, step: step}}
      i when is_integer(i) -> block_axis(i..i//1, grid, chunk, size, k)
      :all -> {:ok, {:slice, 0, 1, size}}
      _ -> block_range(e, grid, chunk, size, k)
    end
  end

  defp block_range(e, grid, chunk, size, k) do
    with {:ok, {{:slice, first, 1, n}, _, _}} <- entry(e, grid, k) do
      lo = min(ChunkGrid.axis_start(chunk, first), size)
      hi = min(ChunkGrid.axis_start(chunk, first + n), size)
      {:ok, {:slice, lo, 1, if(n == 0, do: 0, else: hi - lo)}}
    else
      {:error, _} = error -> error
      _ -> {:error, {:invalid_block_selection, axis: k, entry: e}}
    end
  end

  @doc """
  A point selection from a list of index tuples (negative from the end); the output holds one
  element per point, in the given order.

      iex> {:ok, sel} = ExZarr.Indexing.Selection.coordinates({3, 4}, [{0, -1}, {2, 1}])
      iex> sel.shape
      {2}
      iex> ExZarr.Indexing.Selection.coordinates({3, 4}, [{0, 4}])
      {:error, {:index_out_of_range, point: 0, axis: 1, index: 4, size: 4}}
  """
  @spec coordinates(tuple(), [tuple()]) :: {:ok, t()} | {:error, term()}
  def coordinates(shape, points) when is_list(points) do
    # Linear indices natively in one pass; a point it refuses is explained by the Elixir pass.
    # (The native pass refuses an improper list before it looks at any point.)
    case Native.linear_points(points, shape) do
      {:ok, bin} -> {:ok, points_selection(shape, bin)}
      {:error, j} when is_integer(j) -> linear_all(shape, points)
      {:error, _not_a_list_or_too_large} -> {:error, {:invalid_points, points}}
    end
  end

  def coordinates(_shape, points), do: {:error, {:invalid_points, points}}

  defp points_selection(shape, bin),
    do: %{kind: :points, array: shape, points: bin, shape: {div(byte_size(bin), 8)}}

  # The points' linear indices one by one, or the error of the first point that is not one.
  defp linear_all(shape, points) do
    strides = Shape.strides(shape)

    points
    |> Enum.with_index()
    |> Enum.reduce_while({:ok, []}, fn {point, j}, {:ok, acc} ->
      case linear(point, shape, strides, j) do
        {:ok, i} -> {:cont, {:ok, [<<i::64-little>> | acc]}}
        error -> {:halt, error}
      end
    end)
    |> case do
      {:ok, acc} -> {:ok, points_selection(shape, acc |> Enum.reverse() |> IO.iodata_to_binary())}
      error -> error
    end
  end

  defp linear(point, shape, strides, j) when is_tuple(point) do
    n = tuple_size(shape)

    cond do
      tuple_size(point) != n ->
        {:error, {:wrong_point_rank, point: j, got: point, ndim: n}}

      not Enum.all?(Tuple.to_list(point), &is_integer/1) ->
        {:error, {:invalid_point, point: j, got: point}}

      true ->
        Enum.reduce_while(0..(n - 1)//1, {:ok, 0}, fn k, {:ok, acc} ->
          case index(elem(point, k), elem(shape, k)) do
            {:ok, i} ->
              {:cont, {:ok, acc + i * elem(strides, k)}}

            :error ->
              {:halt,
               {:error,
                {:index_out_of_range,
                 point: j, axis: k, index: elem(point, k), size: elem(shape, k)}}}
          end
        end)
    end
  end

  defp linear(point, _shape, _strides, j), do: {:error, {:invalid_point, point: j, got: point}}

  @doc """
  A point selection from a mask over the whole array: a binary of one byte per element in C
  order, non-zero meaning selected; the elements come in C order.

      iex> {:ok, sel} = ExZarr.Indexing.Selection.mask({2, 2}, <<0, 1, 1, 0>>)
      iex> sel.shape
      {2}
      iex> ExZarr.Indexing.Selection.mask({2, 2}, <<1>>)
      {:error, {:wrong_mask_size, expected: 4, got: 1}}
  """
  @spec mask(tuple(), binary()) :: {:ok, t()} | {:error, term()}
  def mask(shape, mask) when is_binary(mask) do
    size = Shape.product(shape)

    if byte_size(mask) == size do
      with {:ok, points} <- Native.mask_points(mask),
           do:
             {:ok,
              %{kind: :points, array: shape, points: points, shape: {div(byte_size(points), 8)}}}
    else
      {:error, {:wrong_mask_size, expected: size, got: byte_size(mask)}}
    end
  end

  def mask(_shape, mask), do: {:error, {:invalid_mask, "expected a binary, got #{inspect(mask)}"}}

  @doc """
  The output shape as numpy gives it: an integer entry of an orthogonal selection drops its
  axis; points give one axis.
  """
  @spec selection_shape(t()) :: tuple()
  def selection_shape(%{kind: :orthogonal, axes: axes, drop: drop}) do
    axes
    |> Enum.zip(drop)
    |> Enum.reject(&elem(&1, 1))
    |> Enum.map(fn {axis, _} -> axis_length(axis) end)
    |> List.to_tuple()
  end

  def selection_shape(%{kind: :points, shape: shape}), do: shape

  # -- entries ------------------------------------------------------------------------------

  # `{:ok, {axis, drop?, perm}}`: perm is nil when a list is sorted already, else the index lists
  # taking sorted order to the given one (read) and back (write).
  defp entry(i, size, k) when is_integer(i) do
    case index(i, size) do
      {:ok, i} -> {:ok, {{:slice, i, 1, 1}, true, nil}}
      :error -> {:error, {:index_out_of_range, axis: k, index: i, size: size}}
    end
  end

  defp entry(:all, size, _k), do: {:ok, {{:slice, 0, 1, size}, false, nil}}

  defp entry(%Range{first: first, last: last, step: step} = r, size, k) do
    cond do
      not is_integer(step) or step < 1 ->
        {:error, {:invalid_step, axis: k, step: step, range: r}}

      not is_integer(first) or not is_integer(last) ->
        {:error, {:invalid_selection, axis: k, entry: r}}

      true ->
        a = if first < 0, do: first + size, else: first
        b = if last < 0, do: last + size, else: last

        cond do
          a > b -> {:ok, {{:slice, max(min(a, size), 0), step, 0}, false, nil}}
          a < 0 or a >= size -> {:error, {:index_out_of_range, axis: k, index: first, size: size}}
          b >= size -> {:error, {:index_out_of_range, axis: k, index: last, size: size}}
          true -> {:ok, {{:slice, a, step, div(b - a, step) + 1}, false, nil}}
        end
    end
  end

  defp entry(list, size, k) when is_list(list) do
    cond do
      List.improper?(list) ->
        {:error, {:invalid_selection, axis: k, entry: list}}

      list != [] and Enum.all?(list, &is_boolean/1) ->
        if length(list) == size do
          picked = for {true, i} <- Enum.with_index(list), do: i
          {:ok, {{:list, picked}, false, nil}}
        else
          {:error, {:wrong_mask_length, axis: k, length: length(list), size: size}}
        end

      true ->
        with {:ok, indices} <- list_indices(list, size, k) do
          {sorted, positions} = indices |> Enum.with_index() |> Enum.sort() |> Enum.unzip()
          {:ok, {{:list, sorted}, false, perm(positions)}}
        end
    end
  end

  defp entry(other, _size, k), do: {:error, {:invalid_selection, axis: k, entry: other}}

  defp list_indices(list, size, k) do
    list
    |> ExZarr.Result.map_ok(fn i ->
      case is_integer(i) && index(i, size) do
        {:ok, i} -> {:ok, i}
        :error -> {:error, {:index_out_of_range, axis: k, index: i, size: size}}
        false -> {:error, {:invalid_selection, axis: k, entry: i}}
      end
    end)
  end

  # positions[j]: the given position of sorted element j.
  defp perm(positions) do
    if positions == Enum.to_list(0..(length(positions) - 1)//1) do
      nil
    else
      inverse =
        positions
        |> Enum.with_index()
        |> Enum.sort()
        |> Enum.map(&elem(&1, 1))

      {index_list(inverse), index_list(positions)}
    end
  end

  defp index(i, size) when is_integer(i) and i < 0 and i >= -size, do: {:ok, i + size}
  defp index(i, size) when is_integer(i) and i >= 0 and i < size, do: {:ok, i}
  defp index(_i, _size), do: :error

  defp out_shape(axes), do: axes |> Enum.map(&axis_length/1) |> List.to_tuple()

  defp axis_length({:slice, _, _, n}), do: n
  defp axis_length({:list, list}), do: length(list)

  defp index_list(list), do: for(i <- list, into: <<>>, do: <<i::64-little>>)

  # -- planning -----------------------------------------------------------------------------

  @doc """
  How many chunks an orthogonal selection touches (`plan/3` makes one part each), computed
  per axis; for points, a bound: one per point, at most every chunk.
  """
  @spec part_count(t(), tuple()) :: non_neg_integer()
  def part_count(%{kind: :orthogonal, axes: axes}, chunks) do
    chunks = ChunkGrid.compile(chunks)

    axes
    |> Enum.with_index()
    |> Enum.reduce(1, fn {axis, k}, acc -> acc * axis_chunk_count(axis, elem(chunks, k)) end)
  end

  def part_count(%{kind: :points, shape: {n}, array: shape}, chunks),
    do: min(n, Shape.product(Indexing.grid_shape(shape, chunks)))

  defp axis_chunk_count({:slice, _, _, 0}, _c), do: 0

  defp axis_chunk_count({:slice, start, step, n}, c) when is_integer(c) do
    last = start + (n - 1) * step
    if step >= c, do: n, else: div(last, c) - div(start, c) + 1
  end

  # A rectilinear axis: at most one chunk per element, at most the chunks spanned.
  defp axis_chunk_count({:slice, start, step, n}, c) do
    last = start + (n - 1) * step
    min(n, ChunkGrid.axis_chunk(c, last) - ChunkGrid.axis_chunk(c, start) + 1)
  end

  defp axis_chunk_count({:list, list}, c),
    do: list |> Enum.map(&ChunkGrid.axis_chunk(c, &1)) |> Enum.dedup() |> length()

  @doc """
  The parts of the chunks of a grid of `chunks` that a selection touches, in C order of
  chunks (points: in the order of their chunks, each chunk once), and the `t:order/0` taking
  the parts' output to the caller's order. `inner` lists the inner chunk shapes of sharded
  chunks (nested ones after): points are grouped by them within a chunk, so that the parts a
  shard's reader plans from a part with `subplan/3` each fill a box of the output too.
  """
  @spec plan(t(), tuple(), [tuple()]) :: {[part()], order()}
  def plan(sel, chunks, inner \\ [])

  def plan(%{kind: :orthogonal, axes: axes, perm: perm}, chunks, _inner) do
    chunks = ChunkGrid.compile(chunks)

    per_axis =
      axes
      |> Enum.with_index()
      |> Enum.map(fn {axis, k} -> axis_parts(axis, elem(chunks, k)) end)

    parts = if Enum.any?(per_axis, &(&1 == [])), do: [], else: combine(per_axis)
    {parts, ortho_order(perm)}
  end

  def plan(%{kind: :points, array: shape, points: points}, chunks, inner) do
    {parts, order} = point_parts(points, shape, [chunks | inner], 0)
    {parts, order && {:points, order}}
  end

  # Points grouped by the chunks of `levels` (see `ExZarr.Native.group_points/3`), as parts
  # whose output starts at `base`, and the order of the grouped points (nil: unchanged).
  defp point_parts(points, shape, [chunks | _] = levels, base) do
    {groups, local, order} = group_points(points, shape, levels)
    grid = Indexing.grid_shape(shape, chunks)

    {parts, _} =
      Enum.map_reduce(groups, 0, fn {id, n}, at ->
        {%{
           chunk: Shape.unravel(id, grid),
           chunk_start: {:flat, binary_part(local, at * 8, n * 8)},
           out_start: {base + at},
           count: {n}
         }, at + n}
      end)

    {parts, order}
  end

  # `ExZarr.Native.group_points/3` over a regular grid; over a rectilinear one the same
  # grouping, point by point: each point's chunk by a binary search of the edges, then its
  # inner chunk of each further level (regular, dividing the level before).
  defp group_points(points, shape, [chunks | inner] = levels) do
    grid = ChunkGrid.compile(chunks)

    if ChunkGrid.regular?(grid) do
      {:ok, grouped} = Native.group_points(points, shape, levels)
      grouped
    else
      group_points_rectilinear(points, shape, grid, inner)
    end
  end

  defp group_points_rectilinear(points, shape, grid, inner) do
    grid_shape = Indexing.grid_shape(shape, grid)

    entries =
      for(<<i::64-little <- points>>, do: i)
      |> Enum.with_index()
      |> Enum.map(fn {i, j} ->
        {chunk, local} = Indexing.locate(grid, Shape.unravel(i, shape))
        chunk_shape = ChunkGrid.chunk_shape(grid, chunk)
        key = [Shape.ravel(chunk, grid_shape) | inner_keys(local, chunk_shape, inner)]
        {key, Shape.ravel(local, chunk_shape), j}
      end)
      |> Enum.sort_by(&elem(&1, 0))

    groups =
      entries
      |> Enum.chunk_by(&hd(elem(&1, 0)))
      |> Enum.map(&{hd(elem(hd(&1), 0)), length(&1)})

    positions = Enum.map(entries, &elem(&1, 2))
    order = if positions == Enum.to_list(0..(length(positions) - 1)//1), do: nil, else: positions

    {groups, index_list(Enum.map(entries, &elem(&1, 1))), order && index_list(order)}
  end

  # The inner chunk of each level holding `local` (a position in a chunk of `outer`).
  defp inner_keys(_local, _outer, []), do: []

  defp inner_keys(local, outer, [inner | rest]) do
    id = Shape.ravel(Shape.zip_with(local, inner, &div/2), Shape.ceil_div(outer, inner))
    [id | inner_keys(Shape.zip_with(local, inner, &rem/2), inner, rest)]
  end

  defp ortho_order(perm) do
    if Enum.all?(perm, &is_nil/1) do
      nil
    else
      {:orthogonal, perm |> Enum.map(&((&1 && elem(&1, 0)) || 0)) |> List.to_tuple(),
       perm |> Enum.map(&((&1 && elem(&1, 1)) || 0)) |> List.to_tuple()}
    end
  end

  @doc """
  The parts of a grid of inner chunks (`hd(levels)`, the inner chunks of a shard; nested
  ones after) that a part's selection of a chunk of shape `chunk_shape` touches
  (`chunk_start` and `count` of a part from `plan/3` given the same levels), with `out_start`
  added to their output starts. Each fills a box of the part's output.
  """
  @spec subplan(tuple() | {:flat, binary()}, tuple(), tuple(), tuple(), [tuple()]) :: [part()]
  def subplan({:flat, points}, {off}, {_n}, chunk_shape, [inner | _] = levels) do
    case point_parts(points, chunk_shape, levels, off) do
      {parts, nil} ->
        parts

      {_regrouped, _order} ->
        # Not grouped by these levels (a grid nested deeper than `plan/3` was told): runs of
        # consecutive points in one inner chunk, in the part's order.
        point_runs(points, chunk_shape, inner, off)
    end
  end

  def subplan(chunk_start, out_start, count, _chunk_shape, [inner | _]) do
    per_axis =
      for k <- 0..(tuple_size(count) - 1)//1 do
        axis =
          case elem(chunk_start, k) do
            s when is_integer(s) -> {:slice, s, 1, elem(count, k)}
            list -> {:list, for(<<i::64-little <- list>>, do: i)}
          end

        axis_parts(axis, elem(inner, k))
      end

    if Enum.any?(per_axis, &(&1 == [])),
      do: [],
      else: Enum.map(combine(per_axis), &%{&1 | out_start: Shape.add(&1.out_start, out_start)})
  end

  @doc """
  `subplan/5` as `{inner_chunk, box}` pairs for a reader: the inner chunk by its C-order
  linear index in the grid of `hd(levels)` over `chunk_shape`, the box as `{chunk_start,
  out_start, count}`. Points grouped by `plan/3` with these levels come straight from the
  native grouping (no coordinate tuples).
  """
  @spec inner_boxes(tuple() | {:flat, binary()}, tuple(), tuple(), tuple(), [tuple()]) ::
          [{non_neg_integer(), {tuple(), tuple(), tuple()}}]
  def inner_boxes({:flat, points} = start, {off} = out_start, count, chunk_shape, levels) do
    case Native.group_points(points, chunk_shape, levels) do
      {:ok, {groups, local, nil}} ->
        {boxes, _} =
          Enum.map_reduce(groups, 0, fn {id, n}, at ->
            {{id, {{:flat, binary_part(local, at * 8, n * 8)}, {off + at}, {n}}}, at + n}
          end)

        boxes

      _regrouped ->
        linear_boxes(subplan(start, out_start, count, chunk_shape, levels), chunk_shape, levels)
    end
  end

  def inner_boxes(start, out_start, count, chunk_shape, levels),
    do: linear_boxes(subplan(start, out_start, count, chunk_shape, levels), chunk_shape, levels)

  defp linear_boxes(parts, chunk_shape, [inner | _]) do
    grid = Indexing.grid_shape(chunk_shape, inner)
    for p <- parts, do: {Shape.ravel(p.chunk, grid), {p.chunk_start, p.out_start, p.count}}
  end

  defp point_runs(points, chunk_shape, inner, off) do
    {parts, _} =
      for(<<i::64-little <- points>>, do: Shape.unravel(i, chunk_shape))
      |> Enum.chunk_by(&Shape.zip_with(&1, inner, fn x, c -> div(x, c) end))
      |> Enum.map_reduce(off, fn [first | _] = run, at ->
        ic = Shape.zip_with(first, inner, &div/2)
        local = for c <- run, do: Shape.ravel(Shape.zip_with(c, inner, &rem/2), inner)
        n = length(run)

        {%{chunk: ic, chunk_start: {:flat, index_list(local)}, out_start: {at}, count: {n}},
         at + n}
      end)

    parts
  end

  @doc "True when a part's chunk selection is a box (no index list)."
  @spec box?(part()) :: boolean()
  def box?(%{chunk_start: start}),
    do: is_tuple(start) and Enum.all?(Tuple.to_list(start), &is_integer/1)

  # The chunks an axis touches, in order: `{chunk, local, out_start, count}` where local is the
  # first position in the chunk of a run, or the list of positions.
  defp axis_parts({:slice, _start, _step, 0}, _c), do: []

  defp axis_parts({:slice, start, 1, n}, c) do
    for ci <- ChunkGrid.axis_chunk(c, start)..ChunkGrid.axis_chunk(c, start + n - 1)//1 do
      first = ChunkGrid.axis_start(c, ci)
      lo = max(start, first)
      hi = min(start + n, first + ChunkGrid.axis_size(c, ci))
      {ci, lo - first, lo - start, hi - lo}
    end
  end

  defp axis_parts({:slice, start, step, n}, c) when is_integer(c) and step >= c do
    for i <- 0..(n - 1)//1 do
      v = start + i * step
      {div(v, c), rem(v, c), i, 1}
    end
  end

  defp axis_parts({:slice, start, step, n}, c) do
    last = start + (n - 1) * step

    for ci <- ChunkGrid.axis_chunk(c, start)..ChunkGrid.axis_chunk(c, last)//1,
        first = ChunkGrid.axis_start(c, ci),
        i_lo = max(0, div(first - start + step - 1, step)),
        i_hi = min(n - 1, div(first + ChunkGrid.axis_size(c, ci) - 1 - start, step)),
        i_lo <= i_hi do
      locals = for i <- i_lo..i_hi//1, do: start + i * step - first
      {ci, local(locals), i_lo, i_hi - i_lo + 1}
    end
  end

  defp axis_parts({:list, sorted}, c) do
    {parts, _} =
      sorted
      |> Enum.chunk_by(&ChunkGrid.axis_chunk(c, &1))
      |> Enum.map_reduce(0, fn [first | _] = run, off ->
        ci = ChunkGrid.axis_chunk(c, first)
        origin = ChunkGrid.axis_start(c, ci)
        n = length(run)
        {{ci, local(Enum.map(run, &(&1 - origin))), off, n}, off + n}
      end)

    parts
  end

  # One run of consecutive positions is its first; anything else an index list.
  defp local([first | _] = locals) do
    if consecutive?(locals, first), do: first, else: index_list(locals)
  end

  defp consecutive?([], _next), do: true
  defp consecutive?([x | rest], next), do: x == next and consecutive?(rest, next + 1)

  # The cartesian product of the axes' parts, in C order.
  defp combine(per_axis) do
    per_axis
    |> Enum.reverse()
    |> Enum.reduce([{[], [], [], []}], fn axis, tails ->
      for {ci, si, oi, ni} <- axis,
          {c, s, o, n} <- tails,
          do: {[ci | c], [si | s], [oi | o], [ni | n]}
    end)
    |> Enum.map(fn {c, s, o, n} ->
      %{
        chunk: List.to_tuple(c),
        chunk_start: List.to_tuple(s),
        out_start: List.to_tuple(o),
        count: List.to_tuple(n)
      }
    end)
  end
end
