defmodule ExZarr.Codecs.FixedScaleOffset do
  @moduledoc """
  numcodecs FixedScaleOffset filter (v3 `numcodecs.fixedscaleoffset`, v2 filter
  `fixedscaleoffset`), array->array: encodes `round((x - offset) * scale)` (half to even) as
  `astype`, decodes `x / scale + offset` as `dtype`, with numpy's arithmetic precision.

      iex> spec = %{shape: {2}, dtype: :float64, fill_value: 0, decoded_size: nil}
      iex> config = %{"offset" => 1000, "scale" => 10, "dtype" => "<f8", "astype" => "|u1"}
      iex> {:ok, s} = ExZarr.Codecs.FixedScaleOffset.init(config, spec)
      iex> data = <<1000.0::float-64-little, 1001.06::float-64-little>>
      iex> ExZarr.Codecs.FixedScaleOffset.encode(data, s)
      {:ok, <<0, 11>>}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.fixedscaleoffset",
    v2_id: "fixedscaleoffset",
    kind: :array_to_array,
    keys: ["offset", "scale", "dtype", "astype"]

  alias ExZarr.Codec.Config
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @impl true
  def init(config, spec) do
    with {:ok, dtype, astype} <- Numcodecs.dtype_and_astype(config, spec),
         {:ok, offset} <- Config.number(config, "offset", :required),
         {:ok, scale} <- Config.number(config, "scale", :required) do
      int_math = is_integer(offset) and is_integer(scale) and Numcodecs.integer_dtype?(dtype)
      {:ok, %{dtype: dtype, astype: astype, offset: offset, scale: scale, int_math: int_math}}
    end
  end

  @impl true
  def resolve_spec(spec, s), do: %{spec | dtype: s.astype}

  @impl true
  def encode(data, s) do
    data = IO.iodata_to_binary(data)
    Native.fso_encode(data, s.dtype, s.astype, s.offset, s.scale, s.int_math)
  end

  @impl true
  def decode(data, s), do: Native.fso_decode(data, s.astype, s.dtype, s.offset, s.scale)

  @impl true
  def configuration(s),
    do:
      Map.merge(Numcodecs.dtype_and_astype_config(s), %{"offset" => s.offset, "scale" => s.scale})
end
