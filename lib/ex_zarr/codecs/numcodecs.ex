defmodule ExZarr.Codecs.Numcodecs do
  @moduledoc """
  Shared parts of the codecs that exist both in Zarr v3 and as numcodecs codecs in Zarr v2:
  the v2 <-> v3 configuration mapping, option parsing, decode bounds and numpy dtypes.

  A codec module declares itself with

      use ExZarr.Codecs.Numcodecs,
        name: "numcodecs.lz4", v2_id: "lz4", kind: :bytes_to_bytes, keys: ["acceleration"]

  which defines `name/0`, `v2_id/0`, `kind/0`, `from_v2/1` and `to_v2/1` (the v3 configuration
  is the numcodecs config without `"id"`, keeping only the given keys that are present, plus
  the `v3_defaults:` map for codecs whose v3 configuration lists every option).
  """

  import Bitwise

  @typedoc "A numeric data type atom (see `ExZarr.DType`)."
  @type dtype :: ExZarr.Native.num_type() | :complex64 | :complex128

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
    end
  end

  # Decoders without a known decoded size stop at this many bytes.
  @max_unknown_size 1 <<< 31

  @doc """
  Decode bounds from a chunk spec: `{decoded_size, true}` when the size is known, else
  `{#{@max_unknown_size}, false}`.

      iex> ExZarr.Codecs.Numcodecs.decode_bounds(%{decoded_size: 80})
      {80, true}
  """
  @spec decode_bounds(map()) :: {non_neg_integer(), boolean()}
  def decode_bounds(%{decoded_size: size}) when is_integer(size) and size >= 0, do: {size, true}
  def decode_bounds(_spec), do: {@max_unknown_size, false}

  @doc """
  The state of a codec configured by a compression `"level"` alone: the level (checked
  against `range`) and the decode bounds.

      iex> ExZarr.Codecs.Numcodecs.level_state(%{}, %{decoded_size: 10}, 1, 1..9)
      {:ok, %{level: 1, max: 10, exact: true}}
  """
  @spec level_state(map(), map(), integer(), Range.t()) :: {:ok, map()} | {:error, term()}
  def level_state(config, spec, default, range) do
    with {:ok, level} <- int_option(config, "level", default, range) do
      {max, exact} = decode_bounds(spec)
      {:ok, %{level: level, max: max, exact: exact}}
    end
  end

  @doc """
  Fetches an option; JSON `null` (`:null` from jiffy, or nil) counts as absent.

      iex> ExZarr.Codecs.Numcodecs.fetch(%{"preset" => :null}, "preset")
      :error
  """
  @spec fetch(map(), String.t()) :: {:ok, term()} | :error
  def fetch(config, key) do
    case Map.fetch(config, key) do
      {:ok, v} when v in [nil, :null] -> :error
      other -> other
    end
  end

  @doc "Like `fetch/2` with a default."
  @spec get(map(), String.t(), term()) :: term()
  def get(config, key, default \\ nil) do
    case fetch(config, key) do
      {:ok, v} -> v
      :error -> default
    end
  end

  @doc """
  An integer option of a configuration, with a default and an allowed range.

      iex> ExZarr.Codecs.Numcodecs.int_option(%{"level" => 3}, "level", 1, 0..9)
      {:ok, 3}
      iex> ExZarr.Codecs.Numcodecs.int_option(%{"level" => 30}, "level", 1, 0..9)
      {:error, {:invalid_option, "level", 30}}
  """
  @spec int_option(map(), String.t(), integer() | nil, Range.t()) ::
          {:ok, integer() | nil} | {:error, term()}
  def int_option(config, key, default, range) do
    case get(config, key, default) do
      nil when default == nil -> {:ok, nil}
      v when is_integer(v) -> if v in range, do: {:ok, v}, else: invalid(key, v)
      v -> invalid(key, v)
    end
  end

  @doc """
  `:ok` when every key of `config` is one of `keys`, else the first unknown key.

      iex> ExZarr.Codecs.Numcodecs.known_keys(%{"location" => "end"}, ["location"])
      :ok
      iex> ExZarr.Codecs.Numcodecs.known_keys(%{"where" => "end"}, ["location"])
      {:error, {:unknown_option, "where"}}
  """
  @spec known_keys(map(), [String.t()]) :: :ok | {:error, {:unknown_option, String.t()}}
  def known_keys(config, keys) do
    case config |> Map.keys() |> Enum.sort() |> Enum.find(&(&1 not in keys)) do
      nil -> :ok
      key -> {:error, {:unknown_option, key}}
    end
  end

  @doc """
  A numcodecs config as the v3 configuration of a codec that stores only the options given
  (the config without `"id"`), when all its keys are the codec's.

      iex> ExZarr.Codecs.Numcodecs.given_options(%{"id" => "crc32", "location" => "end"}, ["location"])
      {:ok, %{"location" => "end"}}
  """
  @spec given_options(map(), [String.t()]) :: {:ok, map()} | {:error, term()}
  def given_options(config, keys) do
    config = Map.delete(config, "id")
    with :ok <- known_keys(config, keys), do: {:ok, config}
  end

  @doc "A boolean option of a configuration, with a default."
  @spec bool_option(map(), String.t(), boolean()) :: {:ok, boolean()} | {:error, term()}
  def bool_option(config, key, default) do
    case get(config, key, default) do
      v when is_boolean(v) -> {:ok, v}
      v -> invalid(key, v)
    end
  end

  @doc "A string option that must be one of `allowed`."
  @spec enum_option(map(), String.t(), String.t(), [String.t()]) ::
          {:ok, String.t()} | {:error, term()}
  def enum_option(config, key, default, allowed) do
    v = get(config, key, default)
    if v in allowed, do: {:ok, v}, else: invalid(key, v)
  end

  @doc "The error for an option with an invalid value."
  @spec invalid(String.t(), term()) :: {:error, {:invalid_option, String.t(), term()}}
  def invalid(key, value), do: {:error, {:invalid_option, key, value}}

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
    "f8" => :float64,
    "c8" => :complex64,
    "c16" => :complex128
  }
  @to_numpy Map.new(@numpy, fn {k, v} -> {v, k} end)

  @doc """
  A numeric numpy dtype string (`"<i4"`, `"|u1"`, `"f8"`) as a dtype atom. The byte order is
  dropped: filters see elements in native order, the `bytes` codec handles the stored order.

      iex> ExZarr.Codecs.Numcodecs.parse_dtype("<f8")
      {:ok, :float64}
  """
  @spec parse_dtype(term()) :: {:ok, dtype()} | {:error, term()}
  def parse_dtype(<<order, code::binary>>) when order in [?<, ?>, ?|, ?=] and code != "",
    do: parse_dtype(code)

  def parse_dtype(code) when is_map_key(@numpy, code), do: {:ok, Map.fetch!(@numpy, code)}
  def parse_dtype(other), do: {:error, {:unsupported_dtype, other}}

  @doc "The numpy dtype string of a dtype atom (`:int32` -> `\"<i4\"`, `:uint8` -> `\"|u1\"`)."
  @spec numpy_dtype(dtype()) :: String.t()
  def numpy_dtype(dtype) do
    code = Map.fetch!(@to_numpy, dtype)
    if itemsize(dtype) == 1, do: "|" <> code, else: "<" <> code
  end

  @doc "The dtype given as `key` in the configuration, else the chunk spec's dtype."
  @spec dtype_option(map(), String.t(), map()) :: {:ok, dtype()} | {:error, term()}
  def dtype_option(config, key, spec) do
    case fetch(config, key) do
      {:ok, s} ->
        parse_dtype(s)

      :error ->
        dtype = Map.get(spec, :dtype)
        if known_itemsize(dtype), do: {:ok, dtype}, else: {:error, {:missing_option, key}}
    end
  end

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
        else: {:error, {:dtype_mismatch, key, dtype, chunk}}
    end
  end

  @doc "True for the integer dtypes (signed or unsigned)."
  @spec integer_dtype?(dtype()) :: boolean()
  def integer_dtype?(dtype),
    do: dtype in [:int8, :int16, :int32, :int64, :uint8, :uint16, :uint32, :uint64]

  @doc "Size in bytes of one element of a numeric dtype, nil for any other term."
  @spec known_itemsize(term()) :: pos_integer() | nil
  def known_itemsize(dtype) when is_map_key(@to_numpy, dtype), do: itemsize(dtype)
  def known_itemsize(_dtype), do: nil

  @doc "Size in bytes of one element of a numeric dtype."
  @spec itemsize(dtype()) :: pos_integer()
  def itemsize(dtype) do
    case Map.fetch!(@to_numpy, dtype) do
      "b1" -> 1
      <<_kind, bytes::binary>> -> String.to_integer(bytes)
    end
  end
end
