defmodule ExZarr.Codecs.Bytes do
  @moduledoc """
  The v3 `bytes` codec (array->bytes): stores the elements in C order with the configured byte
  order (`"endian"`: `"little"` or `"big"`; omitted for one-byte types). A chunk larger than
  `ExZarr.Limits.max_bytes/0` is refused at `init/2`: `{:error, {:too_large, :chunk, size, max}}`.

  Little-endian data passes through without a copy; big-endian data is byte-swapped in one
  native pass. Decoding checks that the stored size is exactly the chunk's size. The sub-byte
  types (`int4`, `uint2`, `float4_e2m1fn`, ...: `ExZarr.DType.LowPrecision`) are stored one
  per byte with the upper bits zero, and read ignoring the upper bits; writing a value out of
  the type's range is an error.

      iex> spec = %{shape: {2}, dtype: :uint16, fill_value: 0, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.Bytes.init(%{"endian" => "big"}, spec)
      iex> ExZarr.Codecs.Bytes.encode(<<1, 0, 2, 0>>, s)
      {:ok, <<0, 1, 0, 2>>}
  """
  @behaviour ExZarr.Codec

  alias ExZarr.Codec.Config
  alias ExZarr.{DType, Limits, Native}
  alias ExZarr.DType.LowPrecision

  @impl true
  def name, do: "bytes"

  @impl true
  def kind, do: :array_to_bytes

  @impl true
  def config_keys, do: ["endian"]

  @impl true
  def init(config, %{shape: shape, dtype: dtype}) do
    size = DType.itemsize(dtype) * ExZarr.Shape.product(shape)
    swap = DType.component_size(dtype)

    with :ok <- Limits.check(:chunk, size),
         {:ok, state} <- endian_state(Config.get(config, "endian"), size, swap),
         do: {:ok, Map.put(state, :packed, LowPrecision.packed_bits(dtype))}
  end

  defp endian_state("big", size, swap) when swap > 1,
    do: {:ok, %{size: size, swap: swap, endian: "big"}}

  defp endian_state("big", size, _swap), do: {:ok, %{size: size, swap: nil, endian: "big"}}
  defp endian_state("little", size, _swap), do: {:ok, %{size: size, swap: nil, endian: "little"}}
  defp endian_state(nil, size, 1), do: {:ok, %{size: size, swap: nil, endian: nil}}
  defp endian_state(nil, _size, _swap), do: {:error, {:missing_key, "endian"}}

  defp endian_state(other, _size, _swap),
    do: Config.invalid("endian", other, ~s("little" or "big"))

  @impl true
  def encode(data, %{packed: {bits, signed}}),
    do: Native.subbyte_encode(IO.iodata_to_binary(data), bits, signed)

  def encode(data, %{swap: nil}), do: {:ok, data}
  def encode(data, %{swap: n}), do: Native.byteswap(IO.iodata_to_binary(data), n)

  @impl true
  def decode(data, %{size: size}) when byte_size(data) != size,
    do: {:error, {:wrong_chunk_size, expected: size, got: byte_size(data)}}

  def decode(data, %{packed: {bits, signed}}), do: Native.subbyte_decode(data, bits, signed)
  def decode(data, %{swap: nil}), do: {:ok, data}
  def decode(data, %{swap: n}), do: Native.byteswap(data, n)

  # The NIF copies (and byte-swaps) stored elements itself.
  @impl true
  def native_decoder(%{packed: packed}) when packed != nil, do: nil
  def native_decoder(%{swap: nil}), do: :raw
  def native_decoder(%{swap: n}), do: {:raw, n}

  @impl true
  def configuration(%{endian: nil}), do: %{}
  def configuration(%{endian: endian}), do: %{"endian" => endian}

  @impl true
  def encoded_size(size, _state), do: size
end
