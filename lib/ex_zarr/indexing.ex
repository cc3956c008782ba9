defmodule ExZarr.Indexing do
  @moduledoc """
  Pure selection arithmetic: which chunks a region touches and, for each, which part of the
  chunk maps to which part of the output.

  A selection is a box given by `start` (inclusive) and `stop` (exclusive) tuples.

      iex> {:ok, sel} = ExZarr.Indexing.selection({10}, start: {3}, stop: {7})
      iex> ExZarr.Indexing.plan(sel, {4})
      [
        %{chunk: {0}, chunk_start: {3}, out_start: {0}, count: {1}},
        %{chunk: {1}, chunk_start: {0}, out_start: {1}, count: {3}}
      ]
  """

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

      not in_bounds?(start, stop, shape) ->
        {:error, {:out_of_bounds, start: start, stop: stop, shape: shape}}

      true ->
        {:ok, %{start: start, stop: stop, shape: zip_map(stop, start, &(&1 - &2))}}
    end
  end

  @doc """
  The chunks a selection touches, in C order of chunk coordinates, with the box inside each
  chunk (`chunk_start`, `count`) and where it lands in the output (`out_start`).
  An empty selection touches no chunk.
  """
  @spec plan(selection(), tuple()) :: [part()]
  def plan(%{start: start, stop: stop, shape: shape}, chunks) do
    if product(shape) == 0 do
      []
    else
      per_axis =
        for axis <- 0..(tuple_size(chunks) - 1)//1 do
          axis_parts(elem(start, axis), elem(stop, axis), elem(chunks, axis))
        end

      per_axis
      |> cartesian()
      |> Enum.map(fn parts ->
        %{
          chunk: parts |> Enum.map(&elem(&1, 0)) |> List.to_tuple(),
          chunk_start: parts |> Enum.map(&elem(&1, 1)) |> List.to_tuple(),
          out_start: parts |> Enum.map(&elem(&1, 2)) |> List.to_tuple(),
          count: parts |> Enum.map(&elem(&1, 3)) |> List.to_tuple()
        }
      end)
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
    if product(shape) == 0 do
      0
    else
      [start, stop, chunks]
      |> Enum.map(&Tuple.to_list/1)
      |> Enum.zip_with(fn [a, b, c] -> div(b - 1, c) - div(a, c) + 1 end)
      |> Enum.reduce(1, &*/2)
    end
  end

  @doc """
  Number of chunks along each axis.

      iex> ExZarr.Indexing.grid_shape({10, 0, 7}, {5, 3, 7})
      {2, 0, 1}
  """
  @spec grid_shape(tuple(), tuple()) :: tuple()
  def grid_shape(shape, chunks), do: zip_map(shape, chunks, &ceil_div/2)

  @doc """
  Every chunk coordinate of the grid, lazily, in C order.

      iex> ExZarr.Indexing.chunk_coords({3, 4}, {2, 4}) |> Enum.to_list()
      [{0, 0}, {1, 0}]
  """
  @spec chunk_coords(tuple(), tuple()) :: Enumerable.t()
  def chunk_coords(shape, chunks) do
    grid = grid_shape(shape, chunks)
    total = product(grid)
    Stream.map(0..(total - 1)//1, &unravel(&1, grid))
  end

  @doc """
  The part of chunk `coords` that lies inside the array (the rest of an edge chunk is padding),
  as a selection-local box: `{count}` along each axis.

      iex> ExZarr.Indexing.chunk_extent({10, 10}, {4, 4}, {2, 0})
      {2, 4}
  """
  @spec chunk_extent(tuple(), tuple(), tuple()) :: tuple()
  def chunk_extent(shape, chunks, coords) do
    shape
    |> Tuple.to_list()
    |> Enum.zip(Tuple.to_list(chunks))
    |> Enum.zip(Tuple.to_list(coords))
    |> Enum.map(fn {{size, chunk}, c} -> min(chunk, size - c * chunk) end)
    |> List.to_tuple()
  end

  @doc "True when the coordinates name a chunk of the grid."
  @spec valid_chunk?(tuple(), tuple(), tuple()) :: boolean()
  def valid_chunk?(shape, chunks, coords) do
    index_tuple?(coords, tuple_size(shape)) and
      coords
      |> Tuple.to_list()
      |> Enum.zip(Tuple.to_list(grid_shape(shape, chunks)))
      |> Enum.all?(fn {c, g} -> c < g end)
  end

  @doc """
  Product of a tuple's elements (the element count of a shape; 1 for `{}`).

      iex> ExZarr.Indexing.product({2, 3, 4})
      24
  """
  @spec product(tuple()) :: non_neg_integer()
  def product(tuple), do: tuple |> Tuple.to_list() |> Enum.reduce(1, &*/2)

  defp axis_parts(start, stop, chunk) do
    for c <- div(start, chunk)..div(stop - 1, chunk)//1 do
      lo = max(start, c * chunk)
      hi = min(stop, (c + 1) * chunk)
      {c, lo - c * chunk, lo - start, hi - lo}
    end
  end

  defp cartesian([]), do: [[]]
  defp cartesian([axis | rest]), do: for(p <- axis, tail <- cartesian(rest), do: [p | tail])

  defp unravel(index, grid) do
    {coords, _} =
      grid
      |> Tuple.to_list()
      |> List.foldr({[], index}, fn size, {acc, rem} ->
        {[rem(rem, size) | acc], div(rem, size)}
      end)

    List.to_tuple(coords)
  end

  defp index_tuple?(t, n),
    do:
      is_tuple(t) and tuple_size(t) == n and
        Enum.all?(Tuple.to_list(t), &(is_integer(&1) and &1 >= 0))

  defp in_bounds?(start, stop, shape) do
    [start, stop, shape]
    |> Enum.map(&Tuple.to_list/1)
    |> Enum.zip()
    |> Enum.all?(fn {a, b, s} -> a <= b and b <= s end)
  end

  defp zip_map(a, b, fun),
    do: Enum.zip_with(Tuple.to_list(a), Tuple.to_list(b), fun) |> List.to_tuple()

  defp ceil_div(_size, 0), do: 0
  defp ceil_div(size, chunk), do: div(size + chunk - 1, chunk)
end
