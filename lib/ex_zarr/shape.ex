defmodule ExZarr.Shape do
  @moduledoc false
  # Arithmetic on shapes, coordinates and element counts: tuples of integers, one per axis,
  # combined axis by axis. Pure functions, used by the indexing, sharding and engine layers.

  @doc """
  Product of a tuple's elements (the element count of a shape; 1 for `{}`).

      iex> ExZarr.Shape.product({2, 3, 4})
      24
  """
  @spec product(tuple()) :: integer()
  def product(tuple), do: product(tuple, tuple_size(tuple), 1)

  defp product(_tuple, 0, acc), do: acc
  defp product(tuple, i, acc), do: product(tuple, i - 1, acc * elem(tuple, i - 1))

  @doc """
  Combines two tuples of the same size axis by axis.

      iex> ExZarr.Shape.zip_with({7, 8}, {2, 3}, &div/2)
      {3, 2}
  """
  @spec zip_with(tuple(), tuple(), (integer(), integer() -> term())) :: tuple()
  def zip_with(a, b, fun),
    do: Enum.zip_with(Tuple.to_list(a), Tuple.to_list(b), fun) |> List.to_tuple()

  @doc """
  Sum axis by axis.

      iex> ExZarr.Shape.add({1, 2}, {10, 20})
      {11, 22}
  """
  @spec add(tuple(), tuple()) :: tuple()
  def add(a, b), do: zip_with(a, b, &+/2)

  @doc "Difference axis by axis (`a - b`)."
  @spec sub(tuple(), tuple()) :: tuple()
  def sub(a, b), do: zip_with(a, b, &-/2)

  @doc "Product axis by axis."
  @spec mul(tuple(), tuple()) :: tuple()
  def mul(a, b), do: zip_with(a, b, &*/2)

  @doc """
  `div(a, b)` rounded up axis by axis; 0 where `b` is 0 (a grid over an empty axis).

      iex> ExZarr.Shape.ceil_div({10, 0, 7}, {5, 3, 2})
      {2, 0, 4}
  """
  @spec ceil_div(tuple(), tuple()) :: tuple()
  def ceil_div(a, b), do: zip_with(a, b, fn x, y -> if y == 0, do: 0, else: div(x + y - 1, y) end)

  @doc "`n` zeros."
  @spec zeros(non_neg_integer()) :: tuple()
  def zeros(n), do: Tuple.duplicate(0, n)

  @doc "True when every element is 0."
  @spec zero?(tuple()) :: boolean()
  def zero?(tuple), do: tuple |> Tuple.to_list() |> Enum.all?(&(&1 == 0))

  @doc """
  The coordinates of C-order linear index `i` in an array of `shape`.

      iex> ExZarr.Shape.unravel(5, {2, 3})
      {1, 2}
  """
  @spec unravel(non_neg_integer(), tuple()) :: tuple()
  def unravel(i, shape) do
    {coords, _} =
      shape
      |> Tuple.to_list()
      |> List.foldr({[], i}, fn size, {acc, rest} ->
        {[rem(rest, size) | acc], div(rest, size)}
      end)

    List.to_tuple(coords)
  end

  @doc """
  The C-order linear index of `coords` in an array of `shape`.

      iex> ExZarr.Shape.ravel({1, 2}, {2, 3})
      5
  """
  @spec ravel(tuple(), tuple()) :: non_neg_integer()
  def ravel(coords, shape),
    do: Enum.zip_reduce(Tuple.to_list(coords), Tuple.to_list(shape), 0, &(&3 * &2 + &1))

  @doc """
  The C-order element strides of `shape` (elements between neighbours along each axis).

      iex> ExZarr.Shape.strides({2, 3, 4})
      {12, 4, 1}
  """
  @spec strides(tuple()) :: tuple()
  def strides(shape) do
    shape
    |> Tuple.to_list()
    |> List.foldr({[], 1}, fn size, {acc, stride} -> {[stride | acc], stride * size} end)
    |> elem(0)
    |> List.to_tuple()
  end

  @doc "The shape with its axes in reverse order."
  @spec reverse(tuple()) :: tuple()
  def reverse(shape), do: shape |> Tuple.to_list() |> Enum.reverse() |> List.to_tuple()
end
