defmodule ExZarr.DType do
  @moduledoc """
  Zarr data types: names in v2 and v3 metadata, item sizes, and fill-value encodings.

  A data type is an atom or a tuple (below: ExZarr type: Zarr v3 `data_type`; Zarr v2 `dtype`):

    * `:bool`, `:int8`..`:uint64`, `:float16`..`:complex128`: `"bool"`, `"int8"`, ...;
      `"|b1"`, `"<i4"`, ...
    * `{:fixed_utf32, n}`: `fixed_length_utf32` (`length_bytes` 4n); `"<Un"` / `">Un"`
    * `{:fixed_bytes, n}`: `null_terminated_bytes` (`length_bytes` n); `"|Sn"`
    * `{:raw_bytes, n}`: `raw_bytes` (`length_bytes` n); `"|Vn"`
    * `{:datetime64, unit, scale}`: `numpy.datetime64` (`unit`, `scale_factor`);
      `"<M8[unit]"` (`"<M8[10ms]"` for scale 10; `"<M8"` for the unit `"generic"`)
    * `{:timedelta64, unit, scale}`: `numpy.timedelta64`; `"<m8[unit]"`
    * `{:structured, fields}`: `structured` (`fields`); `[[name, dtype], ...]`
    * `:string`: `string` with the `vlen-utf8` codec; `"|O"` with the `vlen-utf8` filter
    * `:bytes`: `variable_length_bytes` with the `vlen-bytes` codec; `"|O"` with `vlen-bytes`
    * `:bfloat16`, `:float8_e4m3fn`, ..., `:int4`, `:uint2`: the low-precision types of
      `ExZarr.DType.LowPrecision` (its name in both; v2 as tensorstore writes it)

  Data of every fixed-size type goes in and out of `ExZarr.Array` as one binary of packed
  elements:

    * `{:fixed_utf32, n}`: `n` UCS4 code points per element, little-endian, padded with zero
      code points (numpy `<U n`); `ExZarr.DType.Strings` converts lists of strings.
    * `{:fixed_bytes, n}`: `n` bytes per element padded with zero bytes (numpy `S n`);
      `{:raw_bytes, n}`: `n` raw bytes (numpy `V n`).
    * datetime / timedelta: signed int64 counts of `scale` x `unit` (`unit` is numpy's code:
      `"Y" "M" "W" "D" "h" "m" "s" "ms" "us" "ns" "ps" "fs" "as"`, `"μs"` read as `"us"`, and
      `"generic"`, numpy's datetime64 without a unit, zarr-python's default); NaT is
      `-9223372036854775808` (`nat/0`). `ExZarr.DType.Datetime` converts to and from
      `DateTime` / `NaiveDateTime`.
    * `{:structured, fields}`: whole records as stored, each field in its own byte order;
      `fields` is a list of `{name, dtype, endian, shape}` (`shape` is `{}` for a scalar field,
      `endian` `nil` for one-byte components). `ExZarr.DType.Structured` extracts a field of
      all records in one native pass.

  The variable-length types `:string` (UTF-8) and `:bytes` go in and out as lists of binaries
  in C order instead (see `ExZarr.Array`).

  ## Fill values

  The canonical Elixir form of a fill value (what `ExZarr.Metadata` holds):

    * `:bool`: `true` / `false`
    * integers: an integer within the type's range
    * floats: an Elixir float, `:nan` (the canonical quiet NaN), `:infinity`, `:neg_infinity`,
      or `{:bits, n}` for a NaN whose bit pattern is not the canonical one. A float16/float32
      value is always exactly representable in its type (it is rounded when decoded).
    * complex: `{re, im}`, each part a float value as above
    * strings (`:string`, `{:fixed_utf32, n}`): a UTF-8 string (JSON: the string; for
      `:string` an integer, as zarr-python 2 wrote, is read as its decimal string)
    * byte strings: a binary of at most the item size, padded with zero bytes in
      `fill_element/2`; raw bytes and structured records: a binary of the item size (a
      shorter one given is padded with zero bytes). JSON: base64; in v3 an array of byte
      values, as zarrs writes them, is read too
    * datetime / timedelta: an int64, NaT as `nat/0` (JSON: the integer; `"NaT"` is read too)
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

  alias ExZarr.DType.LowPrecision
  require LowPrecision

  @v3_names @types
            |> Map.new(fn {dtype, _} -> {Atom.to_string(dtype), dtype} end)
            |> Map.merge(%{
              "string" => :string,
              "variable_length_bytes" => :bytes,
              "bytes" => :bytes
            })
            |> Map.merge(Map.new(LowPrecision.all(), &{Atom.to_string(&1), &1}))
  @by_kind_size Map.new(@types, fn {dtype, info} -> {info, dtype} end)

  @v2_kinds %{"b" => :bool, "i" => :int, "u" => :uint, "f" => :float, "c" => :complex}
  @v2_letters Map.new(@v2_kinds, fn {letter, kind} -> {kind, letter} end)

  @typedoc "The real (non-complex) numeric types: what the native element kernels work on."
  @type real ::
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

  @type t ::
          real()
          | :complex64
          | :complex128
          | :string
          | :bytes
          | {:fixed_utf32, pos_integer()}
          | {:fixed_bytes, pos_integer()}
          | {:raw_bytes, pos_integer()}
          | {:datetime64, time_unit(), pos_integer()}
          | {:timedelta64, time_unit(), pos_integer()}
          | {:structured, [field()]}
          | LowPrecision.t()

  @typedoc "Byte order of a v2 dtype; `nil` for one-byte types (`|`)."
  @type endian :: :little | :big | nil

  @typedoc "A numpy datetime unit code: `\"Y\"`, `\"M\"`, ..., `\"s\"`, `\"ms\"`, `\"us\"`, `\"ns\"`, ..."
  @type time_unit :: String.t()

  @typedoc "A field of a structured type: name, type, byte order and subarray shape (`{}`)."
  @type field :: {String.t(), t(), endian(), tuple()}

  @type kind ::
          :bool
          | :int
          | :uint
          | :float
          | :complex
          | :ml_float
          | :string
          | :bytes
          | :fixed_utf32
          | :fixed_bytes
          | :raw_bytes
          | :datetime64
          | :timedelta64
          | :structured

  @type float_value :: float() | :nan | :infinity | :neg_infinity | {:bits, non_neg_integer()}

  @typedoc """
  A canonical fill value; besides the numeric forms: a UTF-8 string for `:string` and
  `{:fixed_utf32, n}`, a binary for `:bytes`, `{:fixed_bytes, n}`, `{:raw_bytes, n}` and
  structured types (the record's bytes), an int64 for datetimes (`nat/0` for NaT).
  """
  @type fill_value ::
          nil
          | boolean()
          | integer()
          | float_value()
          | {float_value(), float_value()}
          | binary()

  @time_units ~w(Y M W D h m s ms us ns ps fs as generic)
  @nat -0x8000000000000000

  @doc """
  The int64 value numpy uses for NaT ("not a time") in datetime and timedelta data.

      iex> ExZarr.DType.nat()
      -9223372036854775808
  """
  @spec nat() :: integer()
  def nat, do: @nat

  @doc """
  The numpy datetime unit codes ExZarr supports.

      iex> "ns" in ExZarr.DType.time_units()
      true
  """
  @spec time_units() :: [time_unit()]
  def time_units, do: @time_units

  @doc """
  Guard: true for the variable-length types `:string` and `:bytes`, whose data is a list of
  binaries rather than one packed binary.
  """
  defguard is_var_len(dtype) when dtype in [:string, :bytes]

  @doc """
  Guard: true for the integer types `:int8` to `:uint64` and the IEEE float types `:float16`,
  `:float32`, `:float64` (not `:bool`, complex or the low-precision types): the types the
  native arithmetic kernels compute in.
  """
  defguard is_standard_numeric(dtype)
           when dtype in ~w(int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64)a

  @doc """
  All numeric data types (the atoms; `:string`, `:bytes` and the parameterised types are
  described in the module doc).

      iex> :float64 in ExZarr.DType.all()
      true
  """
  @spec all() :: [t()]
  def all, do: @types |> Map.keys() |> Enum.sort_by(&{kind(&1), itemsize(&1)})

  @doc """
  True for a supported data type whose elements fit `ExZarr.Limits.max_itemsize/0` (what
  `check/1` accepts: every other function of this module may be called on it).

      iex> ExZarr.DType.valid?(:int32)
      true
      iex> ExZarr.DType.valid?(:int3)
      false
      iex> ExZarr.DType.valid?({:raw_bytes, 2 ** 40})
      false
  """
  @spec valid?(term()) :: boolean()
  def valid?(dtype), do: check(dtype) == :ok

  @doc """
  A data type's name for people: its atom as a string, else the term inspected.

      iex> ExZarr.DType.name(:float32)
      "float32"
      iex> ExZarr.DType.name({:fixed_utf32, 8})
      "{:fixed_utf32, 8}"
  """
  @spec name(t()) :: String.t()
  def name(dtype) when is_atom(dtype), do: Atom.to_string(dtype)
  def name(dtype), do: inspect(dtype, charlists: :as_lists)

  @doc """
  `:ok` for a supported data type; `{:error, {:too_large, :itemsize, size, max}}` for one
  whose elements would be larger than `ExZarr.Limits.max_itemsize/0` (2^31 - 1 bytes, as
  numpy), `{:error, {:unsupported_dtype, dtype}}` for anything else.

      iex> ExZarr.DType.check({:raw_bytes, 2 ** 40})
      {:error, {:too_large, :itemsize, 1099511627776, 2147483647}}
  """
  @spec check(term()) :: :ok | {:error, term()}
  def check(dtype) do
    case info_or_error(dtype) do
      {:too_large, size} -> {:error, {:too_large, :itemsize, size, ExZarr.Limits.max_itemsize()}}
      {_kind, _size} -> :ok
      :error -> {:error, {:unsupported_dtype, dtype}}
    end
  end

  @doc """
  The size of one element of a supported type, `{:ok, size}`, even beyond
  `ExZarr.Limits.max_itemsize/0`; `:error` for anything else. For types made of others (the
  fields of a structured type), whose total size is then checked.

      iex> ExZarr.DType.unbounded_itemsize({:raw_bytes, 2 ** 40})
      {:ok, 1099511627776}
      iex> ExZarr.DType.unbounded_itemsize(:int3)
      :error
  """
  @spec unbounded_itemsize(term()) :: {:ok, non_neg_integer()} | :error
  def unbounded_itemsize(dtype) do
    case info_or_error(dtype) do
      {_kind, size} -> {:ok, size}
      :error -> :error
    end
  end

  @doc """
  The kind of a type: `:bool`, `:int`, `:uint`, `:float` or `:complex` for the numeric types,
  the tag of the others (`:string`, `:fixed_utf32`, `:datetime64`, `:structured`, ...).

      iex> ExZarr.DType.kind(:uint16)
      :uint
  """
  @spec kind(t()) :: kind()
  def kind(dtype), do: dtype |> info() |> elem(0)

  @doc """
  Size of one element in bytes; 0 for the variable-length types, which have no fixed size.

      iex> ExZarr.DType.itemsize(:complex64)
      8
      iex> ExZarr.DType.itemsize({:fixed_utf32, 3})
      12
  """
  @spec itemsize(t()) :: non_neg_integer()
  def itemsize(dtype), do: dtype |> info() |> elem(1)

  @doc """
  Size of the unit whose bytes are swapped for a byte-order change: the item size, except for
  complex types where each of the two parts is swapped on its own, UCS4 strings (4) and the
  byte-string, structured and variable-length types (1: never swapped as a whole; a
  structured type's fields keep their own byte order).

      iex> ExZarr.DType.component_size(:complex64)
      4
      iex> ExZarr.DType.component_size(:int16)
      2
      iex> ExZarr.DType.component_size({:fixed_utf32, 5})
      4
  """
  @spec component_size(t()) :: pos_integer()
  def component_size(dtype) do
    case info(dtype) do
      {:complex, size} -> div(size, 2)
      {:fixed_utf32, _} -> 4
      {kind, _} when kind in [:fixed_bytes, :raw_bytes, :structured, :string, :bytes] -> 1
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
  def int_range(dtype) when LowPrecision.is_low_precision(dtype),
    do: LowPrecision.int_range(dtype)

  def int_range(dtype) do
    case info(dtype) do
      {:int, size} -> {-Bitwise.bsl(1, size * 8 - 1), Bitwise.bsl(1, size * 8 - 1) - 1}
      {:uint, size} -> {0, Bitwise.bsl(1, size * 8) - 1}
    end
  end

  defp info(dtype) do
    case info_or_error(dtype) do
      {kind, size} when kind != :too_large -> {kind, size}
      _ -> raise ArgumentError, "unsupported data type: #{inspect(dtype)}"
    end
  end

  # {kind, itemsize}, {:too_large, itemsize} beyond the item size limit, or :error.
  defp info_or_error(dtype) when is_map_key(@types, dtype), do: Map.fetch!(@types, dtype)
  defp info_or_error(:string), do: {:string, 0}
  defp info_or_error(:bytes), do: {:bytes, 0}

  defp info_or_error({:fixed_utf32, n}) when is_integer(n) and n > 0,
    do: bounded(:fixed_utf32, 4 * n)

  defp info_or_error({:fixed_bytes, n}) when is_integer(n) and n > 0, do: bounded(:fixed_bytes, n)
  defp info_or_error({:raw_bytes, n}) when is_integer(n) and n > 0, do: bounded(:raw_bytes, n)

  defp info_or_error({kind, unit, scale})
       when kind in [:datetime64, :timedelta64] and unit in @time_units and is_integer(scale) and
              scale > 0 and scale < 0x80000000,
       do: {kind, 8}

  defp info_or_error({:structured, fields}) do
    case ExZarr.DType.Structured.record_size(fields) do
      {:ok, size} -> bounded(:structured, size)
      :error -> :error
    end
  end

  defp info_or_error(other), do: LowPrecision.info(other)

  defp bounded(kind, size) do
    if size <= ExZarr.Limits.max_itemsize(), do: {kind, size}, else: {:too_large, size}
  end

  @doc """
  Parses a Zarr v3 `data_type`: a name, or an object with a `configuration` for the
  parameterised types. A type whose elements would exceed `ExZarr.Limits.max_itemsize/0`
  gives `{:error, {:too_large, :itemsize, size, max}}`.

      iex> ExZarr.DType.from_v3("float64")
      {:ok, :float64}
      iex> ExZarr.DType.from_v3(%{"name" => "fixed_length_utf32",
      ...>   "configuration" => %{"length_bytes" => 12}})
      {:ok, {:fixed_utf32, 3}}
      iex> ExZarr.DType.from_v3(%{"name" => "numpy.datetime64",
      ...>   "configuration" => %{"unit" => "ns", "scale_factor" => 1}})
      {:ok, {:datetime64, "ns", 1}}
      iex> ExZarr.DType.from_v3("r16")
      {:error, {:unsupported_dtype, "r16"}}
  """
  @spec from_v3(term()) ::
          {:ok, t()}
          | {:error,
             {:unsupported_dtype, term()} | {:too_large, :itemsize, pos_integer(), pos_integer()}}
  def from_v3(name) when is_binary(name) do
    case @v3_names do
      %{^name => dtype} -> {:ok, dtype}
      _ -> {:error, {:unsupported_dtype, name}}
    end
  end

  def from_v3(%{"name" => name} = json) when is_binary(name) do
    config = Map.get(json, "configuration", %{})

    if Map.keys(json) -- ["name", "configuration"] == [] and is_map(config) and
         Map.keys(config) -- v3_config_keys(name) == [],
       do: from_v3_object(name, config, json),
       else: {:error, {:unsupported_dtype, name}}
  end

  def from_v3(other), do: {:error, {:unsupported_dtype, other}}

  defp v3_config_keys(name) when name in ~w(fixed_length_utf32 null_terminated_bytes raw_bytes),
    do: ["length_bytes"]

  defp v3_config_keys("numpy." <> _), do: ["unit", "scale_factor"]
  defp v3_config_keys("structured"), do: ["fields"]
  defp v3_config_keys(_name), do: []

  defp from_v3_object(name, config, json) do
    case {name, config} do
      {_, empty} when empty == %{} and is_map_key(@v3_names, name) ->
        from_v3(name)

      {"fixed_length_utf32", %{"length_bytes" => n}} when is_integer(n) and rem(n, 4) == 0 ->
        checked({:fixed_utf32, div(n, 4)}, json)

      {"null_terminated_bytes", %{"length_bytes" => n}} ->
        checked({:fixed_bytes, n}, json)

      {"raw_bytes", %{"length_bytes" => n}} ->
        checked({:raw_bytes, n}, json)

      {"numpy." <> time, %{"unit" => unit, "scale_factor" => scale}}
      when time in ["datetime64", "timedelta64"] ->
        checked({String.to_atom(time), time_unit(unit), scale}, json)

      {"structured", %{"fields" => fields}} ->
        case ExZarr.DType.Structured.from_v3(fields) do
          {:ok, dtype} -> checked(dtype, json)
          :error -> {:error, {:unsupported_dtype, name}}
        end

      _ ->
        {:error, {:unsupported_dtype, name}}
    end
  end

  defp checked(dtype, %{"name" => name}) do
    case check(dtype) do
      :ok -> {:ok, dtype}
      {:error, {:too_large, _, _, _}} = error -> error
      {:error, _} -> {:error, {:unsupported_dtype, name}}
    end
  end

  @doc """
  The Zarr v3 `data_type`: a name, or an object (string keys) for the parameterised types,
  as zarr-python writes them.

      iex> ExZarr.DType.to_v3(:uint8)
      "uint8"
      iex> ExZarr.DType.to_v3({:raw_bytes, 4})
      %{"name" => "raw_bytes", "configuration" => %{"length_bytes" => 4}}
  """
  @spec to_v3(t()) :: String.t() | map()
  def to_v3(dtype) do
    case {dtype, info(dtype)} do
      {:bytes, _} ->
        "variable_length_bytes"

      {{:fixed_utf32, _}, {_, size}} ->
        v3_object("fixed_length_utf32", %{"length_bytes" => size})

      {{:fixed_bytes, n}, _} ->
        v3_object("null_terminated_bytes", %{"length_bytes" => n})

      {{:raw_bytes, n}, _} ->
        v3_object("raw_bytes", %{"length_bytes" => n})

      {{time, unit, scale}, _} ->
        v3_object("numpy.#{time}", %{"unit" => unit, "scale_factor" => scale})

      {{:structured, fields}, _} ->
        v3_object("structured", ExZarr.DType.Structured.to_v3(fields))

      {atom, _} ->
        Atom.to_string(atom)
    end
  end

  defp v3_object(name, config), do: %{"name" => name, "configuration" => config}

  @doc """
  Parses a Zarr v2 (numpy) dtype into the type and its byte order (`nil` for types without
  one: one-byte types, `S`, `V` and structured types, whatever order character they carry).
  `"|O"` (object) is not a type by itself: `ExZarr.Metadata.V2` resolves it from the
  array's object codec. Too large types give `{:error, {:too_large, :itemsize, size, max}}`
  (see `from_v3/1`).

      iex> ExZarr.DType.from_v2("<f8")
      {:ok, :float64, :little}
      iex> ExZarr.DType.from_v2(">i2")
      {:ok, :int16, :big}
      iex> ExZarr.DType.from_v2("|b1")
      {:ok, :bool, nil}
      iex> ExZarr.DType.from_v2("<M8[10ms]")
      {:ok, {:datetime64, "ms", 10}, :little}
      iex> ExZarr.DType.from_v2(">U3")
      {:ok, {:fixed_utf32, 3}, :big}
      iex> ExZarr.DType.from_v2([["a", "<i4"], ["b", "|S2", [2]]])
      {:ok, {:structured, [{"a", :int32, :little, {}}, {"b", {:fixed_bytes, 2}, nil, {2}}]}, nil}
  """
  @spec from_v2(term()) ::
          {:ok, t(), endian()}
          | {:error,
             {:unsupported_dtype, term()} | {:too_large, :itemsize, pos_integer(), pos_integer()}}
  def from_v2(<<order, letter::binary-size(1), rest::binary>> = json) when order in ~c"<>|" do
    with {:ok, dtype} <- v2_type(letter, rest),
         :ok <- check_v2(dtype, json),
         {:ok, endian} <- v2_endian(order, component_size(dtype)) do
      {:ok, dtype, endian}
    else
      {:error, {:too_large, _, _, _}} = error -> error
      _ -> {:error, {:unsupported_dtype, json}}
    end
  end

  def from_v2([_ | _] = fields) do
    with {:ok, dtype} <- ExZarr.DType.Structured.from_v2(fields),
         :ok <- check_v2(dtype, fields) do
      {:ok, dtype, nil}
    else
      {:error, {:too_large, _, _, _}} = error -> error
      _ -> {:error, {:unsupported_dtype, fields}}
    end
  end

  def from_v2(json) do
    case LowPrecision.from_name(json) do
      {:ok, dtype} -> {:ok, dtype, if(component_size(dtype) > 1, do: :little)}
      :error -> {:error, {:unsupported_dtype, json}}
    end
  end

  defp check_v2(dtype, json) do
    case check(dtype) do
      {:error, {:unsupported_dtype, _}} -> {:error, {:unsupported_dtype, json}}
      other -> other
    end
  end

  defp v2_type(letter, size) when is_map_key(@v2_kinds, letter) do
    with {size, ""} <- Integer.parse(size),
         {:ok, dtype} <- Map.fetch(@by_kind_size, {Map.fetch!(@v2_kinds, letter), size}),
         do: {:ok, dtype},
         else: (_ -> :error)
  end

  # numpy's datetime64 without a unit (`"<M8"`) has the unit "generic".
  defp v2_type(letter, "8") when letter in ["M", "m"], do: v2_type(letter, "8[generic]")

  defp v2_type(letter, "8[" <> unit) when letter in ["M", "m"] do
    kind = if letter == "M", do: :datetime64, else: :timedelta64

    with {scale, unit} <- scale_prefix(unit),
         [unit, ""] <- String.split(unit, "]"),
         dtype = {kind, time_unit(unit), scale},
         true <- valid?(dtype),
         do: {:ok, dtype},
         else: (_ -> :error)
  end

  defp v2_type(letter, count) when letter in ["U", "S", "V"] do
    tag = %{"U" => :fixed_utf32, "S" => :fixed_bytes, "V" => :raw_bytes}[letter]

    case Integer.parse(count) do
      {n, ""} when n > 0 -> {:ok, {tag, n}}
      _ -> :error
    end
  end

  defp v2_type(_letter, _rest), do: :error

  # numpy and the numpy.datetime64 spec take "μs" for "us".
  defp time_unit("μs"), do: "us"
  defp time_unit(unit), do: unit

  defp scale_prefix(<<digit, _::binary>> = unit) when digit in ?0..?9, do: Integer.parse(unit)
  defp scale_prefix(unit), do: {1, unit}

  defp v2_endian(_order, 1), do: {:ok, nil}
  defp v2_endian(?<, _size), do: {:ok, :little}
  defp v2_endian(?>, _size), do: {:ok, :big}
  defp v2_endian(?|, _size), do: :error

  @doc """
  The Zarr v2 (numpy) dtype for a type in a byte order (ignored for types without one): a
  string, or a list of fields for a structured type.

      iex> ExZarr.DType.to_v2(:float64, :big)
      ">f8"
      iex> ExZarr.DType.to_v2(:uint8, :little)
      "|u1"
      iex> ExZarr.DType.to_v2({:timedelta64, "ms", 10}, :little)
      "<m8[10ms]"
      iex> ExZarr.DType.to_v2(:string, nil)
      "|O"
  """
  @spec to_v2(t(), endian()) :: String.t() | list()
  def to_v2(dtype, endian) do
    {kind, size} = info(dtype)

    order =
      case {component_size(dtype), endian} do
        {1, _} -> "|"
        {_, :big} -> ">"
        _ -> "<"
      end

    case {kind, dtype} do
      {_, low} when LowPrecision.is_low_precision(low) ->
        Atom.to_string(low)

      {vlen, _} when vlen in [:string, :bytes] ->
        "|O"

      {:fixed_utf32, {_, n}} ->
        order <> "U" <> Integer.to_string(n)

      {:fixed_bytes, _} ->
        "|S" <> Integer.to_string(size)

      {:raw_bytes, _} ->
        "|V" <> Integer.to_string(size)

      {:structured, {_, fields}} ->
        ExZarr.DType.Structured.to_v2(fields)

      {time, {_, "generic", 1}} ->
        order <> time_letter(time) <> "8"

      {time, {_, unit, scale}} ->
        order <> time_letter(time) <> "8[" <> scale_text(scale) <> unit <> "]"

      _ ->
        order <> Map.fetch!(@v2_letters, kind) <> Integer.to_string(size)
    end
  end

  defp time_letter(:datetime64), do: "M"
  defp time_letter(:timedelta64), do: "m"

  defp scale_text(1), do: ""
  defp scale_text(scale), do: Integer.to_string(scale)

  @doc """
  The default fill value of a type (zarr-python's): zero, `false` or `{0.0, 0.0}`; `""` for
  strings and byte strings, zero bytes for raw and structured types, NaT for datetimes.

      iex> ExZarr.DType.default_fill(:float32)
      0.0
      iex> ExZarr.DType.default_fill({:raw_bytes, 2})
      <<0, 0>>
  """
  @spec default_fill(t()) :: fill_value()
  def default_fill(dtype) do
    case info(dtype) do
      {:bool, _} -> false
      {:float, _} -> 0.0
      {:complex, _} -> {0.0, 0.0}
      {:ml_float, _} -> LowPrecision.default_fill(dtype)
      {kind, _} when kind in [:string, :bytes, :fixed_utf32, :fixed_bytes] -> ""
      {kind, size} when kind in [:raw_bytes, :structured] -> <<0::size(size * 8)>>
      {kind, _} when kind in [:datetime64, :timedelta64] -> @nat
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
      iex> ExZarr.DType.decode_fill({:fixed_bytes, 3}, "cQA=", 3)
      {:ok, "q\0"}
      iex> ExZarr.DType.decode_fill({:datetime64, "s", 1}, "NaT", 2)
      {:ok, -9223372036854775808}
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

  defp do_decode_fill(dtype, :ml_float, value, format),
    do: LowPrecision.decode_fill(dtype, value, format)

  defp do_decode_fill(dtype, :complex, [re, im], format) do
    size = component_size(dtype)

    with {:ok, re} <- decode_float(re, size, format),
         {:ok, im} <- decode_float(im, size, format),
         do: {:ok, {re, im}}
  end

  defp do_decode_fill(dtype, kind, value, _format)
       when kind in [:string, :fixed_utf32] and is_binary(value),
       do: cast_text(dtype, value)

  # zarr-python 2 wrote integers as the fill value of vlen-utf8 arrays (0 unless told
  # otherwise); zarr-python 3 reads them as their decimal strings
  defp do_decode_fill(:string, :string, value, _format) when is_integer(value),
    do: {:ok, Integer.to_string(value)}

  defp do_decode_fill(dtype, kind, value, _format)
       when kind in [:bytes, :fixed_bytes, :raw_bytes, :structured] and is_binary(value) do
    case Base.decode64(value) do
      {:ok, bin} -> cast_binary(dtype, bin)
      :error -> :error
    end
  end

  # zarrs writes byte fill values as arrays of byte values (the form of the v3 `r*` types)
  defp do_decode_fill(dtype, kind, value, 3)
       when kind in [:bytes, :fixed_bytes, :raw_bytes, :structured] and is_list(value) do
    if Enum.all?(value, &(is_integer(&1) and &1 in 0..255)),
      do: cast_binary(dtype, :erlang.list_to_binary(value)),
      else: :error
  end

  defp do_decode_fill(_dtype, kind, value, _format) when kind in [:datetime64, :timedelta64],
    do: cast_time(value)

  defp do_decode_fill(_dtype, _kind, _value, _format), do: :error

  defp cast_text(dtype, value) do
    cond do
      not String.valid?(value) -> :error
      dtype == :string -> {:ok, value}
      byte_size(utf32(value)) <= itemsize(dtype) -> {:ok, value}
      true -> :error
    end
  end

  defp cast_binary(:bytes, value), do: {:ok, value}

  # A raw value or a record is the whole element (zarr-python and tensorstore read no shorter
  # one); a null-terminated byte string keeps its length, as zarr-python writes it.
  defp cast_binary(dtype, value) do
    cond do
      byte_size(value) > itemsize(dtype) -> :error
      kind(dtype) == :fixed_bytes -> {:ok, value}
      true -> {:ok, pad(value, itemsize(dtype))}
    end
  end

  defp cast_time(nat) when nat in ["NaT", :nat], do: {:ok, @nat}
  defp cast_time(value), do: cast_int(int_range(:int64), value)

  defp utf32(value), do: :unicode.characters_to_binary(value, :utf8, {:utf32, :little})

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
  and a real number for a complex type; for datetime types also `:nat` and a `DateTime` /
  `NaiveDateTime` (converted to the type's unit, see `ExZarr.DType.Datetime`).

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
        {_, nil} ->
          {:ok, nil}

        {:bool, v} when is_boolean(v) ->
          {:ok, v}

        {:float, v} ->
          cast_float(v, size)

        {:ml_float, v} ->
          LowPrecision.cast_fill(dtype, v)

        {:complex, {re, im}} ->
          cast_complex(re, im, size)

        {:complex, re} ->
          cast_complex(re, 0.0, size)

        {kind, v} when kind in [:int, :uint] ->
          cast_int(int_range(dtype), v)

        {kind, v} when kind in [:string, :fixed_utf32] and is_binary(v) ->
          cast_text(dtype, v)

        {kind, v} when kind in [:datetime64, :timedelta64] ->
          cast_time_value(dtype, v)

        {k, v} when is_binary(v) and k in [:bytes, :fixed_bytes, :raw_bytes, :structured] ->
          cast_binary(dtype, v)

        _ ->
          :error
      end

    case result do
      {:ok, fill} -> {:ok, fill}
      :error -> {:error, {:invalid_fill_value, dtype, value}}
    end
  end

  defp cast_time_value({:datetime64, _, _} = dtype, %struct{} = value)
       when struct in [DateTime, NaiveDateTime] do
    case ExZarr.DType.Datetime.from_datetime(value, dtype) do
      {:ok, int} -> {:ok, int}
      {:error, _} -> :error
    end
  end

  defp cast_time_value(_dtype, value), do: cast_time(value)

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
  `ExZarr.JSON.encode/1`): `"NaN"`, `"Infinity"`, `"-Infinity"`, `[re, im]` for
  complex, `:null` for a v2 `nil`, base64 for byte strings, raw bytes and structured records,
  the string itself for strings, an integer for datetimes. A NaN with a non-canonical payload
  is a hex bit pattern in v3 and `"NaN"` in v2 (which cannot express it). In v3 a `nil` fill
  is written as the type's default.

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
      {:ml_float, v} -> LowPrecision.encode_fill(dtype, v, format)
      {:complex, {re, im}} -> [encode_float(re, size, format), encode_float(im, size, format)]
      {kind, v} when kind in [:bytes, :fixed_bytes, :raw_bytes, :structured] -> Base.encode64(v)
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
  NaN is the canonical quiet NaN; complex is the real part then the imaginary part; strings
  and byte strings are padded with zeros to the item size. For the variable-length types it
  is the fill value itself.

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

      {:ml_float, v} ->
        LowPrecision.fill_element(dtype, v)

      {:complex, {re, im}} ->
        <<float_bits(re, size)::little-size(bits), float_bits(im, size)::little-size(bits)>>

      {kind, v} when kind in [:datetime64, :timedelta64] ->
        <<v::little-signed-64>>

      {kind, v} when kind in [:string, :bytes] ->
        v

      {:fixed_utf32, v} ->
        pad(utf32(v), itemsize(dtype))

      {_, v} ->
        pad(v, itemsize(dtype))
    end
  end

  defp pad(bin, size), do: <<bin::binary, 0::size((size - byte_size(bin)) * 8)>>

  @doc """
  The canonical value of one little-endian element of an integer or float type: the inverse
  of `fill_element/2` (a NaN gives `:nan`).

      iex> ExZarr.DType.element_value(:int16, <<254, 255>>)
      -2
      iex> ExZarr.DType.element_value(:float32, <<0, 0, 192, 127>>)
      :nan
  """
  @spec element_value(t(), binary()) :: fill_value()
  def element_value(dtype, element) do
    bits = 8 * byte_size(element)

    case {kind(dtype), element} do
      {:int, <<v::signed-size(bits)-little>>} ->
        v

      {:uint, <<v::size(bits)-little>>} ->
        v

      {:float, <<word::size(bits)-little>>} ->
        float_from_bits(word, byte_size(element))
    end
  end
end
