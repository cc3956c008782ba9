defmodule ExZarr.Limits do
  @moduledoc false
  # Sanity limits that keep a hostile or mistaken request from exhausting memory or reaching
  # a native limit: such requests get an `{:error, _}` before anything is allocated. The
  # limits and their settings are described to users in the `ExZarr` moduledoc ("Limits").
  # `max_chunk_visits/0` (65,536) bounds the chunk coordinates a walk over a region of the grid
  # (the chunks a resize cuts off or clears) visits one by one; a larger region is walked
  # through the chunks stored under the array (one listing).
  # Planning a read or write keeps a small map per chunk touched; this many bytes per chunk
  # is a generous bound on that bookkeeping.
  @bytes_per_part 1024

  # What one element of a variable-length type (`:string`, `:bytes`) costs at least besides
  # its bytes: its slot in a tuple or list and a sub-binary.
  @vlen_element_bytes 64

  @max_dims 64
  @max_itemsize 2 ** 31 - 1
  @max_extent 2 ** 63 - 1
  @default_vlen_chunk_bytes 256 * 1024 * 1024
  @max_chunk_visits 65_536

  @doc "The most dimensions an array may have."
  @spec max_dims() :: pos_integer()
  def max_dims, do: @max_dims

  @doc "The largest element size in bytes of a data type."
  @spec max_itemsize() :: pos_integer()
  def max_itemsize, do: @max_itemsize

  @doc "The largest value of one dimension of a shape or chunk shape."
  @spec max_extent() :: pos_integer()
  def max_extent, do: @max_extent

  @doc "The most chunk coordinates a walk over a region of the chunk grid visits one by one."
  @spec max_chunk_visits() :: pos_integer()
  def max_chunk_visits, do: @max_chunk_visits

  @doc "The most bytes one buffer (or the bookkeeping of one request) may take."
  @spec max_bytes() :: pos_integer()
  def max_bytes, do: setting(:max_bytes, &physical_memory/0)

  @doc "The most bytes of items one stored chunk of a variable-length array may decode to."
  @spec max_vlen_chunk_bytes() :: pos_integer()
  def max_vlen_chunk_bytes,
    do: setting(:max_vlen_chunk_bytes, fn -> @default_vlen_chunk_bytes end)

  @doc """
  The most bytes a stored chunk of `count` variable-length items may decode to: the layout
  (a 4-byte count and a 4-byte length per item) plus `max_vlen_chunk_bytes/0`.

      iex> ExZarr.Limits.vlen_decoded_bytes(10) - ExZarr.Limits.max_vlen_chunk_bytes()
      44
  """
  @spec vlen_decoded_bytes(non_neg_integer()) :: pos_integer()
  def vlen_decoded_bytes(count), do: 4 + 4 * count + max_vlen_chunk_bytes()

  @doc """
  `:ok` when `bytes` fits under `max_bytes/0`, else an error naming `what`.

      iex> ExZarr.Limits.check(:selection, 1024)
      :ok
      iex> {:error, {:too_large, :selection, _, _}} = ExZarr.Limits.check(:selection, 2 ** 60)
  """
  @spec check(atom(), non_neg_integer()) ::
          :ok | {:error, {:too_large, atom(), integer(), integer()}}
  def check(what, bytes), do: within(what, bytes, max_bytes())

  @doc """
  `:ok` when variable-length items of `bytes` in all fit in one chunk
  (`max_vlen_chunk_bytes/0`: a chunk a read could decode), else an error.

      iex> {:error, {:too_large, :vlen_chunk, _, _}} = ExZarr.Limits.check_vlen_chunk(2 ** 40)
  """
  @spec check_vlen_chunk(non_neg_integer()) ::
          :ok | {:error, {:too_large, :vlen_chunk, integer(), integer()}}
  def check_vlen_chunk(bytes), do: within(:vlen_chunk, bytes, max_vlen_chunk_bytes())

  defp within(_what, bytes, limit) when bytes <= limit, do: :ok
  defp within(what, bytes, limit), do: {:error, {:too_large, what, bytes, limit}}

  @doc """
  Checks that `count` elements of `itemsize` bytes fit under `max_bytes/0` (`what`:
  `:selection`, `:chunk`). An element of a variable-length type (`itemsize` 0) counts
  #{@vlen_element_bytes} bytes, its place in the list or tuple that holds it, besides its own
  bytes (bounded per chunk by `max_vlen_chunk_bytes/0`).

      iex> {:error, {:too_large, :selection, _, _}} = ExZarr.Limits.check_elements(:selection, 2 ** 50, 0)
      iex> ExZarr.Limits.check_elements(:selection, 2 ** 50, 8) == ExZarr.Limits.check(:selection, 2 ** 53)
      true
  """
  @spec check_elements(atom(), non_neg_integer(), non_neg_integer()) :: :ok | {:error, term()}
  def check_elements(what, count, 0), do: check(what, count * @vlen_element_bytes)
  def check_elements(what, count, itemsize), do: check(what, count * itemsize)

  @doc "Checks the bookkeeping of a request touching `count` chunks."
  @spec check_parts(non_neg_integer()) :: :ok | {:error, term()}
  def check_parts(count), do: check(:chunks_touched, count * @bytes_per_part)

  @doc """
  `:ok` for at most `max_dims/0` dimensions.

      iex> ExZarr.Limits.check_dims(65)
      {:error, {:too_many_dimensions, 65, max: 64}}
  """
  @spec check_dims(non_neg_integer()) ::
          :ok | {:error, {:too_many_dimensions, integer(), keyword()}}
  def check_dims(ndim) when ndim <= @max_dims, do: :ok
  def check_dims(ndim), do: {:error, {:too_many_dimensions, ndim, max: @max_dims}}

  @doc """
  `:ok` when every dimension of `dims` (a list or tuple of integers) is at most
  `max_extent/0`, else `{:error, {:too_large, what, dim, max_extent}}`.
  """
  @spec check_extents(atom(), [integer()] | tuple()) :: :ok | {:error, term()}
  def check_extents(what, dims) when is_tuple(dims), do: check_extents(what, Tuple.to_list(dims))

  def check_extents(what, dims) do
    case Enum.find(dims, &(&1 > @max_extent)) do
      nil -> :ok
      dim -> {:error, {:too_large, what, dim, @max_extent}}
    end
  end

  defp setting(key, default) do
    case Application.get_env(:ex_zarr, key) do
      n when is_integer(n) and n > 0 -> n
      _ -> default.()
    end
  end

  defp physical_memory do
    case :persistent_term.get({__MODULE__, :memory}, nil) do
      nil ->
        bytes = read_meminfo()
        :persistent_term.put({__MODULE__, :memory}, bytes)
        bytes

      bytes ->
        bytes
    end
  end

  defp read_meminfo do
    with {:ok, text} <- File.read("/proc/meminfo"),
         [_, kb] <- Regex.run(~r/^MemTotal:\s+(\d+) kB/m, text) do
      String.to_integer(kb) * 1024
    else
      _ -> 2 ** 40
    end
  end
end
