defmodule ExZarr.Codecs.Numcodecs do
  @moduledoc false
  # Shared parts of the codecs that exist both in Zarr v3 and as numcodecs codecs in Zarr v2:
  # the v2 <-> v3 configuration mapping, decode bounds and numpy dtypes.
  #
  # A codec module declares itself with
  #
  #     use ExZarr.Codecs.Numcodecs,
  #       name: "numcodecs.lz4", v2_id: "lz4", kind: :bytes_to_bytes, keys: ["acceleration"]
  #
  # which defines `name/0`, `v2_id/0`, `kind/0`, `config_keys/0` (the `keys:`: any other key
  # is refused, see `ExZarr.Codec.Config`), `from_v2/1` and `to_v2/1` (the v3 configuration is
  # the numcodecs config without `"id"`, plus the `v3_defaults:` map for codecs whose v3
  # configuration lists every option). Two more options for compressors:
  #
  #   * `native: :zstd`: the NIF decompresses the codec's data (`ExZarr.Native.zstd_decompress/3`
  #     within the state's decode bounds `max` and `exact`), also straight into an output
  #     buffer when the decoded size is known: defines `decode/2` and `native_decoder/1`;
  #   * `level: {default, range}`: the codec's only option is a `"level"`: defines `init/2`
  #     (`level_state/4`) and `configuration/1`.

  import Bitwise

  alias ExZarr.Codec.Config
  alias ExZarr.{DType, Limits}
  require DType

  @typedoc "A real number data type atom (see `ExZarr.DType`): what the filter kernels take."
  @type dtype :: ExZarr.Native.num_type()

  defmacro __using__(opts) do
    quote bind_quoted: [opts: opts] do
      @behaviour ExZarr.Codec
      @numcodecs_keys Keyword.fetch!(opts, :keys)
      @numcodecs_id Keyword.fetch!(opts, :v2_id)

      @impl true
      def name, do: unquote(Keyword.fetch!(opts, :name))

      @impl true
      def v2_id, do: @numcodecs_id

      @impl true
      def kind, do: unquote(Keyword.fetch!(opts, :kind))

      @impl true
      def config_keys, do: @numcodecs_keys

      @numcodecs_defaults Keyword.get(opts, :v3_defaults, %{})

      # Codecs with a Zarr v3 name of their own store their full configuration there, as
      # zarr-python writes it: the numcodecs defaults fill the options not given.
      @impl true
      def from_v2(config) when is_map(config),
        do: {:ok, Map.merge(@numcodecs_defaults, Map.take(config, @numcodecs_keys))}

      @impl true
      def to_v2(config) when is_map(config),
        do: {:ok, config |> Map.take(@numcodecs_keys) |> Map.put("id", @numcodecs_id)}

      defoverridable from_v2: 1, to_v2: 1

      if native = Keyword.get(opts, :native) do
        @numcodecs_native native
        @numcodecs_decompress :"#{native}_decompress"

        @impl true
        def decode(data, s),
          do: apply(ExZarr.Native, @numcodecs_decompress, [data, s.max, s.exact])

        @impl true
        def native_decoder(%{exact: true}), do: @numcodecs_native
        def native_decoder(_s), do: nil
      end

      if level = Keyword.get(opts, :level) do
        @numcodecs_level level

        @impl true
        def init(config, spec) do
          {default, range} = @numcodecs_level
          ExZarr.Codecs.Numcodecs.level_state(config, spec, default, range)
        end

        @impl true
        def configuration(s), do: %{"level" => s.level}
      end
    end
  end

  # Decoders without a known decoded size stop at this many bytes.
  @max_unknown_size 1 <<< 31

  @doc """
  Decode bounds from a chunk spec: `{decoded_size, true}` when the size is known; else for
  the chunks of a variable-length type `{ExZarr.Limits.vlen_decoded_bytes(items), false}`,
  and `{#{@max_unknown_size}, false}` otherwise.

      iex> ExZarr.Codecs.Numcodecs.decode_bounds(%{decoded_size: 80})
      {80, true}
  """
  @spec decode_bounds(map()) :: {non_neg_integer(), boolean()}
  def decode_bounds(%{decoded_size: size}) when is_integer(size) and size >= 0, do: {size, true}

  def decode_bounds(%{dtype: dtype, shape: shape}) when DType.is_var_len(dtype),
    do: {Limits.vlen_decoded_bytes(ExZarr.Shape.product(shape)), false}

  def decode_bounds(_spec), do: {@max_unknown_size, false}

  @doc """
  The state of a codec configured by a compression `"level"` alone: the level (checked
  against `range`) and the decode bounds.

      iex> ExZarr.Codecs.Numcodecs.level_state(%{}, %{decoded_size: 10}, 1, 1..9)
      {:ok, %{level: 1, max: 10, exact: true}}
  """
  @spec level_state(map(), map(), integer(), Range.t()) :: {:ok, map()} | {:error, term()}
  def level_state(config, spec, default, range) do
    with {:ok, level} <- Config.integer(config, "level", default, range) do
      {max, exact} = decode_bounds(spec)
      {:ok, %{level: level, max: max, exact: exact}}
    end
  end

  @numpy %{
    "b1" => :bool,
    "i1" => :int8,
    "i2" => :int16,
    "i4" => :int32,
    "i8" => :int64,
    "u1" => :uint8,
    "u2" => :uint16,
    "u4" => :uint32,
    "u8" => :uint64,
    "f2" => :float16,
    "f4" => :float32,
    "f8" => :float64
  }
  @to_numpy Map.new(@numpy, fn {k, v} -> {v, k} end)

  @doc """
  A numpy dtype string of a real number type (`"<i4"`, `"|u1"`, `"f8"`, `"|b1"`) as a dtype
  atom: the types the filter kernels compute in. The byte order is dropped: filters see
  elements in native order, the `bytes` codec handles the stored order.

      iex> ExZarr.Codecs.Numcodecs.parse_dtype("<f8")
      {:ok, :float64}
  """
  @spec parse_dtype(term()) :: {:ok, dtype()} | {:error, term()}
  def parse_dtype(<<order, code::binary>>) when order in [?<, ?>, ?|, ?=] and code != "",
    do: parse_dtype(code)

  def parse_dtype(code) when is_map_key(@numpy, code), do: {:ok, Map.fetch!(@numpy, code)}
  def parse_dtype(other), do: {:error, {:unsupported_dtype, other}}

  @numpy_expected "a numpy dtype of a real number type (\"|b1\", \"<i4\", \"<f8\", ...)"

  @doc "The numpy dtype string of a dtype atom (`:int32` -> `\"<i4\"`, `:uint8` -> `\"|u1\"`)."
  @spec numpy_dtype(dtype()) :: String.t()
  def numpy_dtype(dtype) do
    code = Map.fetch!(@to_numpy, dtype)
    if itemsize(dtype) == 1, do: "|" <> code, else: "<" <> code
  end

  @doc """
  The dtype given as `key` in the configuration, else the chunk spec's dtype, which must then
  be a real number type (`{:error, {:unsupported_dtype, dtype}}` otherwise).
  """
  @spec dtype_option(map(), String.t(), map()) :: {:ok, dtype()} | {:error, term()}
  def dtype_option(config, key, spec) do
    case Config.fetch(config, key) do
      {:ok, s} ->
        with {:error, _} <- parse_dtype(s), do: Config.invalid(key, s, @numpy_expected)

      :error ->
        case Map.get(spec, :dtype) do
          nil -> {:error, {:missing_key, key}}
          dtype -> if known_itemsize(dtype), do: {:ok, dtype}, else: unsupported(dtype)
        end
    end
  end

  defp unsupported(dtype), do: {:error, {:unsupported_dtype, dtype}}

  @doc """
  The dtype of the data a filter receives: `key` in the configuration when given (it must be
  the chunk's data type when that is known), else the chunk's data type.
  """
  @spec data_dtype(map(), String.t(), map()) :: {:ok, dtype()} | {:error, term()}
  def data_dtype(config, key, spec) do
    chunk = Map.get(spec, :dtype)

    with {:ok, dtype} <- dtype_option(config, key, spec) do
      if known_itemsize(chunk) == nil or chunk == dtype,
        do: {:ok, dtype},
        else:
          Config.invalid(key, Config.get(config, key), "the array's data type #{inspect(chunk)}")
    end
  end

  @doc """
  The data types of a filter that computes in `"dtype"` (the chunk's, see `data_dtype/3`) and
  stores its result as `"astype"` (default: `"dtype"`).

      iex> spec = %{dtype: :int32}
      iex> ExZarr.Codecs.Numcodecs.dtype_and_astype(%{"astype" => "|u1"}, spec)
      {:ok, :int32, :uint8}
  """
  @spec dtype_and_astype(map(), map()) :: {:ok, dtype(), dtype()} | {:error, term()}
  def dtype_and_astype(config, spec) do
    with {:ok, dtype} <- data_dtype(config, "dtype", spec),
         {:ok, astype} <- dtype_option(config, "astype", %{dtype: dtype}),
         do: {:ok, dtype, astype}
  end

  @doc "The `\"dtype\"` and `\"astype\"` of such a filter's configuration, as numpy dtypes."
  @spec dtype_and_astype_config(%{dtype: dtype(), astype: dtype()}) :: map()
  def dtype_and_astype_config(s),
    do: %{"dtype" => numpy_dtype(s.dtype), "astype" => numpy_dtype(s.astype)}

  @doc """
  The element size of the chunk's data type, as zarr-python gives it to blosc and shuffle;
  nil for variable-length types and when there is no data type.

      iex> ExZarr.Codecs.Numcodecs.spec_itemsize(%{dtype: :complex64})
      8
  """
  @spec spec_itemsize(map()) :: pos_integer() | nil
  def spec_itemsize(spec) do
    dtype = Map.get(spec, :dtype)
    if DType.valid?(dtype) and not DType.is_var_len(dtype), do: DType.itemsize(dtype)
  end

  @doc "True for the integer dtypes (signed or unsigned)."
  @spec integer_dtype?(dtype()) :: boolean()
  def integer_dtype?(dtype),
    do: dtype in [:int8, :int16, :int32, :int64, :uint8, :uint16, :uint32, :uint64]

  @doc "Size in bytes of one element of a real number dtype, nil for any other term."
  @spec known_itemsize(term()) :: pos_integer() | nil
  def known_itemsize(dtype) when is_map_key(@to_numpy, dtype), do: itemsize(dtype)
  def known_itemsize(_dtype), do: nil

  @doc "Size in bytes of one element of a real number dtype."
  @spec itemsize(dtype()) :: pos_integer()
  def itemsize(dtype) do
    case Map.fetch!(@to_numpy, dtype) do
      "b1" -> 1
      <<_kind, bytes::binary>> -> String.to_integer(bytes)
    end
  end
end
