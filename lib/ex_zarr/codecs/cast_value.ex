defmodule ExZarr.Codecs.CastValue do
  @moduledoc """
  The zarr-extensions `cast_value` codec (Zarr v3), array->array: stores each element
  converted by value to `data_type`, and converts back on reading, as zarr-python 3.4 does
  with cast-value-rs. Both types are integer or float types (`int8` ... `uint64`, `float16`,
  `float32`, `float64`; the low-precision types are not supported here).

  Configuration:

    * `data_type` (required): the stored type, as v3 metadata names it.
    * `rounding`: how a value between two of the target's values rounds, also from floats to
      narrower floats and from integers to floats: `"nearest-even"` (default),
      `"towards-zero"`, `"towards-positive"`, `"towards-negative"`, `"nearest-away"`.
    * `out_of_range`: absent (or `"error"`) refuses a value outside the target's range;
      `"clamp"` gives its minimum or maximum (infinities for float types); `"wrap"` (integer
      targets only) keeps the low bits. NaN and infinities never fit an integer type.
    * `scalar_map`: `{"encode": [[from, to], ...], "decode": [[to, from], ...]}`, values
      replaced before any conversion (a NaN key matches NaN), in fill-value JSON.

  The same rounding and range rules convert back on reading.

      iex> spec = %{shape: {3}, dtype: :float64, fill_value: 0.0, decoded_size: nil}
      iex> config = %{"data_type" => "uint8", "out_of_range" => "clamp",
      ...>   "scalar_map" => %{"encode" => [["NaN", 0]]}}
      iex> {:ok, s} = ExZarr.Codecs.CastValue.init(config, spec)
      iex> nan = ExZarr.DType.fill_element(:float64, :nan)
      iex> ExZarr.Codecs.CastValue.encode([<<2.5::float-64-little, 300.0::float-64-little>>, nan], s)
      {:ok, <<2, 255, 0>>}
  """
  @behaviour ExZarr.Codec

  alias ExZarr.Codec.Config
  alias ExZarr.{DType, Native, Shape}
  require DType

  @rounding ~w(nearest-even towards-zero towards-positive towards-negative nearest-away)
  @out_of_range ["error", "clamp", "wrap"]

  @impl true
  def name, do: "cast_value"

  @impl true
  def kind, do: :array_to_array

  @impl true
  def config_keys, do: ["data_type", "rounding", "out_of_range", "scalar_map"]

  @impl true
  def init(config, %{dtype: source} = spec) when DType.is_standard_numeric(source) do
    with {:ok, target} <- target(config),
         {:ok, rounding} <- Config.one_of(config, "rounding", "nearest-even", @rounding),
         {:ok, range} <- out_of_range(config, target),
         {:ok, encode_map} <- scalar_map(config, "encode", source, target),
         {:ok, decode_map} <- scalar_map(config, "decode", target, source) do
      s = %{
        source: source,
        target: target,
        n: Shape.product(spec.shape),
        modes: {index(@rounding, rounding), index(@out_of_range, range)},
        encode_map: encode_map,
        decode_map: decode_map,
        config: Map.take(config, config_keys())
      }

      with {:ok, fill} <- encoded_fill(spec, s), do: {:ok, Map.put(s, :fill, fill)}
    end
  end

  def init(_config, spec), do: {:error, {:unsupported_dtype, Map.get(spec, :dtype)}}

  defp target(config) do
    case Config.fetch(config, "data_type") do
      {:ok, json} ->
        case DType.from_v3(json) do
          {:ok, dtype} when DType.is_standard_numeric(dtype) -> {:ok, dtype}
          _ -> Config.invalid("data_type", json, "an integer or float type (int8 ... float64)")
        end

      :error ->
        {:error, {:missing_key, "data_type"}}
    end
  end

  defp out_of_range(config, target) do
    with {:ok, range} <- Config.one_of(config, "out_of_range", "error", @out_of_range) do
      if range == "wrap" and DType.float?(target),
        do: Config.invalid("out_of_range", range, "\"wrap\" only for an integer data_type"),
        else: {:ok, range}
    end
  end

  # A direction of the scalar map as two binaries: the keys (elements of `from`) and the
  # values (elements of `to`).
  defp scalar_map(config, direction, from, to) do
    map = Config.get(config, "scalar_map", %{})

    with :ok <- check_map_keys(map),
         {:ok, pairs} <- map_pairs(Map.get(map, direction, []), direction, from, to) do
      {:ok,
       {pairs |> Enum.map(&DType.fill_element(from, elem(&1, 0))) |> IO.iodata_to_binary(),
        pairs |> Enum.map(&DType.fill_element(to, elem(&1, 1))) |> IO.iodata_to_binary()}}
    end
  end

  defp check_map_keys(map) when is_map(map) do
    case Map.keys(map) -- ["encode", "decode"] do
      [] ->
        :ok

      [key | _] ->
        Config.invalid("scalar_map", map, "only the keys encode and decode, not #{key}")
    end
  end

  defp check_map_keys(map), do: Config.invalid("scalar_map", map, "an object")

  defp map_pairs(pairs, direction, from, to) when is_list(pairs) do
    ExZarr.Result.map_ok(pairs, fn
      [key, value] ->
        with {:ok, k} <- DType.decode_fill(from, key, 3),
             {:ok, v} <- DType.decode_fill(to, value, 3) do
          {:ok, {k, v}}
        else
          _ -> bad_pair(direction, [key, value], from, to)
        end

      pair ->
        bad_pair(direction, pair, from, to)
    end)
  end

  defp map_pairs(pairs, direction, _from, _to),
    do: Config.invalid("scalar_map", %{direction => pairs}, "a list of pairs")

  defp bad_pair(direction, pair, from, to),
    do:
      Config.invalid("scalar_map", %{direction => [pair]}, "pairs of a #{from} and a #{to} value")

  defp index(list, value), do: Enum.find_index(list, &(&1 == value))

  # The fill value the next codec sees: the array's, cast.
  defp encoded_fill(spec, s) do
    with {:ok, fill} <- DType.cast_fill(s.source, spec.fill_value),
         {:ok, element} <-
           cast(DType.fill_element(s.source, fill), s.source, s.target, s.encode_map, s) do
      {:ok, DType.element_value(s.target, element)}
    else
      {:error, _} -> {:error, {:fill_value_out_of_range, spec.fill_value}}
    end
  end

  defp cast(data, from, to, {keys, values}, %{modes: {rounding, range}}),
    do: Native.cast_value(data, from, to, rounding, range, keys, values)

  @impl true
  def resolve_spec(spec, s), do: %{spec | dtype: s.target, fill_value: s.fill}

  @impl true
  def encode(data, s) do
    data = IO.iodata_to_binary(data)

    with :ok <- check_size(data, s.source, s),
         do: cast(data, s.source, s.target, s.encode_map, s)
  end

  @impl true
  def decode(data, s) do
    with :ok <- check_size(data, s.target, s),
         do: cast(data, s.target, s.source, s.decode_map, s)
  end

  defp check_size(data, dtype, s) do
    if byte_size(data) == s.n * DType.itemsize(dtype),
      do: :ok,
      else: {:error, {:cast_value, {:size, byte_size(data), s.n * DType.itemsize(dtype)}}}
  end

  @impl true
  def encoded_size(size, s), do: div(size, DType.itemsize(s.source)) * DType.itemsize(s.target)

  @impl true
  def configuration(s), do: s.config
end
