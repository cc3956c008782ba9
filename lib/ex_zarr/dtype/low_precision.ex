defmodule ExZarr.DType.LowPrecision do
  @moduledoc """
  The low-precision data types of machine-learning checkpoints and quantized models, as the
  zarr-extensions registry defines them and tensorstore writes them (names in Zarr v3
  `data_type`, and as the whole `dtype` string in tensorstore's Zarr v2 arrays):

  | type | bits | layout | specials |
  |---|---|---|---|
  | `:bfloat16` | 16 | sign, 8 exponent (bias 127), 7 mantissa | IEEE: ±Infinity, NaN `0x7fc0` |
  | `:float8_e3m4` | 8 | sign, 3 exponent (bias 3), 4 mantissa | IEEE: ±Infinity, NaN `0x78` |
  | `:float8_e4m3fn` | 8 | sign, 4 exponent (bias 7), 3 mantissa | no infinity, NaN `0x7f`/`0xff` |
  | `:float8_e4m3fnuz` | 8 | sign, 4 exponent (bias 8), 3 mantissa | no infinity or -0, NaN `0x80` |
  | `:float8_e4m3b11fnuz` | 8 | sign, 4 exponent (bias 11), 3 mantissa | no infinity or -0, NaN `0x80` |
  | `:float8_e5m2` | 8 | sign, 5 exponent (bias 15), 2 mantissa | IEEE: ±Infinity, NaN `0x7e` |
  | `:float8_e5m2fnuz` | 8 | sign, 5 exponent (bias 16), 2 mantissa | no infinity or -0, NaN `0x80` |
  | `:float8_e8m0fnu` | 8 | 8 exponent (bias 127): powers of two | no sign, zero or infinity, NaN `0xff` |
  | `:float4_e2m1fn` | 4 | sign, 2 exponent (bias 1), 1 mantissa | no infinity or NaN |
  | `:int2`, `:int4` | 2, 4 | two's complement | range -2..1, -8..7 |
  | `:uint2`, `:uint4` | 2, 4 | unsigned | range 0..3, 0..15 |

  ## Data in and out of arrays

  Every element keeps the width it is stored with by the `bytes` codec: two bytes
  (little-endian) for `:bfloat16`, one byte for all the others, the raw bit pattern in it.
  The sub-byte types take the low bits of their byte, as tensorstore holds them in memory:
  `:int2` / `:int4` sign-extended (the byte is the value as an int8: -1 is `0xFF`),
  `:uint2` / `:uint4` and `:float4_e2m1fn` with the upper bits zero. Writing an element whose
  upper bits do not follow this is an error; on disk the `bytes` codec writes the low bits
  with the upper bits zero, and ignores the upper bits when reading, as the specifications say.

  ## Fill values

  As for the core floats: a number (rounded to the nearest value of the type, ties to even),
  `"NaN"`, `"Infinity"`, `"-Infinity"` (where the type has them), or the bit pattern as
  `"0x"` and two hex digits per stored byte (Zarr v3). The canonical form is the same as for
  `:float32` (`ExZarr.DType`): an Elixir float exactly representable in the type, `:nan`
  (the canonical NaN above), `:infinity`, `:neg_infinity`, or `{:bits, n}` for another NaN.

  A number out of the type's range becomes an infinity in the IEEE types. In the others, a
  fill value read from metadata follows the type's conversion in ml_dtypes and tensorstore
  (NaN, or the largest value for `:float4_e2m1fn`; zero and negative numbers are NaN in
  `:float8_e8m0fnu`, whose default fill value is NaN), but one given to `ExZarr.create/1` is
  an error.

      iex> ExZarr.DType.LowPrecision.to_value(:bfloat16, 0x3F80)
      1.0
      iex> ExZarr.DType.LowPrecision.from_value(:float8_e4m3fn, 0.3)
      {:ok, 0x2A}
      iex> ExZarr.DType.LowPrecision.from_value(:float8_e4m3fn, 1000.0)
      {:error, :overflow}
      iex> ExZarr.DType.decode_fill(:float8_e5m2, "0x7f", 3)
      {:ok, {:bits, 0x7F}}
  """

  import Bitwise

  # type => {stored bits, exponent bits, mantissa bits, bias, specials}
  @floats %{
    bfloat16: {16, 8, 7, 127, :ieee},
    float8_e3m4: {8, 3, 4, 3, :ieee},
    float8_e4m3fn: {8, 4, 3, 7, :fn},
    float8_e4m3fnuz: {8, 4, 3, 8, :fnuz},
    float8_e4m3b11fnuz: {8, 4, 3, 11, :fnuz},
    float8_e5m2: {8, 5, 2, 15, :ieee},
    float8_e5m2fnuz: {8, 5, 2, 16, :fnuz},
    float8_e8m0fnu: {8, 8, 0, 127, :e8m0},
    float4_e2m1fn: {4, 2, 1, 1, :finite}
  }

  # type => {kind, bits}
  @ints %{int2: {:int, 2}, int4: {:int, 4}, uint2: {:uint, 2}, uint4: {:uint, 4}}

  @type float_type ::
          :bfloat16
          | :float8_e3m4
          | :float8_e4m3fn
          | :float8_e4m3fnuz
          | :float8_e4m3b11fnuz
          | :float8_e5m2
          | :float8_e5m2fnuz
          | :float8_e8m0fnu
          | :float4_e2m1fn

  @type int_type :: :int2 | :int4 | :uint2 | :uint4
  @type t :: float_type() | int_type()

  @doc """
  Every low-precision type.

      iex> :bfloat16 in ExZarr.DType.LowPrecision.all()
      true
  """
  @spec all() :: [t()]
  def all, do: Enum.sort(Map.keys(@floats) ++ Map.keys(@ints))

  @doc "Guard: true for the low-precision types."
  defguard is_low_precision(dtype) when is_map_key(@floats, dtype) or is_map_key(@ints, dtype)

  @doc """
  `{kind, item size}` of a type as `ExZarr.DType` describes it (`:ml_float` for the floats,
  `:int` / `:uint` for the integers), `:error` for any other term.

      iex> ExZarr.DType.LowPrecision.info(:bfloat16)
      {:ml_float, 2}
      iex> ExZarr.DType.LowPrecision.info(:int4)
      {:int, 1}
  """
  @spec info(term()) :: {:ml_float | :int | :uint, pos_integer()} | :error
  def info(dtype) when is_map_key(@floats, dtype), do: {:ml_float, bytes(dtype)}
  def info(dtype) when is_map_key(@ints, dtype), do: {elem(Map.fetch!(@ints, dtype), 0), 1}
  def info(_other), do: :error

  @doc """
  The type of a Zarr v3 `data_type` name (also tensorstore's Zarr v2 `dtype`), `:error` if
  it is not one of these.

      iex> ExZarr.DType.LowPrecision.from_name("float8_e5m2")
      {:ok, :float8_e5m2}
  """
  @spec from_name(term()) :: {:ok, t()} | :error
  def from_name(name) when is_binary(name) do
    Enum.find_value(all(), :error, fn dtype ->
      if Atom.to_string(dtype) == name, do: {:ok, dtype}
    end)
  end

  def from_name(_other), do: :error

  @doc """
  For the types stored in the low bits of a byte, `{bits, signed}`; `nil` for the others.

      iex> ExZarr.DType.LowPrecision.packed_bits(:int4)
      {4, true}
      iex> ExZarr.DType.LowPrecision.packed_bits(:float8_e5m2)
      nil
  """
  @spec packed_bits(term()) :: {pos_integer(), boolean()} | nil
  def packed_bits(:float4_e2m1fn), do: {4, false}
  def packed_bits(dtype) when is_map_key(@ints, dtype), do: ints_bits(Map.fetch!(@ints, dtype))
  def packed_bits(_other), do: nil

  defp ints_bits({kind, bits}), do: {bits, kind == :int}

  @doc """
  The smallest and largest value of a low-precision integer type.

      iex> ExZarr.DType.LowPrecision.int_range(:int2)
      {-2, 1}
  """
  @spec int_range(int_type()) :: {integer(), integer()}
  def int_range(dtype) do
    case Map.fetch!(@ints, dtype) do
      {:int, bits} -> {-(1 <<< (bits - 1)), (1 <<< (bits - 1)) - 1}
      {:uint, bits} -> {0, (1 <<< bits) - 1}
    end
  end

  @doc "The default fill value of a float type: 0.0, NaN for `:float8_e8m0fnu` (no zero)."
  @spec default_fill(float_type()) :: float() | :nan
  def default_fill(:float8_e8m0fnu), do: :nan
  def default_fill(_dtype), do: 0.0

  # ---- bit patterns <-> values ----

  @doc """
  The value of a bit pattern of a float type: a float, `:nan`, `{:bits, n}` for a NaN other
  than the canonical one, `:infinity` or `:neg_infinity`.

      iex> ExZarr.DType.LowPrecision.to_value(:float8_e4m3fnuz, 0x80)
      :nan
      iex> ExZarr.DType.LowPrecision.to_value(:float4_e2m1fn, 0x0A)
      -1.0
  """
  @spec to_value(float_type(), non_neg_integer()) :: ExZarr.DType.float_value()
  def to_value(dtype, bits) do
    {width, e, m, bias, style} = format = Map.fetch!(@floats, dtype)
    sign = if signed?(style), do: bits >>> (width - 1) &&& 1, else: 0
    expf = bits >>> m &&& (1 <<< e) - 1
    mant = bits &&& (1 <<< m) - 1

    cond do
      nan?(format, bits) and bits == canonical_nan(format) -> :nan
      nan?(format, bits) -> {:bits, bits}
      style == :ieee and expf == (1 <<< e) - 1 -> if sign == 1, do: :neg_infinity, else: :infinity
      style == :e8m0 -> signed(sign, pow2(expf - bias))
      expf == 0 -> signed(sign, mant * pow2(1 - bias - m))
      true -> signed(sign, ((1 <<< m) + mant) * pow2(expf - bias - m))
    end
  end

  @doc """
  The bit pattern of a value of a float type: a number is rounded to the nearest value of the
  type (ties to even; for `:bfloat16` through float32, as ml_dtypes and tensorstore do). Errors: `:overflow` (beyond the largest finite value of a type without
  infinities), `:not_representable` (zero or a negative number in `:float8_e8m0fnu`, a NaN or
  an infinity the type does not have).

      iex> ExZarr.DType.LowPrecision.from_value(:bfloat16, 1.0e-30)
      {:ok, 0x0DA2}
      iex> ExZarr.DType.LowPrecision.from_value(:float8_e5m2, 1.0e6)
      {:ok, 0x7C}
      iex> ExZarr.DType.LowPrecision.from_value(:float8_e5m2fnuz, :infinity)
      {:error, :not_representable}
  """
  @spec from_value(float_type(), number() | ExZarr.DType.float_value()) ::
          {:ok, non_neg_integer()} | {:error, :overflow | :not_representable}
  def from_value(dtype, value), do: bits_of(Map.fetch!(@floats, dtype), value)

  defp bits_of(format, :nan), do: if(nan = canonical_nan(format), do: {:ok, nan}, else: no())

  defp bits_of({width, e, m, _, :ieee}, inf) when inf in [:infinity, :neg_infinity] do
    sign = if inf == :neg_infinity, do: 1 <<< (width - 1), else: 0
    {:ok, sign ||| ((1 <<< e) - 1) <<< m}
  end

  defp bits_of({width, _, _, _, _} = format, {:bits, bits}) when is_integer(bits) do
    if bits >= 0 and bits < 1 <<< width and nan?(format, bits), do: {:ok, bits}, else: no()
  end

  defp bits_of(_format, int) when is_integer(int) and abs(int) >= 1 <<< 1024,
    do: {:error, :overflow}

  defp bits_of(format, int) when is_integer(int), do: bits_of(format, int * 1.0)
  # bfloat16 rounds through float32, as ml_dtypes and tensorstore convert a double to it (a
  # double beyond float32's range is beyond bfloat16's too).
  defp bits_of({16, _, _, _, _} = format, float) when is_float(float) do
    case <<float::float-32>> do
      <<single::float-32>> -> round_bits(format, single)
      _infinity -> round_bits(format, float)
    end
  end

  defp bits_of(format, float) when is_float(float), do: round_bits(format, float)
  defp bits_of(_format, _other), do: no()

  defp no, do: {:error, :not_representable}

  # Rounds a double to the format, ties to even, on its exact value M x 2^E.
  defp round_bits({width, _e, m, bias, style} = format, x) do
    <<s::1, exp64::11, frac::52>> = <<x::float-64>>

    {mant53, e2} = if exp64 == 0, do: {frac, -1074}, else: {frac + (1 <<< 52), exp64 - 1075}

    if mant53 == 0 do
      zero(format, s)
    else
      emin = if style == :e8m0, do: -bias, else: 1 - bias
      top = bit_length(mant53) - 1 + e2
      qexp = max(top, emin) - m
      {q, qexp} = carry(round_shift(mant53, e2 - qexp), qexp, m)

      cond do
        q == 0 -> zero(format, s)
        s == 1 and not signed?(style) -> no()
        true -> finite_bits(format, s, qexp + m + bias, q, width)
      end
    end
  end

  defp carry(q, qexp, m) do
    if q == 1 <<< (m + 1), do: {1 <<< m, qexp + 1}, else: {q, qexp}
  end

  # q < 2^m: a subnormal (exponent field 0); else a normal number. Beyond the largest finite
  # value: an infinity in the IEEE types, an error in the others.
  defp finite_bits({_, _, m, _, style} = format, s, expf, q, width) do
    {expf, mant} = if q < 1 <<< m, do: {0, q}, else: {expf, q - (1 <<< m)}
    {max_exp, max_mant} = max_finite(format)

    cond do
      expf < max_exp or (expf == max_exp and mant <= max_mant) ->
        {:ok, s <<< (width - 1) ||| expf <<< m ||| mant}

      style == :ieee ->
        bits_of(format, if(s == 1, do: :neg_infinity, else: :infinity))

      true ->
        {:error, :overflow}
    end
  end

  defp zero({_, _, _, _, :e8m0}, _sign), do: no()
  defp zero({_, _, _, _, :fnuz}, _sign), do: {:ok, 0}
  defp zero({width, _, _, _, _}, sign), do: {:ok, sign <<< (width - 1)}

  defp round_shift(int, shift) when shift >= 0, do: int <<< shift

  defp round_shift(int, shift) do
    n = -shift
    q = int >>> n
    rest = int &&& (1 <<< n) - 1
    half = 1 <<< (n - 1)
    if rest > half or (rest == half and (q &&& 1) == 1), do: q + 1, else: q
  end

  defp bit_length(int), do: length(Integer.digits(int, 2))

  defp max_finite({_, e, m, _, style}) do
    case style do
      :ieee -> {(1 <<< e) - 2, (1 <<< m) - 1}
      :fn -> {(1 <<< e) - 1, (1 <<< m) - 2}
      :e8m0 -> {(1 <<< e) - 2, 0}
      _ -> {(1 <<< e) - 1, (1 <<< m) - 1}
    end
  end

  defp signed?(style), do: style != :e8m0

  defp nan?({width, e, m, _, style}, bits) do
    case style do
      :ieee -> (bits >>> m &&& (1 <<< e) - 1) == (1 <<< e) - 1 and (bits &&& (1 <<< m) - 1) != 0
      :fn -> (bits &&& (1 <<< (width - 1)) - 1) == (1 <<< (width - 1)) - 1
      :fnuz -> bits == 1 <<< (width - 1)
      :e8m0 -> bits == 0xFF
      :finite -> false
    end
  end

  defp canonical_nan({_, e, m, _, style} = format) do
    case style do
      :ieee -> ((1 <<< e) - 1) <<< m ||| 1 <<< (m - 1)
      :fn -> ((1 <<< e) - 1) <<< m ||| (1 <<< m) - 1
      :fnuz -> 1 <<< (elem(format, 0) - 1)
      :e8m0 -> 0xFF
      :finite -> nil
    end
  end

  defp pow2(k), do: :math.pow(2.0, k)

  defp signed(0, value), do: value

  defp signed(1, value) do
    <<bits::64>> = <<value::float-64>>
    <<negative::float-64>> = <<bits ||| 1 <<< 63::64>>
    negative
  end

  defp bytes(dtype), do: div(elem(Map.fetch!(@floats, dtype), 0) + 7, 8)

  # ---- fill values ----

  @doc """
  Decodes a JSON fill value of a float type (as `ExZarr.DType.decode_fill/3`), following the
  type's conversion for numbers out of its range. `:error` when it is not a fill value of the
  type.
  """
  @spec decode_fill(float_type(), term(), 2 | 3) :: {:ok, ExZarr.DType.float_value()} | :error
  def decode_fill(dtype, "0x" <> hex, 3) do
    with true <- byte_size(hex) == 2 * bytes(dtype),
         {:ok, raw} <- Base.decode16(hex, case: :mixed),
         bits = :binary.decode_unsigned(raw),
         true <- bits < 1 <<< elem(Map.fetch!(@floats, dtype), 0) do
      {:ok, to_value(dtype, bits)}
    else
      _ -> :error
    end
  end

  def decode_fill(dtype, json, _format) do
    special = %{"NaN" => :nan, "Infinity" => :infinity, "-Infinity" => :neg_infinity}

    case from_value(dtype, Map.get(special, json, json)) do
      {:ok, bits} -> {:ok, to_value(dtype, bits)}
      {:error, :not_representable} when is_number(json) -> out_of_range(dtype, json)
      {:error, :overflow} -> out_of_range(dtype, json)
      {:error, _} -> :error
    end
  end

  # What ml_dtypes gives for a number out of range: NaN, or the largest value of a type
  # without NaN.
  defp out_of_range(:float4_e2m1fn, number), do: {:ok, if(number < 0, do: -6.0, else: 6.0)}
  defp out_of_range(_dtype, _number), do: {:ok, :nan}

  @doc """
  Casts a fill value given by a user to the canonical form: a number is rounded to the type;
  one out of its range (beyond the largest value of a type without infinities, zero or
  negative in `:float8_e8m0fnu`), or a special value the type does not have, is `:error`.
  """
  @spec cast_fill(float_type(), term()) :: {:ok, ExZarr.DType.float_value()} | :error
  def cast_fill(dtype, value) do
    case from_value(dtype, value) do
      {:ok, bits} -> {:ok, to_value(dtype, bits)}
      {:error, _} -> :error
    end
  end

  @doc """
  The JSON form of a canonical fill value: the number, `"NaN"`, `"Infinity"`, `"-Infinity"`,
  or, for a non-canonical NaN, its bit pattern in hex (`"NaN"` in Zarr v2).

      iex> ExZarr.DType.LowPrecision.encode_fill(:bfloat16, {:bits, 0x7FC1}, 3)
      "0x7fc1"
  """
  @spec encode_fill(float_type(), ExZarr.DType.float_value(), 2 | 3) :: term()
  def encode_fill(_dtype, :nan, _format), do: "NaN"
  def encode_fill(_dtype, :infinity, _format), do: "Infinity"
  def encode_fill(_dtype, :neg_infinity, _format), do: "-Infinity"
  def encode_fill(_dtype, {:bits, _}, 2), do: "NaN"

  def encode_fill(dtype, {:bits, bits}, 3) do
    hex = bits |> Integer.to_string(16) |> String.downcase()
    "0x" <> String.pad_leading(hex, 2 * bytes(dtype), "0")
  end

  def encode_fill(_dtype, value, _format), do: value

  @doc """
  The stored bytes of one element holding a canonical fill value (little-endian).

      iex> ExZarr.DType.LowPrecision.fill_element(:bfloat16, :nan)
      <<0xC0, 0x7F>>
  """
  @spec fill_element(float_type(), ExZarr.DType.float_value()) :: binary()
  def fill_element(dtype, value) do
    {:ok, bits} = from_value(dtype, value)
    <<bits::little-size(8 * bytes(dtype))>>
  end
end
