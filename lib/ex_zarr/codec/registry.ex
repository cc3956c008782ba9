defmodule ExZarr.Codec.Registry do
  @moduledoc """
  Maps codec names to the modules implementing them: Zarr v3 names (`"zstd"`,
  `"numcodecs.delta"`) and Zarr v2 numcodecs ids (`"zstd"`, `"lz4"`, `"blosc"`).

  A v3 name `"numcodecs.<id>"` also finds any codec whose numcodecs id is `<id>`, with its
  configuration read as a numcodecs config, as zarr-python writes such codecs.

  Users add their own codec with `register/1`, and arrays then name it in their codecs:

      iex> defmodule MyApp.Reverse do
      ...>   @behaviour ExZarr.Codec
      ...>   def name, do: "myapp.reverse"
      ...>   def kind, do: :bytes_to_bytes
      ...>   def config_keys, do: []
      ...>   def init(_config, _spec), do: {:ok, nil}
      ...>   def encode(data, nil), do: {:ok, data |> IO.iodata_to_binary() |> reverse()}
      ...>   def decode(data, nil), do: {:ok, reverse(data)}
      ...>   def configuration(nil), do: %{}
      ...>   defp reverse(bin), do: bin |> :binary.bin_to_list() |> Enum.reverse() |> :binary.list_to_bin()
      ...> end
      iex> :ok = ExZarr.Codec.Registry.register(MyApp.Reverse)
      iex> ExZarr.Codec.Registry.fetch("myapp.reverse")
      {:ok, MyApp.Reverse}
      iex> codecs = [%{name: "bytes", configuration: %{}}, %{name: "myapp.reverse"}]
      iex> {:ok, a} = ExZarr.create(shape: {4}, chunks: {4}, dtype: :uint8, codecs: codecs)
      iex> :ok = ExZarr.Array.set_slice(a, <<1, 2, 3, 4>>)
      iex> ExZarr.Storage.get(a.storage, "c/0")
      {:ok, <<4, 3, 2, 1>>}
      iex> ExZarr.Array.get_slice(a)
      {:ok, <<1, 2, 3, 4>>}
  """

  @builtin [
    ExZarr.Codecs.Bytes,
    ExZarr.Codecs.Transpose,
    ExZarr.Codecs.Gzip,
    ExZarr.Codecs.Zlib,
    ExZarr.Codecs.Crc32c,
    ExZarr.Codecs.Crc32,
    ExZarr.Codecs.Adler32,
    ExZarr.Codecs.Fletcher32,
    ExZarr.Codecs.JenkinsLookup3,
    ExZarr.Codecs.Zfpy,
    ExZarr.Codecs.Pcodec,
    ExZarr.Codecs.Zstd,
    ExZarr.Codecs.Blosc,
    ExZarr.Codecs.Lz4,
    ExZarr.Codecs.Bz2,
    ExZarr.Codecs.Base64,
    ExZarr.Codecs.Lzma,
    ExZarr.Codecs.Delta,
    ExZarr.Codecs.FixedScaleOffset,
    ExZarr.Codecs.Shuffle,
    ExZarr.Codecs.Bitround,
    ExZarr.Codecs.Quantize,
    ExZarr.Codecs.Astype,
    ExZarr.Codecs.Packbits,
    ExZarr.Codecs.Categorize,
    ExZarr.Codecs.ScaleOffset,
    ExZarr.Codecs.CastValue,
    ExZarr.Codecs.ShardingIndexed,
    ExZarr.Codecs.VlenUtf8,
    ExZarr.Codecs.VlenBytes
  ]

  alias ExZarr.Codec.Config

  @key {__MODULE__, :tables}

  @doc """
  Registers a codec module under its name and v2 id (a codec already registered under them,
  built-in or not, is replaced). `{:error, {:not_a_codec, module}}` unless the module
  implements the callbacks `ExZarr.Codec` requires, with a string name and a valid kind.

      iex> ExZarr.Codec.Registry.register(String)
      {:error, {:not_a_codec, String}}
  """
  @spec register(module()) :: :ok | {:error, {:not_a_codec, term()}}
  def register(module) do
    if codec_module?(module) do
      locked(fn -> :persistent_term.put(@key, add(module, stored_or_builtin())) end)
    else
      {:error, {:not_a_codec, module}}
    end
  end

  @doc """
  The module for a v3 codec name.

      iex> ExZarr.Codec.Registry.fetch("bytes")
      {:ok, ExZarr.Codecs.Bytes}
      iex> ExZarr.Codec.Registry.fetch("nope")
      {:error, {:unsupported_codec, "nope"}}
  """
  @spec fetch(String.t()) :: {:ok, module()} | {:error, {:unsupported_codec, String.t()}}
  def fetch(name) do
    case resolve(%{name: name, configuration: %{}}) do
      {:ok, module, _config} -> {:ok, module}
      error -> error
    end
  end

  @doc """
  Resolves a v3 codec spec to its module and its configuration in the module's own (v3) form.
  A configuration key the codec does not know (see `ExZarr.Codec.Config`) is an error, and so
  is anything but a spec:

      iex> ExZarr.Codec.Registry.resolve(%{name: "zstd", configuration: %{"levle" => 19}})
      {:error, {:invalid_codec_config, "zstd", {:unknown_key, "levle"}}}
      iex> ExZarr.Codec.Registry.resolve(%{"name" => "zstd"})
      {:error, {:invalid_codec_spec, %{"name" => "zstd"}}}
  """
  @spec resolve(ExZarr.Codec.spec()) ::
          {:ok, module(), map()} | {:error, {:unsupported_codec, String.t()} | term()}
  def resolve(%{name: name} = spec) when is_binary(name) do
    config = Map.get(spec, :configuration) || %{}
    {by_name, by_id} = tables()

    case {Map.fetch(by_name, name), name} do
      {_, _} when not is_map(config) ->
        {:error, {:invalid_codec_config, name, {:not_an_object, config}}}

      {{:ok, module}, _} ->
        with :ok <- check_keys(module, name, config), do: {:ok, module, config}

      {:error, "numcodecs." <> id} when is_map_key(by_id, id) ->
        module = Map.fetch!(by_id, id)

        with :ok <- check_keys(module, name, config),
             {:ok, v3_config} <- numcodecs_to_v3(module, name, Map.put(config, "id", id)),
             do: {:ok, module, v3_config}

      _ ->
        {:error, {:unsupported_codec, name}}
    end
  end

  def resolve(other), do: {:error, {:invalid_codec_spec, other}}

  @doc """
  Translates a Zarr v2 numcodecs config (`%{"id" => "zstd", "level" => 1}`) into a v3 codec spec
  and the codec's kind. Keys the codec does not know are errors, as in numcodecs:

      iex> ExZarr.Codec.Registry.from_v2(%{"id" => "zstd", "levle" => 19})
      {:error, {:invalid_codec_config, "zstd", {:unknown_key, "levle"}}}
  """
  @spec from_v2(map()) :: {:ok, ExZarr.Codec.spec(), ExZarr.Codec.kind()} | {:error, term()}
  def from_v2(%{"id" => id} = config) when is_binary(id) do
    {_by_name, by_id} = tables()

    with {:ok, module} <- Map.fetch(by_id, id) |> or_unsupported(id),
         :ok <- check_keys(module, id, Map.delete(config, "id")),
         {:ok, v3_config} <- numcodecs_to_v3(module, id, config) do
      {:ok, %{name: module.name(), configuration: v3_config}, module.kind()}
    end
  end

  def from_v2(%{"id" => id}),
    do:
      {:error, {:invalid_codec_config, nil, {:invalid_value, "id", id, "a codec id (a string)"}}}

  def from_v2(%{}), do: {:error, {:invalid_codec_config, nil, {:missing_key, "id"}}}

  def from_v2(other), do: {:error, {:invalid_codec_config, nil, {:not_an_object, other}}}

  # A numcodecs config (with its "id") -> the codec's v3 configuration; errors name `codec`.
  defp numcodecs_to_v3(module, codec, config) do
    case module.from_v2(config) do
      {:ok, v3_config} -> {:ok, v3_config}
      error -> Config.wrap(error, codec)
    end
  end

  defp check_keys(module, codec, config) do
    if function_exported?(module, :config_keys, 0) do
      with {:error, _} = error <- Config.check_keys(config, module.config_keys()),
           do: Config.wrap(error, codec)
    else
      :ok
    end
  end

  @doc "Translates a v3 codec spec into the numcodecs config Zarr v2 metadata stores."
  @spec to_v2(ExZarr.Codec.spec()) :: {:ok, map()} | {:error, term()}
  def to_v2(spec) do
    with {:ok, module, config} <- resolve(spec) do
      if function_exported?(module, :to_v2, 1),
        do: module.to_v2(config),
        else: {:error, {:not_in_zarr_v2, spec.name}}
    end
  end

  defp or_unsupported({:ok, module}, _id), do: {:ok, module}
  defp or_unsupported(:error, id), do: {:error, {:unsupported_codec, id}}

  defp tables do
    case :persistent_term.get(@key, nil) do
      nil ->
        locked(fn ->
          tables = stored_or_builtin()
          :persistent_term.put(@key, tables)
          tables
        end)

      tables ->
        tables
    end
  end

  defp stored_or_builtin,
    do: :persistent_term.get(@key, nil) || Enum.reduce(@builtin, {%{}, %{}}, &add/2)

  # Changes of the tables one at a time, so that concurrent registrations all land and the
  # first use never stores the built-ins over a registration.
  defp locked(fun), do: :global.trans({{__MODULE__, :tables}, self()}, fun, [node()])

  defp add(module, {by_name, by_id} = acc) do
    if codec_module?(module) do
      by_id =
        if function_exported?(module, :v2_id, 0),
          do: Map.put(by_id, module.v2_id(), module),
          else: by_id

      {Map.put(by_name, module.name(), module), by_id}
    else
      acc
    end
  end

  @required [name: 0, kind: 0, init: 2, encode: 2, decode: 2, configuration: 1]

  defp codec_module?(module) do
    is_atom(module) and Code.ensure_loaded?(module) and
      Enum.all?(@required, fn {fun, arity} -> function_exported?(module, fun, arity) end) and
      is_binary(module.name()) and
      module.kind() in [:array_to_array, :array_to_bytes, :bytes_to_bytes]
  end
end
