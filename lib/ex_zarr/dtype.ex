defmodule ExZarr.DType do
  @moduledoc """
  Zarr data types: names in v2 and v3 metadata, item sizes, and fill-value encodings.

  A data type is an atom: `:bool`, `:int8`, `:int16`, `:int32`, `:int64`, `:uint8`, `:uint16`,
  `:uint32`, `:uint64`, `:float16`, `:float32`, `:float64`, `:complex64`, `:complex128`.
  (Parameterised types such as fixed-length strings will be tuples like `{:fixed_utf32, n}`;
  `t:t/0` is open for them.)

  ## Fill values

  The canonical Elixir form of a fill value (what `ExZarr.Metadata` holds):

    * `:bool`: `true` / `false`
    * integers: an integer within the type's range
    * floats: an Elixir float, `:nan` (the canonical quiet NaN), `:infinity`, `:neg_infinity`,
      or `{:bits, n}` for a NaN whose bit pattern is not the canonical one. A float16/float32
      value is always exactly representable in its type (it is rounded when decoded).
    * complex: `{re, im}`, each part a float value as above
    * `nil`: a Zarr v2 `null` fill value (undefined; reads as `default_fill/1`)

      iex> ExZarr.DType.decode_fill(:float32, "NaN", 3)
      {:ok, :nan}
      iex> ExZarr.DType.encode_fill(:complex64, {1.0, :neg_infinity}, 3)
      [1.0, "-Infinity"]
      iex> ExZarr.DType.fill_element(:int16, -2)
      <<254, 255>>
  """

  @types %{
    bool: {:bool, 1},
    int8: {:int, 1},
    int16: {:int, 2},
    int32: {:int, 4},
    int64: {:int, 8},
    uint8: {:uint, 1},
    uint16: {:uint, 2},
    uint32: {:uint, 4},
    uint64: {:uint, 8},
    float16: {:float, 2},
    float32: {:float, 4},
    float64: {:float, 8},
    complex64: {:complex, 8},
    complex128: {:complex, 16}
  }

  @v3_names Map.new(@types, fn {dtype, _} -> {Atom.to_string(dtype), dtype} end)
  @by_kind_size Map.new(@types, fn {dtype, info} -> {info, dtype} end)

  @v2_kinds %{"b" => :bool, "i" => :int, "u" => :uint, "f" => :float, "c" => :complex}
  @v2_letters Map.new(@v2_kinds, fn {letter, kind} -> {kind, letter} end)

  @type t ::
          :bool
          | :int8
          | :int16
          | :int32
          | :int64
          | :uint8
          | :uint16
          | :uint32
          | :uint64
          | :float16
          | :float32
          | :float64
          | :complex64
          | :complex128

  @typedoc "Byte order of a v2 dtype; `nil` for one-byte types (`|`)."
  @type endian :: :little | :big | nil

  @type kind :: :bool | :int | :uint | :float | :complex

  @type float_value :: float() | :nan | :infinity | :neg_infinity | {:bits, non_neg_integer()}
  @type fill_value ::
          nil | boolean() | integer() | float_value() | {float_value(), float_value()}

  @doc """
  All supported data types.

      iex> :float64 in ExZarr.DType.all()
      true
  """
  @spec all() :: [t()]
  def all, do: @types |> Map.keys() |> Enum.sort_by(&{kind(&1), itemsize(&1)})

  @doc """
  True for a supported data type.

      iex> ExZarr.DType.valid?(:int32)
      true
      iex> ExZarr.DType.valid?(:int3)
      false
  """
  @spec valid?(term()) :: boolean()
  def valid?(dtype), do: is_atom(dtype) and is_map_key(@types, dtype)

  @doc """
  The kind of a type: `:bool`, `:int`, `:uint`, `:float` or `:complex`.

      iex> ExZarr.DType.kind(:uint16)
      :uint
  """
  @spec kind(t()) :: kind()
  def kind(dtype), do: dtype |> info() |> elem(0)

  @doc """
  Size of one element in bytes.

      iex> ExZarr.DType.itemsize(:complex64)
      8
  """
  @spec itemsize(t()) :: pos_integer()
  def itemsize(dtype), do: dtype |> info() |> elem(1)

  @doc """
  Size of the unit whose bytes are swapped for a byte-order change: the item size, except for
  complex types where each of the two parts is swapped on its own.

      iex> ExZarr.DType.component_size(:complex64)
      4
      iex> ExZarr.DType.component_size(:int16)
      2
  """
  @spec component_size(t()) :: pos_integer()
  def component_size(dtype) do
    case info(dtype) do
      {:complex, size} -> div(size, 2)
      {_, size} -> size
    end
  end

  @doc "True for `:float16`, `:float32`, `:float64`."
  @spec float?(t()) :: boolean()
  def float?(dtype), do: kind(dtype) == :float

  @doc "True for `:complex64`, `:complex128`."
  @spec complex?(t()) :: boolean()
  def complex?(dtype), do: kind(dtype) == :complex

  @doc "True for the signed and unsigned integer types."
  @spec integer?(t()) :: boolean()
  def integer?(dtype), do: kind(dtype) in [:int, :uint]

  @doc """
  The smallest and largest value of an integer type.

      iex> ExZarr.DType.int_range(:int8)
      {-128, 127}
      iex> ExZarr.DType.int_range(:uint64)
      {0, 18446744073709551615}
  """
  @spec int_range(t()) :: {integer(), integer()}
  def int_range(dtype) do
    case info(dtype) do
      {:int, size} -> {-Bitwise.bsl(1, size * 8 - 1), Bitwise.bsl(1, size * 8 - 1) - 1}
      {:uint, size} -> {0, Bitwise.bsl(1, size * 8) - 1}
    end
  end

  defp info(dtype) do
    case @types do
      %{^dtype => info} -> info
      _ -> raise ArgumentError, "unsupported data type: #{inspect(dtype)}"
    end
  end

  @doc """
  Parses a Zarr v3 `data_type`.

      iex> ExZarr.DType.from_v3("float64")
      {:ok, :float64}
      iex> ExZarr.DType.from_v3("r16")
      {:error, {:unsupported_dtype, "r16"}}
  """
  @spec from_v3(term()) :: {:ok, t()} | {:error, {:unsupported_dtype, term()}}
  def from_v3(name) when is_binary(name) do
    case @v3_names do
      %{^name => dtype} -> {:ok, dtype}
      _ -> {:error, {:unsupported_dtype, name}}
    end
  end

  def from_v3(other), do: {:error, {:unsupported_dtype, other}}

  @doc """
  The Zarr v3 `data_type` name.

      iex> ExZarr.DType.to_v3(:uint8)
      "uint8"
  """
  @spec to_v3(t()) :: String.t()
  def to_v3(dtype) do
    info(dtype)
    Atom.to_string(dtype)
  end

  @doc """
  Parses a Zarr v2 (numpy) dtype string into the type and its byte order (`nil` for
  one-byte types, whatever order character they carry).

      iex> ExZarr.DType.from_v2("<f8")
      {:ok, :float64, :little}
      iex> ExZarr.DType.from_v2(">i2")
      {:ok, :int16, :big}
      iex> ExZarr.DType.from_v2("|b1")
      {:ok, :bool, nil}
      iex> ExZarr.DType.from_v2("<M8[ns]")
      {:error, {:unsupported_dtype, "<M8[ns]"}}
  """
  @spec from_v2(term()) :: {:ok, t(), endian()} | {:error, {:unsupported_dtype, term()}}
  def from_v2(<<order, letter::binary-size(1), size::binary>> = json) when order in ~c"<>|" do
    with {:ok, kind} <- Map.fetch(@v2_kinds, letter),
         {size, ""} <- Integer.parse(size),
         {:ok, dtype} <- Map.fetch(@by_kind_size, {kind, size}),
         {:ok, endian} <- v2_endian(order, size) do
      {:ok, dtype, endian}
    else
      _ -> {:error, {:unsupported_dtype, json}}
    end
  end

  def from_v2(json), do: {:error, {:unsupported_dtype, json}}

  defp v2_endian(_order, 1), do: {:ok, nil}
  defp v2_endian(?<, _size), do: {:ok, :little}
  defp v2_endian(?>, _size), do: {:ok, :big}
  defp v2_endian(?|, _size), do: :error

  @doc """
  The Zarr v2 (numpy) dtype string for a type in a byte order (ignored for one-byte types).

      iex> ExZarr.DType.to_v2(:float64, :big)
      ">f8"
      iex> ExZarr.DType.to_v2(:uint8, :little)
      "|u1"
  """
  @spec to_v2(t(), endian()) :: String.t()
  def to_v2(dtype, endian) do
    {kind, size} = info(dtype)

    order =
      case {size, endian} do
        {1, _} -> "|"
        {_, :big} -> ">"
        _ -> "<"
      end

    order <> Map.fetch!(@v2_letters, kind) <> Integer.to_string(size)
  end

  @doc """
  The default fill value of a type (zarr-python's): zero, `false` or `{0.0, 0.0}`.

      iex> ExZarr.DType.default_fill(:float32)
      0.0
  """
  @spec default_fill(t()) :: fill_value()
  def default_fill(dtype) do
    case kind(dtype) do
      :bool -> false
      :float -> 0.0
      :complex -> {0.0, 0.0}
      _ -> 0
    end
  end

  @doc """
  Decodes a JSON fill value (as decoded by jiffy: `:null` for null) for a type and a Zarr
  format, into the canonical form described in the module doc.

      iex> ExZarr.DType.decode_fill(:float16, "0x7e01", 3)
      {:ok, {:bits, 0x7E01}}
      iex> ExZarr.DType.decode_fill(:float64, :null, 2)
      {:ok, nil}
      iex> ExZarr.DType.decode_fill(:int8, 128, 3)
      {:error, {:invalid_fill_value, :int8, 128}}
  """
  @spec decode_fill(t(), term(), 2 | 3) ::
          {:ok, fill_value()} | {:error, {:invalid_fill_value, t(), term()}}
  def decode_fill(dtype, json, zarr_format) do
    case do_decode_fill(dtype, kind(dtype), json, zarr_format) do
      {:ok, value} -> {:ok, value}
      :error -> {:error, {:invalid_fill_value, dtype, json}}
    end
  end

  defp do_decode_fill(_dtype, _kind, null, 2) when null in [nil, :null], do: {:ok, nil}
  defp do_decode_fill(_dtype, :bool, value, _format) when is_boolean(value), do: {:ok, value}
  defp do_decode_fill(_dtype, :bool, 0, _format), do: {:ok, false}
  defp do_decode_fill(_dtype, :bool, 1, _format), do: {:ok, true}

  defp do_decode_fill(dtype, kind, value, _format) when kind in [:int, :uint],
    do: cast_int(int_range(dtype), value)

  defp do_decode_fill(dtype, :float, value, format),
    do: decode_float(value, component_size(dtype), format)

  defp do_decode_fill(dtype, :complex, [re, im], format) do
    size = component_size(dtype)

    with {:ok, re} <- decode_float(re, size, format),
         {:ok, im} <- decode_float(im, size, format),
         do: {:ok, {re, im}}
  end

  defp do_decode_fill(_dtype, _kind, _value, _format), do: :error

  defp cast_int({min, max}, value) when is_integer(value) and value >= min and value <= max,
    do: {:ok, value}

  defp cast_int(range, value) when is_float(value) do
    if Float.round(value) == value, do: cast_int(range, trunc(value)), else: :error
  end

  defp cast_int(_range, _value), do: :error

  defp decode_float("NaN", _size, _format), do: {:ok, :nan}
  defp decode_float("Infinity", _size, _format), do: {:ok, :infinity}
  defp decode_float("-Infinity", _size, _format), do: {:ok, :neg_infinity}

  defp decode_float("0x" <> hex, size, 3) when byte_size(hex) == size * 2 do
    if hex_digits?(hex),
      do: {:ok, float_from_bits(String.to_integer(hex, 16), size)},
      else: :error
  end

  defp decode_float(value, size, _format) when is_number(value),
    do: {:ok, round_float(value, size)}

  defp decode_float(_value, _size, _format), do: :error

  defp hex_digits?(hex),
    do: hex |> :binary.bin_to_list() |> Enum.all?(&(&1 in ?0..?9 or &1 in ?a..?f or &1 in ?A..?F))

  @doc """
  Casts a fill value given by a user (an `ExZarr.create/1` option) to the canonical form:
  accepts the canonical forms, integers for float types, integral floats for integer types
  and a real number for a complex type.

      iex> ExZarr.DType.cast_fill(:float32, 1)
      {:ok, 1.0}
      iex> ExZarr.DType.cast_fill(:complex64, 2.5)
      {:ok, {2.5, 0.0}}
      iex> ExZarr.DType.cast_fill(:uint8, -1)
      {:error, {:invalid_fill_value, :uint8, -1}}
  """
  @spec cast_fill(t(), term()) ::
          {:ok, fill_value()} | {:error, {:invalid_fill_value, t(), term()}}
  def cast_fill(dtype, value) do
    size = component_size(dtype)

    result =
      case {kind(dtype), value} do
        {_, nil} -> {:ok, nil}
        {:bool, v} when is_boolean(v) -> {:ok, v}
        {:float, v} -> cast_float(v, size)
        {:complex, {re, im}} -> cast_complex(re, im, size)
        {:complex, re} -> cast_complex(re, 0.0, size)
        {kind, v} when kind in [:int, :uint] -> cast_int(int_range(dtype), v)
        _ -> :error
      end

    case result do
      {:ok, fill} -> {:ok, fill}
      :error -> {:error, {:invalid_fill_value, dtype, value}}
    end
  end

  defp cast_complex(re, im, size) do
    with {:ok, re} <- cast_float(re, size), {:ok, im} <- cast_float(im, size), do: {:ok, {re, im}}
  end

  defp cast_float(special, _size) when special in [:nan, :infinity, :neg_infinity],
    do: {:ok, special}

  defp cast_float({:bits, bits}, size) when is_integer(bits) and bits >= 0 do
    if bits < Bitwise.bsl(1, size * 8), do: {:ok, float_from_bits(bits, size)}, else: :error
  end

  defp cast_float(value, size) when is_number(value), do: {:ok, round_float(value, size)}
  defp cast_float(_value, _size), do: :error

  # A number rounded to the nearest value of a float type of `size` bytes (IEEE rounding,
  # overflowing to an infinity).
  defp round_float(value, size) when is_integer(value) do
    if abs(value) >= Bitwise.bsl(1, 1024),
      do: if(value > 0, do: :infinity, else: :neg_infinity),
      else: round_float(value * 1.0, size)
  end

  defp round_float(value, 8), do: value
  defp round_float(value, size), do: float_from_bits(float_bits(value, size), size)

  defp float_from_bits(bits, size) do
    exp_bits = %{2 => 5, 4 => 8, 8 => 11}[size]
    mant_bits = size * 8 - 1 - exp_bits
    <<sign::1, exp::size(exp_bits), mant::size(mant_bits)>> = <<bits::size(size * 8)>>
    all_ones = Bitwise.bsl(1, exp_bits) - 1

    cond do
      exp != all_ones ->
        <<value::float-size(size * 8)>> = <<bits::size(size * 8)>>
        value

      mant == 0 ->
        if sign == 0, do: :infinity, else: :neg_infinity

      bits == canonical_nan(size) ->
        :nan

      true ->
        {:bits, bits}
    end
  end

  defp canonical_nan(2), do: 0x7E00
  defp canonical_nan(4), do: 0x7FC00000
  defp canonical_nan(8), do: 0x7FF8000000000000

  defp float_bits(:nan, size), do: canonical_nan(size)
  defp float_bits(:infinity, 2), do: 0x7C00
  defp float_bits(:infinity, 4), do: 0x7F800000
  defp float_bits(:infinity, 8), do: 0x7FF0000000000000

  defp float_bits(:neg_infinity, size),
    do: Bitwise.bor(float_bits(:infinity, size), sign_bit(size))

  defp float_bits({:bits, bits}, _size), do: bits

  defp float_bits(value, size) when is_float(value) do
    <<bits::size(size * 8)>> = <<value::float-size(size * 8)>>
    bits
  end

  defp sign_bit(size), do: Bitwise.bsl(1, size * 8 - 1)

  @doc """
  Encodes a canonical fill value as the JSON term zarr-python writes (for `:jiffy.encode/1` or
  `ExZarr.Metadata.encode_json/1`): `"NaN"`, `"Infinity"`, `"-Infinity"`, `[re, im]` for
  complex, `:null` for a v2 `nil`. A NaN with a non-canonical payload is a hex bit pattern in
  v3 and `"NaN"` in v2 (which cannot express it). In v3 a `nil` fill is written as the
  type's default.

      iex> ExZarr.DType.encode_fill(:float64, :nan, 2)
      "NaN"
      iex> ExZarr.DType.encode_fill(:float32, {:bits, 0x7FC00001}, 3)
      "0x7fc00001"
      iex> ExZarr.DType.encode_fill(:int32, nil, 2)
      :null
  """
  @spec encode_fill(t(), fill_value(), 2 | 3) :: term()
  def encode_fill(_dtype, nil, 2), do: :null
  def encode_fill(dtype, nil, 3), do: encode_fill(dtype, default_fill(dtype), 3)

  def encode_fill(dtype, value, format) do
    size = component_size(dtype)

    case {kind(dtype), value} do
      {:float, v} -> encode_float(v, size, format)
      {:complex, {re, im}} -> [encode_float(re, size, format), encode_float(im, size, format)]
      {_, v} -> v
    end
  end

  defp encode_float(:nan, _size, _format), do: "NaN"
  defp encode_float(:infinity, _size, _format), do: "Infinity"
  defp encode_float(:neg_infinity, _size, _format), do: "-Infinity"
  defp encode_float({:bits, _}, _size, 2), do: "NaN"

  defp encode_float({:bits, bits}, size, 3) do
    hex = bits |> Integer.to_string(16) |> String.downcase()
    "0x" <> String.pad_leading(hex, size * 2, "0")
  end

  defp encode_float(value, _size, _format), do: value

  @doc """
  The bytes of one element holding a fill value, little-endian (`nil` gives the default).
  NaN is the canonical quiet NaN; complex is the real part then the imaginary part.

      iex> ExZarr.DType.fill_element(:float32, :nan)
      <<0, 0, 192, 127>>
      iex> ExZarr.DType.fill_element(:bool, true)
      <<1>>
  """
  @spec fill_element(t(), fill_value()) :: binary()
  def fill_element(dtype, nil), do: fill_element(dtype, default_fill(dtype))

  def fill_element(dtype, value) do
    size = component_size(dtype)
    bits = size * 8

    case {kind(dtype), value} do
      {:bool, v} ->
        if v, do: <<1>>, else: <<0>>

      {:int, v} ->
        <<v::little-signed-size(bits)>>

      {:uint, v} ->
        <<v::little-size(bits)>>

      {:float, v} ->
        <<float_bits(v, size)::little-size(bits)>>

      {:complex, {re, im}} ->
        <<float_bits(re, size)::little-size(bits), float_bits(im, size)::little-size(bits)>>
    end
  end
end
