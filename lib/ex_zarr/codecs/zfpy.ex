defmodule ExZarr.Codecs.Zfpy do
  @moduledoc """
  numcodecs ZFPY (v3 `numcodecs.zfpy`, an array->bytes codec; v2 compressor `zfpy`): zfp
  compression of int32, int64, float32 and float64 chunks of 1 to 4 dimensions, with zfp's full
  header, byte for byte as zfpy writes it (zfp 1.0.1 built into the NIF, see
  `c_src/sources/Cargo.toml`; Debian's libzfp where cargo is missing).

  Configuration (numcodecs'): `mode` 4 fixed accuracy (default) with `tolerance`, 2 fixed rate
  with `rate` (bits per value, up to 64), 3 fixed precision with `precision` (bit planes, up to
  64); the parameter of the mode at -1 (the default) compresses losslessly (zfp's reversible
  mode). The parameters of the other modes are kept but unused, as in numcodecs, and
  `compression_kwargs` (numcodecs' record of the mode's parameter) is read and rewritten.

      iex> spec = %{shape: {4}, dtype: :float64, fill_value: 0.0, decoded_size: nil}
      iex> {:ok, s} = ExZarr.Codecs.Zfpy.init(%{"mode" => 4, "tolerance" => 0.5}, spec)
      iex> data = for x <- [1.0, 2.0, 3.0, 4.0], into: <<>>, do: <<x::float-64-little>>
      iex> {:ok, stream} = ExZarr.Codecs.Zfpy.encode(data, s)
      iex> {:ok, decoded} = ExZarr.Codecs.Zfpy.decode(stream, s)
      iex> values = for <<x::float-64-little <- decoded>>, do: x
      iex> Enum.zip_with(values, [1.0, 2.0, 3.0, 4.0], &(abs(&1 - &2) <= 0.5))
      [true, true, true, true]

  Decoding checks that the stream's header describes exactly the chunk (type and shape), and
  never reads past the stream or writes past the chunk whatever the stream holds.
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.zfpy",
    v2_id: "zfpy",
    kind: :array_to_bytes,
    keys: ["mode", "tolerance", "rate", "precision", "compression_kwargs"]

  alias ExZarr.Codec.Config
  alias ExZarr.Native

  @types %{int32: 1, int64: 2, float32: 3, float64: 4}
  @params %{2 => "rate", 3 => "precision", 4 => "tolerance"}

  @impl true
  def to_v2(config) do
    with {:ok, state} <- options(config) do
      params = Map.new(@params, fn {_mode, key} -> {key, state[key]} end)
      kwargs = %{@params[state.mode] => state.param}

      {:ok,
       Map.merge(params, %{"id" => v2_id(), "mode" => state.mode, "compression_kwargs" => kwargs})}
    end
  end

  @impl true
  def init(config, %{shape: shape, dtype: dtype}) do
    with {:ok, state} <- options(config),
         {:ok, type} <- zfp_type(dtype),
         :ok <- check_rank(shape),
         :ok <- check_rate(state, dtype, tuple_size(shape)) do
      {:ok, Map.merge(state, %{type: type, shape: shape, config: config})}
    end
  end

  # zfp gives a block of 4^ndim values round(rate * 4^ndim) bits; a float block needs at least
  # its exponent's (zfp writes past its buffer otherwise).
  defp check_rate(%{mode: 2, param: rate}, dtype, ndim) when rate >= 0 do
    needed = %{float32: 9, float64: 12}[dtype] || 1

    if rate * Bitwise.bsl(1, 2 * ndim) + 0.5 >= needed,
      do: :ok,
      else: Config.invalid("rate", rate, "a rate giving a #{dtype} block at least #{needed} bits")
  end

  defp check_rate(_state, _dtype, _ndim), do: :ok

  defp options(config) do
    with {:ok, mode} <- Config.integer(config, "mode", 4, 2..4),
         {:ok, tolerance} <- Config.number(config, "tolerance", -1),
         {:ok, rate} <- Config.number(config, "rate", -1),
         {:ok, precision} <- Config.integer(config, "precision", -1, -1..64),
         :ok <- kwargs_option(config) do
      state = %{"tolerance" => tolerance, "rate" => rate, "precision" => precision}
      param = state[@params[mode]]

      if @params[mode] == "rate" and param > 64,
        do: Config.invalid("rate", param, "at most 64 bits per value"),
        else: {:ok, Map.merge(state, %{mode: mode, param: param})}
    end
  end

  defp kwargs_option(config) do
    case Config.get(config, "compression_kwargs", %{}) do
      kwargs when is_map(kwargs) -> :ok
      other -> Config.invalid("compression_kwargs", other, "an object")
    end
  end

  defp zfp_type(dtype) do
    case Map.fetch(@types, dtype) do
      {:ok, type} -> {:ok, type}
      :error -> {:error, {:unsupported_dtype, dtype, "zfpy takes int32, int64, float32, float64"}}
    end
  end

  defp check_rank(shape) when tuple_size(shape) in 1..4, do: :ok
  defp check_rank(shape), do: {:error, {:unsupported_shape, shape, "zfpy takes 1 to 4 axes"}}

  @impl true
  def encode(data, s),
    do: Native.zfp_encode(IO.iodata_to_binary(data), s.type, s.shape, s.mode, s.param * 1.0)

  @impl true
  def decode(data, s), do: Native.zfp_decode(data, s.type, s.shape)

  @impl true
  def configuration(s), do: s.config
end
