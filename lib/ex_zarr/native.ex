defmodule ExZarr.Native do
  @moduledoc """
  The one NIF of ExZarr (`c_src/`): compression libraries, checksums and copy kernels.

  Every function validates its arguments and returns `{:error, reason}` (or raises
  `ArgumentError` for arguments of the wrong type) instead of crashing; decoders never
  produce more than the `max_size` they are given. Calls on large inputs run on dirty CPU
  schedulers.

  Shapes and offsets are tuples of non-negative integers, element data is a binary of packed
  elements in C order; `itemsize` is the size of one element in bytes.
  """
  @on_load :load_nif

  @doc false
  def load_nif do
    path = :filename.join(:code.priv_dir(:ex_zarr), ~c"ex_zarr_nif")
    :erlang.load_nif(path, 0)
  end

  @typedoc "A region copy: source data, its shape, where to start in it and in the destination, and how many elements along each axis."
  @type piece ::
          {src :: binary(), src_shape :: tuple(), src_start :: tuple(), dst_start :: tuple(),
           count :: tuple()}

  @doc """
  Builds a new binary of `dst_shape` elements in one pass: starts from `base` (a binary of
  exactly the destination size, copied, or `{:fill, element}` to repeat one element's bytes)
  and copies every piece into it.

  Used to assemble a read region from decoded chunks, to extract a region of a binary, and to
  merge new data into an existing chunk.
  """
  @spec copy_regions(tuple(), pos_integer(), binary() | {:fill, binary()}, [piece()]) ::
          {:ok, binary()} | {:error, term()}
  def copy_regions(_dst_shape, _itemsize, _base, _pieces), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Permutes axes: the result has shape `shape[perm[k]]` along axis k (numpy `transpose(perm)`)."
  @spec transpose(binary(), tuple(), pos_integer(), tuple()) :: {:ok, binary()} | {:error, term()}
  def transpose(_data, _shape, _itemsize, _perm), do: :erlang.nif_error(:nif_not_loaded)

  @doc "Reverses the byte order of every `itemsize`-byte element."
  @spec byteswap(binary(), pos_integer()) :: {:ok, binary()} | {:error, term()}
  def byteswap(_data, _itemsize), do: :erlang.nif_error(:nif_not_loaded)

  @doc "True when every `byte_size(element)`-byte element of `data` equals `element` bitwise."
  @spec all_equal(binary(), binary()) :: boolean()
  def all_equal(_data, _element), do: :erlang.nif_error(:nif_not_loaded)

  @doc "True when every element is a NaN of the given float width (2, 4 or 8 bytes)."
  @spec all_nan(binary(), 2 | 4 | 8) :: boolean()
  def all_nan(_data, _float_size), do: :erlang.nif_error(:nif_not_loaded)

  @doc "CRC32C (Castagnoli) of iodata, hardware-accelerated where the CPU has SSE4.2."
  @spec crc32c(iodata()) :: non_neg_integer()
  def crc32c(_data), do: :erlang.nif_error(:nif_not_loaded)
end
