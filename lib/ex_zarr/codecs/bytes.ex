defmodule ExZarr.Codecs.Bytes do
  @moduledoc """
  The v3 `bytes` codec (array->bytes): stores the elements in C order with the configured byte
  order (`"endian"`: `"little"` or `"big"`; omitted for one-byte types). A chunk larger than
  `ExZarr.Limits.max_bytes/0` is refused at `init/2`: `{:error, {:too_large, :chunk, size, max}}`.

  Little-endian data passes through without a copy; big-endian data is byte-swapped in one
  native pass. Decoding checks that the stored size is exactly the chunk's size.

      spec = %{shape: {2}, dtype: :uint16, fill_value: 0, decoded_size: nil}
      {:ok, s} = ExZarr.Codecs.Bytes.init(%{"endian" => "big"}, spec)
      {:ok, <<0, 1, 0, 2>>} = ExZarr.Codecs.Bytes.encode(<<1, 0, 2, 0>>, s)
  """
  @behaviour ExZarr.Codec

  alias ExZarr.Codec.Config
  alias ExZarr.{DType, Limits, Native}

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

    with :ok <- Limits.check(:chunk, size) do
      case Config.get(config, "endian") do
        "big" when swap > 1 -> {:ok, %{size: size, swap: swap, endian: "big"}}
        "big" -> {:ok, %{size: size, swap: nil, endian: "big"}}
        "little" -> {:ok, %{size: size, swap: nil, endian: "little"}}
        nil when swap == 1 -> {:ok, %{size: size, swap: nil, endian: nil}}
        nil -> {:error, {:missing_key, "endian"}}
        other -> Config.invalid("endian", other, ~s("little" or "big"))
      end
    end
  end

  @impl true
  def encode(data, %{swap: nil}), do: {:ok, data}
  def encode(data, %{swap: n}), do: Native.byteswap(IO.iodata_to_binary(data), n)

  @impl true
  def decode(data, %{size: size}) when byte_size(data) != size,
    do: {:error, {:wrong_chunk_size, expected: size, got: byte_size(data)}}

  def decode(data, %{swap: nil}), do: {:ok, data}
  def decode(data, %{swap: n}), do: Native.byteswap(data, n)

  # The NIF copies (and byte-swaps) stored elements itself.
  @impl true
  def native_decoder(%{swap: nil}), do: :raw
  def native_decoder(%{swap: n}), do: {:raw, n}

  @impl true
  def configuration(%{endian: nil}), do: %{}
  def configuration(%{endian: endian}), do: %{"endian" => endian}

  @impl true
  def encoded_size(size, _state), do: size
end
