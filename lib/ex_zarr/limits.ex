defmodule ExZarr.Limits do
  @moduledoc """
  Sanity limits that keep a hostile or mistaken request (a `.zarray` with 2^47-byte chunks, a
  selection of 2^40 chunks) from exhausting memory: such requests get
  `{:error, {:too_large, what, bytes, limit}}` before anything is allocated.

  The limit is the machine's physical memory (`MemTotal` of `/proc/meminfo`, read once), or
  the `:max_bytes` application setting of `:ex_zarr` when set.

      iex> ExZarr.Limits.check(:selection, 1024)
      :ok
      iex> {:error, {:too_large, :selection, _, _}} = ExZarr.Limits.check(:selection, 2 ** 60)
  """
  # Planning a read or write keeps a small map per chunk touched; this many bytes per chunk
  # is a generous bound on that bookkeeping.
  @bytes_per_part 1024

  @doc "The most bytes one buffer (or the bookkeeping of one request) may take."
  @spec max_bytes() :: pos_integer()
  def max_bytes do
    case Application.get_env(:ex_zarr, :max_bytes) do
      n when is_integer(n) and n > 0 -> n
      _ -> physical_memory()
    end
  end

  @doc "`:ok` when `bytes` fits under `max_bytes/0`, else an error naming `what`."
  @spec check(atom(), non_neg_integer()) ::
          :ok | {:error, {:too_large, atom(), integer(), integer()}}
  def check(what, bytes) do
    limit = max_bytes()
    if bytes <= limit, do: :ok, else: {:error, {:too_large, what, bytes, limit}}
  end

  @doc "Checks the bookkeeping of a request touching `count` chunks."
  @spec check_parts(non_neg_integer()) :: :ok | {:error, term()}
  def check_parts(count), do: check(:chunks_touched, count * @bytes_per_part)

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
