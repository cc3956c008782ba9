defmodule ExZarr.Codec.Config do
  @moduledoc """
  Reading and checking a codec's configuration: the one scheme every codec follows.

    1. A codec lists every configuration key it knows in `c:ExZarr.Codec.config_keys/0`
       (`use ExZarr.Codecs.Numcodecs, keys: [...]` defines it). `ExZarr.Codec.Registry`
       refuses any other key, in a v3 `configuration` and in a v2 numcodecs config (where
       `"id"` is the only other key), before the codec sees it: `check_keys/2`.
    2. `c:ExZarr.Codec.init/2` reads each value with the readers below, which check its type
       and its range against what the native library really supports, and returns their
       error as is.
    3. `ExZarr.Codec.Pipeline` and `ExZarr.Codec.Registry` wrap a codec's error with its name:
       `{:error, {:invalid_codec_config, "zstd", detail}}`, where `detail` is
       `{:unknown_key, key}`, `{:missing_key, key}`,
       `{:invalid_value, key, value, expected}` (`expected` says what is allowed), or a
       codec's own reason (`{:unsupported_dtype, dtype}`).
    4. The NIF checks the values again and returns `{:error, _}` for anything it cannot run.

  A JSON `null` (`:null` from jiffy, or `nil`) counts as an absent key.

      iex> ExZarr.Codec.Config.integer(%{"level" => 3}, "level", 1, 0..9)
      {:ok, 3}
      iex> ExZarr.Codec.Config.integer(%{"level" => 30}, "level", 1, 0..9)
      {:error, {:invalid_value, "level", 30, "an integer in 0..9"}}
      iex> ExZarr.Codec.Config.check_keys(%{"levle" => 19}, ["level", "checksum"])
      {:error, {:unknown_key, "levle"}}
  """

  @typedoc "Why a configuration is refused (wrapped as `{:invalid_codec_config, codec, detail}`)."
  @type detail ::
          {:unknown_key, String.t()}
          | {:missing_key, String.t()}
          | {:invalid_value, String.t(), term(), String.t()}
          | term()

  @doc "`:ok` when every key of `config` is in `known`, else the first other key (sorted)."
  @spec check_keys(map(), [String.t()]) :: :ok | {:error, {:unknown_key, term()}}
  def check_keys(config, known) do
    case config |> Map.keys() |> Enum.reject(&(&1 in known)) |> Enum.sort() do
      [] -> :ok
      [key | _] -> {:error, {:unknown_key, key}}
    end
  end

  @doc """
  Fetches a value; JSON `null` counts as absent.

      iex> ExZarr.Codec.Config.fetch(%{"preset" => :null}, "preset")
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
  An integer in `range`. `default` is used when the key is absent: a value, `nil` (then
  `{:ok, nil}`) or `:required` (then `{:error, {:missing_key, key}}`).

      iex> ExZarr.Codec.Config.integer(%{}, "keepbits", :required, 0..23)
      {:error, {:missing_key, "keepbits"}}
  """
  @spec integer(map(), String.t(), integer() | nil | :required, Range.t()) ::
          {:ok, integer() | nil} | {:error, detail()}
  def integer(config, key, default, range) do
    case fetch(config, key) do
      {:ok, v} when is_integer(v) ->
        if v in range, do: {:ok, v}, else: invalid(key, v, "an integer in #{inspect(range)}")

      {:ok, v} ->
        invalid(key, v, "an integer in #{inspect(range)}")

      :error ->
        absent(key, default)
    end
  end

  @doc "A boolean, `default` when absent."
  @spec boolean(map(), String.t(), boolean()) :: {:ok, boolean()} | {:error, detail()}
  def boolean(config, key, default) do
    case get(config, key, default) do
      v when is_boolean(v) -> {:ok, v}
      v -> invalid(key, v, "true or false")
    end
  end

  @doc "One of the `allowed` values, `default` when absent."
  @spec one_of(map(), String.t(), term(), [term()]) :: {:ok, term()} | {:error, detail()}
  def one_of(config, key, default, allowed) do
    v = get(config, key, default)
    if v in allowed, do: {:ok, v}, else: invalid(key, v, "one of #{inspect(allowed)}")
  end

  @doc """
  A number the native code takes as a C double or int64: any float, or an integer of
  64 bits. `default` as in `integer/4`.

      iex> ExZarr.Codec.Config.number(%{"scale" => 2 ** 70}, "scale", :required)
      {:error, {:invalid_value, "scale", 1180591620717411303424, "a number (integers within 64 bits)"}}
  """
  @spec number(map(), String.t(), number() | nil | :required) ::
          {:ok, number() | nil} | {:error, detail()}
  def number(config, key, default) do
    case fetch(config, key) do
      {:ok, v}
      when is_float(v) or (is_integer(v) and v in -0x8000000000000000..0x7FFFFFFFFFFFFFFF) ->
        {:ok, v}

      {:ok, v} ->
        invalid(key, v, "a number (integers within 64 bits)")

      :error ->
        absent(key, default)
    end
  end

  defp absent(key, :required), do: {:error, {:missing_key, key}}
  defp absent(_key, default), do: {:ok, default}

  @doc "The error for a value that is not what `expected` says."
  @spec invalid(String.t(), term(), String.t()) ::
          {:error, {:invalid_value, String.t(), term(), String.t()}}
  def invalid(key, value, expected), do: {:error, {:invalid_value, key, value, expected}}

  @doc """
  A codec's error with the codec's name: `{:invalid_codec_config, name, detail}`, left as it
  is when it already is one, for a limit of `ExZarr.Limits` (`{:too_large, what, size, max}`,
  about the array rather than the codec) and for `{:unsupported_codec, why}` (a codec that
  cannot run on this array's data).
  """
  @spec wrap({:error, term()}, String.t()) ::
          {:error,
           {:invalid_codec_config, String.t(), term()}
           | {:too_large, term(), term(), term()}
           | {:unsupported_codec, term()}}
  def wrap({:error, {:invalid_codec_config, _codec, _detail}} = error, _name), do: error
  def wrap({:error, {:too_large, _what, _size, _max}} = error, _name), do: error
  def wrap({:error, {:unsupported_codec, _why}} = error, _name), do: error
  def wrap({:error, detail}, name), do: {:error, {:invalid_codec_config, name, detail}}
end
