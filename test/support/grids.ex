defmodule ExZarr.Test.Grids do
  @moduledoc """
  Chunk grids for tests: random regular and rectilinear grids (from the `:rand` state of the
  calling process, so that a seeded property is reproducible) and a naive reference of what
  a grid means, written from the rectilinear spec's wording rather than from
  `ExZarr.ChunkGrid`.
  """

  @doc """
  A random grid for `shape`: a chunk length or a list of edges per axis (half the time a
  rectilinear grid), the edges summing to at least the axis' length, sometimes with one or
  two chunks past it.
  """
  @spec random(tuple()) :: tuple()
  def random(shape) do
    rect? = :rand.uniform(2) == 1

    shape
    |> Tuple.to_list()
    |> Enum.map(fn len ->
      if rect? and :rand.uniform(3) > 1, do: edges(len), else: :rand.uniform(4)
    end)
    |> List.to_tuple()
  end

  defp edges(len) do
    base = cover(len, [])
    extra = for _ <- 1..(:rand.uniform(3) - 1)//1, do: :rand.uniform(4)
    base ++ extra
  end

  defp cover(left, acc) when left <= 0 and acc != [], do: Enum.reverse(acc)

  defp cover(left, acc) do
    e = :rand.uniform(4)
    cover(left - e, [e | acc])
  end

  @doc """
  The explicit edges of each axis as the spec defines them: an integer `m` repeated until the
  edges cover the axis' length, a list as it is.
  """
  @spec edges(tuple(), tuple()) :: [[pos_integer()]]
  def edges(grid, shape) do
    grid
    |> Tuple.to_list()
    |> Enum.zip(Tuple.to_list(shape))
    |> Enum.map(fn
      {m, len} when is_integer(m) -> List.duplicate(m, div(len + m - 1, m))
      {list, _len} -> list
    end)
  end

  @doc """
  The chunk holding position `x` of an axis of `edges` and the position inside it: the first
  chunk whose cumulative sum of edges exceeds `x`, minus the sum before it.
  """
  @spec locate_axis([pos_integer()], non_neg_integer()) :: {non_neg_integer(), non_neg_integer()}
  def locate_axis(edges, x) do
    edges
    |> Enum.scan(&+/2)
    |> Enum.with_index()
    |> Enum.find_value(fn {sum, c} -> if sum > x, do: {c, x - (sum - Enum.at(edges, c))} end)
  end

  @doc "The chunk holding an element of the array and the element's position in it."
  @spec locate(tuple(), tuple(), tuple()) :: {tuple(), tuple()}
  def locate(grid, shape, index) do
    {chunk, local} =
      grid
      |> edges(shape)
      |> Enum.zip(Tuple.to_list(index))
      |> Enum.map(fn {e, x} -> locate_axis(e, x) end)
      |> Enum.unzip()

    {List.to_tuple(chunk), List.to_tuple(local)}
  end

  @doc "A random box `{start, stop}` inside `shape` (empty ones included)."
  @spec random_box(tuple()) :: {tuple(), tuple()}
  def random_box(shape) do
    start = Tuple.to_list(shape) |> Enum.map(&(:rand.uniform(&1 + 1) - 1))
    stop = Enum.zip_with(start, Tuple.to_list(shape), &(&1 + :rand.uniform(&2 - &1 + 1) - 1))
    {List.to_tuple(start), List.to_tuple(stop)}
  end

  @doc "Every index of an array of `shape`, in C order."
  @spec indices(tuple()) :: [tuple()]
  def indices(shape) do
    shape
    |> Tuple.to_list()
    |> Enum.reverse()
    |> Enum.reduce([[]], fn n, acc -> for i <- 0..(n - 1)//1, rest <- acc, do: [i | rest] end)
    |> Enum.map(&List.to_tuple/1)
  end
end
