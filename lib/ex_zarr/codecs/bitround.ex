defmodule ExZarr.Codecs.Bitround do
  @moduledoc """
  numcodecs BitRound filter (v3 `numcodecs.bitround`, v2 filter `bitround`), array->array and
  lossy: keeps `keepbits` bits of each float's mantissa (rounding half to even) so the data
  compresses better. Floats of 2, 4 or 8 bytes; decoding returns the data as is.

      iex> spec = %{shape: {1}, dtype: :float32, fill_value: 0, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.Bitround.init(%{"keepbits" => 2}, spec)
      iex> ExZarr.Codecs.Bitround.encode(<<1.3::float-32-little>>, s)
      {:ok, <<1.25::float-32-little>>}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.bitround",
    v2_id: "bitround",
    kind: :array_to_array,
    keys: ["keepbits"]

  alias ExZarr.Codec.Config
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @mantissa %{float16: 10, float32: 23, float64: 52}

  @impl true
  def init(config, spec) do
    dtype = Map.get(spec, :dtype)

    with {:ok, bits} <- Map.fetch(@mantissa, dtype) |> or_error(dtype),
         {:ok, keepbits} <- Config.integer(config, "keepbits", :required, 0..bits) do
      {:ok, %{keepbits: keepbits, width: Numcodecs.itemsize(dtype)}}
    end
  end

  defp or_error({:ok, bits}, _dtype), do: {:ok, bits}
  defp or_error(:error, dtype), do: {:error, {:unsupported_dtype, dtype}}

  @impl true
  def resolve_spec(spec, _s), do: spec

  @impl true
  def encode(data, s), do: Native.bitround(IO.iodata_to_binary(data), s.width, s.keepbits)

  @impl true
  def decode(data, _s), do: {:ok, data}

  @impl true
  def configuration(s), do: %{"keepbits" => s.keepbits}
end
