defmodule ExZarr.Storage.Range do
  @moduledoc """
  Byte-range arithmetic shared by the storage backends.

  Ranges follow zarr-python's stores: a range that runs past the end of a value returns the
  bytes that exist (possibly none), and a suffix longer than the value returns the whole value.
  Neither is an error.

      iex> ExZarr.Storage.Range.slice("0123456789", {8, 5})
      "89"
      iex> ExZarr.Storage.Range.slice("0123456789", {:suffix, 3})
      "789"
      iex> ExZarr.Storage.Range.resolve({20, 4}, 10)
      {10, 0}
  """

  @doc "The `{offset, length}` a range covers in a value of `size` bytes, clamped to the value."
  @spec resolve(ExZarr.Storage.range(), non_neg_integer()) ::
          {non_neg_integer(), non_neg_integer()}
  def resolve(nil, size), do: {0, size}

  def resolve({:suffix, n}, size) do
    length = min(n, size)
    {size - length, length}
  end

  def resolve({offset, length}, size) do
    start = min(offset, size)
    {start, min(length, size - start)}
  end

  @doc """
  The part of `value` a range covers, as a sub-binary (no copy); for a list of ranges, the
  list of their parts.
  """
  @spec slice(binary(), ExZarr.Storage.range() | [ExZarr.Storage.range()]) ::
          binary() | [binary()]
  def slice(value, nil), do: value
  def slice(value, ranges) when is_list(ranges), do: Enum.map(ranges, &slice(value, &1))

  def slice(value, range) do
    {offset, length} = resolve(range, byte_size(value))
    binary_part(value, offset, length)
  end
end
