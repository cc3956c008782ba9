defmodule ExZarr.Codecs.Quantize do
  @moduledoc """
  numcodecs Quantize filter (v3 `numcodecs.quantize`, v2 filter `quantize`), array->array and
  lossy: keeps `digits` decimal digits of precision by rounding to a power-of-two grid, computed
  in `dtype` (a float type) and stored as `astype` (default `dtype`).

      iex> spec = %{shape: {1}, dtype: :float64, fill_value: 0, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.Quantize.init(%{"digits" => 1, "dtype" => "<f8"}, spec)
      iex> ExZarr.Codecs.Quantize.encode(<<0.11::float-64-little>>, s)
      {:ok, <<0.125::float-64-little>>}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.quantize",
    v2_id: "quantize",
    kind: :array_to_array,
    keys: ["digits", "dtype", "astype"]

  alias ExZarr.Codec.Config
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @floats [:float16, :float32, :float64]

  @impl true
  def init(config, spec) do
    with {:ok, digits} <- Config.integer(config, "digits", :required, -300..300),
         {:ok, dtype, astype} <- Numcodecs.dtype_and_astype(config, spec),
         :ok <- float_type(config, "dtype", dtype),
         :ok <- float_type(config, "astype", astype) do
      {:ok, %{digits: digits, dtype: dtype, astype: astype, scale: scale(digits)}}
    end
  end

  defp float_type(_config, _key, dtype) when dtype in @floats, do: :ok

  defp float_type(config, key, dtype) do
    case Config.fetch(config, key) do
      {:ok, given} -> Config.invalid(key, given, "a float type (\"<f2\", \"<f4\", \"<f8\")")
      :error -> {:error, {:unsupported_dtype, dtype}}
    end
  end

  # The power of two numcodecs scales by: 2^ceil(log2(10^-e)) with e the rounded exponent of
  # the precision 10^-digits.
  defp scale(digits) do
    exp = :math.log10(:math.pow(10.0, -digits))
    exp = if exp < 0, do: Float.floor(exp), else: Float.ceil(exp)
    :math.pow(2.0, Float.ceil(:math.log2(:math.pow(10.0, -exp))))
  end

  @impl true
  def resolve_spec(spec, s), do: %{spec | dtype: s.astype}

  @impl true
  def encode(data, s), do: Native.quantize(IO.iodata_to_binary(data), s.dtype, s.astype, s.scale)

  @impl true
  def decode(data, %{astype: same, dtype: same}), do: {:ok, data}
  def decode(data, s), do: Native.cast(data, s.astype, s.dtype)

  @impl true
  def configuration(s), do: Map.put(Numcodecs.dtype_and_astype_config(s), "digits", s.digits)
end
