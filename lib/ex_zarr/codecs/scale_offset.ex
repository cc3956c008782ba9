defmodule ExZarr.Codecs.ScaleOffset do
  @moduledoc """
  The zarr-extensions `scale_offset` codec (Zarr v3), array->array on integer and float
  chunks: encodes `(x - offset) * scale` and decodes `x / scale + offset`, in the chunk's own
  data type. `offset` (default 0) and `scale` (default 1, not zero) are written as fill values
  of that type (`"NaN"`, `"0x3f800000"`, ... for floats). Floats compute with the type's
  rounding; integers exactly, and a result outside the type, or a stored integer that is not
  a multiple of `scale`, is an error, as in zarr-python.

  Usually followed by a codec that narrows the type (zarr-python 3.4 writes it alone too).

      iex> spec = %{shape: {3}, dtype: :int16, fill_value: 0, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.ScaleOffset.init(%{"offset" => 10, "scale" => 4}, spec)
      iex> {:ok, enc} = ExZarr.Codecs.ScaleOffset.encode(<<10::16-little, 11::16-little, 9::16-little-signed>>, s)
      iex> enc
      <<0::16, 4::16-little, -4::16-little-signed>>
      iex> ExZarr.Codecs.ScaleOffset.decode(<<5::16-little>>, %{s | n: 1})
      {:error, {:scale_offset, "element 0 is not a multiple of scale or decodes out of range"}}
  """
  @behaviour ExZarr.Codec

  alias ExZarr.Codec.Config
  alias ExZarr.{DType, Native, Shape}
  require DType

  @impl true
  def name, do: "scale_offset"

  @impl true
  def kind, do: :array_to_array

  @impl true
  def config_keys, do: ["offset", "scale"]

  @impl true
  def init(config, %{dtype: dtype} = spec) when DType.is_standard_numeric(dtype) do
    with {:ok, offset} <- value(config, "offset", 0, dtype),
         {:ok, scale} <- value(config, "scale", 1, dtype),
         :ok <- nonzero(scale, Config.get(config, "scale")) do
      s = %{
        dtype: dtype,
        n: Shape.product(spec.shape),
        config: %{
          "offset" => Config.get(config, "offset", 0),
          "scale" => Config.get(config, "scale", 1)
        },
        offset: DType.fill_element(dtype, offset),
        scale: DType.fill_element(dtype, scale)
      }

      with {:ok, fill} <- encoded_fill(spec, s), do: {:ok, Map.put(s, :fill, fill)}
    end
  end

  def init(_config, spec), do: {:error, {:unsupported_dtype, Map.get(spec, :dtype)}}

  defp value(config, key, default, dtype) do
    json = Config.get(config, key, default)

    case DType.decode_fill(dtype, json, 3) do
      {:ok, value} -> {:ok, value}
      {:error, _} -> Config.invalid(key, json, "a value of the array's data type #{dtype}")
    end
  end

  defp nonzero(scale, json) when scale == 0, do: Config.invalid("scale", json, "a non-zero value")
  defp nonzero(_scale, _json), do: :ok

  # The fill value the next codec sees: the array's, encoded.
  defp encoded_fill(spec, s) do
    with {:ok, fill} <- DType.cast_fill(s.dtype, spec.fill_value) do
      element = DType.fill_element(s.dtype, fill)

      case Native.scale_offset(element, s.dtype, s.offset, s.scale, false) do
        {:ok, encoded} -> {:ok, DType.element_value(s.dtype, encoded)}
        {:error, _} -> {:error, {:fill_value_out_of_range, spec.fill_value}}
      end
    end
  end

  @impl true
  def resolve_spec(spec, s), do: %{spec | fill_value: s.fill}

  @impl true
  def encode(data, s), do: run(IO.iodata_to_binary(data), s, false)

  @impl true
  def decode(data, s), do: run(data, s, true)

  defp run(data, s, decode?) do
    if byte_size(data) == s.n * DType.itemsize(s.dtype),
      do: Native.scale_offset(data, s.dtype, s.offset, s.scale, decode?),
      else: {:error, {:scale_offset, {:size, byte_size(data), s.n * DType.itemsize(s.dtype)}}}
  end

  @impl true
  def encoded_size(size, _s), do: size

  @impl true
  def configuration(s), do: s.config
end
