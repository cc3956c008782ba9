defmodule ExZarr.Codecs.Astype do
  @moduledoc """
  numcodecs AsType filter (v3 `numcodecs.astype`, v2 filter `astype`), array->array: stores the
  elements converted to `encode_dtype` and converts them back to `decode_dtype` (default: the
  chunk's data type) with numpy casting rules.

      iex> spec = %{shape: {2}, dtype: :float64, fill_value: 0, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.Astype.init(%{"encode_dtype" => "<f4"}, spec)
      iex> ExZarr.Codecs.Astype.encode(<<1.5::float-64-little, 2.0::float-64-little>>, s)
      {:ok, <<1.5::float-32-little, 2.0::float-32-little>>}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.astype",
    v2_id: "astype",
    kind: :array_to_array,
    keys: ["encode_dtype", "decode_dtype"]

  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @impl true
  def init(config, spec) do
    with {:ok, decode_dtype} <- Numcodecs.data_dtype(config, "decode_dtype", spec),
         {:ok, encode_dtype} <- Numcodecs.dtype_option(config, "encode_dtype", %{}),
         do: {:ok, %{encode: encode_dtype, decode: decode_dtype}}
  end

  @impl true
  def resolve_spec(spec, s), do: %{spec | dtype: s.encode}

  @impl true
  def encode(data, s), do: Native.cast(IO.iodata_to_binary(data), s.decode, s.encode)

  @impl true
  def decode(data, s), do: Native.cast(data, s.encode, s.decode)

  @impl true
  def configuration(s) do
    %{
      "encode_dtype" => Numcodecs.numpy_dtype(s.encode),
      "decode_dtype" => Numcodecs.numpy_dtype(s.decode)
    }
  end
end
