defmodule ExZarr.Codec do
  @moduledoc """
  The behaviour every codec implements, and the shared chunk description codecs work on.

  A codec is one of three kinds (Zarr v3 terminology):

    * `:array_to_array`: takes a chunk of packed elements (C order, little-endian) and returns
      another one, possibly of a different shape or data type (`transpose`, `numcodecs.delta`).
    * `:array_to_bytes`: turns the packed elements into the stored byte layout (`bytes`,
      `sharding_indexed`). Exactly one per pipeline.
    * `:bytes_to_bytes`: compressors and checksums (`gzip`, `zstd`, `crc32c`, ...).

  A codec is configured once per array with `c:init/2`, which receives the JSON configuration
  (string keys, as stored in `zarr.json`) and the `t:chunk_spec/0` the codec will see. The returned
  state is passed to `c:encode/2` and `c:decode/2` for every chunk. How a codec declares and
  checks its configuration is described in `ExZarr.Codec.Config`.

  Two optional capabilities let `ExZarr.Codec.Pipeline` move chunks without a generic
  decode:

    * `c:native_decoder/1`: how the NIF decodes this codec's data by itself, straight into an
      output buffer (`ExZarr.Native.outbuf_put/4`), as a bytes->bytes compressor (`:zstd`) or
      as the `bytes` codec (`:raw`, or `{:raw, n}` when `n`-byte units are byte-swapped).
      The pipeline uses the native path when every stage has one.
    * `c:decode_partial/5` and `c:encode_partial/5` (array->bytes codecs, like sharding): read
      a box of a stored chunk without fetching all of it, and write a piece of a chunk
      without re-encoding all of it; such a codec also reads one inner chunk
      (`c:read_inner_chunk/3`, `c:inner_chunk_shape/1`). A codec without them is read and
      written whole.

  Codecs that also exist in Zarr v2 (numcodecs ids) implement `c:from_v2/1` and `c:to_v2/1`,
  translating between the numcodecs config (`%{"id" => "zstd", "level" => 1}`) and the v3
  configuration map.
  """

  @typedoc "Which stage of the pipeline a codec belongs to."
  @type kind :: :array_to_array | :array_to_bytes | :bytes_to_bytes

  @typedoc """
  A codec as written in metadata: v3 `name` plus its `configuration` (string keys).
  """
  @type spec :: %{required(:name) => String.t(), required(:configuration) => map()}

  @typedoc """
  What a codec receives at `init/2`:

    * `shape` / `dtype` / `fill_value`: the chunk the codec sees (for array codecs),
    * `decoded_size`: for bytes->bytes codecs, the exact byte size `decode/2` must produce
      when it is known (nil otherwise). Decoders never produce more than this.
  """
  @type chunk_spec :: %{
          shape: tuple(),
          dtype: ExZarr.DType.t(),
          fill_value: term(),
          decoded_size: non_neg_integer() | nil
        }

  @type state :: term()

  @doc "The v3 codec name this module writes (`\"zstd\"`, `\"numcodecs.delta\"`)."
  @callback name() :: String.t()
  @doc "The numcodecs id used in Zarr v2 metadata, when the codec exists there."
  @callback v2_id() :: String.t()
  @doc "Which stage of a pipeline the codec is."
  @callback kind() :: kind()

  @doc """
  Checks a configuration (string keys; keys not in `c:config_keys/0` never reach it) for the
  chunks described by the spec, and returns the state every chunk is encoded and decoded with.
  """
  @callback init(configuration :: map(), chunk_spec()) :: {:ok, state()} | {:error, term()}

  @doc """
  Encodes one chunk: for array codecs packed elements in C order, little-endian (a list of
  the items for the variable-length serializers). A compressor right after a `bytes`
  serializer that leaves the bytes as they are may get the chunk as a box of the caller's
  array (`t:ExZarr.Native.encoder_input/0`), for its NIF to gather.
  """
  @callback encode(data :: ExZarr.Native.encoder_input() | [binary()], state()) ::
              {:ok, iodata()} | {:error, term()}

  @doc """
  Decodes one chunk (a tuple of the items for the variable-length serializers). Data from a
  store is untrusted: anything malformed is `{:error, _}`, and the result is never larger
  than the chunk spec allows.
  """
  @callback decode(data :: binary(), state()) :: {:ok, binary() | tuple()} | {:error, term()}

  @doc """
  Every configuration key the codec knows (string keys, without v2's `"id"`): the registry
  refuses others (see `ExZarr.Codec.Config`). Codecs without it check their keys in `init/2`.
  """
  @callback config_keys() :: [String.t()]

  @doc "The configuration to store in metadata (string keys, JSON values)."
  @callback configuration(state()) :: map()

  @doc "Array->array codecs: the chunk spec seen by the next codec."
  @callback resolve_spec(chunk_spec(), state()) :: chunk_spec()

  @doc "The encoded size for a given input size, when it is fixed (used for sharding indexes)."
  @callback encoded_size(non_neg_integer(), state()) :: non_neg_integer() | :variable

  @doc "v2 (numcodecs) config -> v3 configuration."
  @callback from_v2(map()) :: {:ok, map()} | {:error, term()}
  @doc "v3 configuration -> v2 (numcodecs) config, including the `\"id\"` key."
  @callback to_v2(map()) :: {:ok, map()} | {:error, term()}

  @doc """
  How the NIF decodes this codec's data natively (see the moduledoc), or nil when it cannot.
  """
  @callback native_decoder(state()) :: ExZarr.Native.outbuf_codec() | nil

  @doc """
  Reads the box `{start_in_chunk, start_in_output, count}` of the chunk stored at `chunk`
  into `out` (see `ExZarr.Codec.Pipeline.output/2`), fetching only what the box needs.
  Returns the pieces a variable-length output assembles at the end (`[]` for packed data).
  A chunk that is not stored fills the box. `opts` are the read's options.
  """
  @callback decode_partial(
              state(),
              ExZarr.Codec.Chunk.t(),
              ExZarr.Codec.Pipeline.box(),
              ExZarr.Codec.Pipeline.output(),
              keyword()
            ) :: {:ok, list()} | {:error, term()}

  @doc """
  Writes `piece` (a `t:ExZarr.Native.piece/0` whose destination is the chunk) into the chunk
  stored at `chunk`, of which `extent` lies inside the array: reads only what the piece does
  not cover, re-encodes only what it touches, stores the result (deletes it when nothing but
  fill is left, unless `keep_fill?`). Called with the chunk's write lock held.
  """
  @callback encode_partial(
              state(),
              ExZarr.Codec.Chunk.t(),
              ExZarr.Native.piece(),
              extent :: tuple(),
              keep_fill? :: boolean()
            ) :: :ok | {:error, term()}

  @doc """
  `:ok` when a whole chunk of a codec reading in part can be decoded or encoded at once (its
  elements and the bookkeeping of its inner chunks fit in memory); else the limit's error.
  Reading and writing parts of it cost only what they touch.
  """
  @callback check_whole(state()) :: :ok | {:error, term()}

  @doc "The shape of the inner chunks of a codec reading in part (sharding)."
  @callback inner_chunk_shape(state()) :: tuple()

  @doc """
  Reads one inner chunk by its coordinates in the chunk's inner grid, fetching only its bytes;
  `{:error, :not_found}` when it is not stored.
  """
  @callback read_inner_chunk(state(), ExZarr.Codec.Chunk.t(), tuple()) ::
              {:ok, binary() | tuple()} | {:error, term()}

  @optional_callbacks v2_id: 0,
                      config_keys: 0,
                      resolve_spec: 2,
                      encoded_size: 2,
                      from_v2: 1,
                      to_v2: 1,
                      native_decoder: 1,
                      decode_partial: 5,
                      encode_partial: 5,
                      check_whole: 1,
                      inner_chunk_shape: 1,
                      read_inner_chunk: 3

  @doc """
  A codec given as a name or a map with `name` and `configuration` (atom or string keys;
  no configuration, `nil` or `:null` for none) as a `t:spec/0` whose configuration is in
  decoded-JSON form (`ExZarr.JSON.from_term/1`). `:error` when it is neither.

      iex> ExZarr.Codec.normalize_spec(%{name: "zstd", configuration: %{level: 3}})
      {:ok, %{name: "zstd", configuration: %{"level" => 3}}}
      iex> ExZarr.Codec.normalize_spec("crc32c")
      {:ok, %{name: "crc32c", configuration: %{}}}
      iex> ExZarr.Codec.normalize_spec(%{"name" => "zstd", "configuration" => [3]})
      :error
  """
  @spec normalize_spec(term()) :: {:ok, spec()} | :error
  def normalize_spec(name) when is_binary(name), do: {:ok, %{name: name, configuration: %{}}}

  def normalize_spec(%{} = codec) when not is_struct(codec) do
    name = Map.get(codec, :name, Map.get(codec, "name"))

    case Map.get(codec, :configuration, Map.get(codec, "configuration")) do
      none when is_binary(name) and none in [nil, :null] ->
        {:ok, %{name: name, configuration: %{}}}

      %{} = config when is_binary(name) ->
        with {:ok, json} <- ExZarr.JSON.from_term(config),
             do: {:ok, %{name: name, configuration: json}}

      _ ->
        :error
    end
  end

  def normalize_spec(_other), do: :error

  @doc """
  Splits a pipeline in v3 order at its array->bytes codec: `{:ok, array_to_array, rest}`
  where `rest` starts with the one array->bytes codec and goes on with bytes->bytes codecs
  only; `:error` for any other order. `kind_of` gives the kind of an element.

      iex> ExZarr.Codec.split_order([:array_to_array, :array_to_bytes, :bytes_to_bytes], & &1)
      {:ok, [:array_to_array], [:array_to_bytes, :bytes_to_bytes]}
      iex> ExZarr.Codec.split_order([:bytes_to_bytes, :array_to_bytes], & &1)
      :error
  """
  @spec split_order([item], (item -> kind())) :: {:ok, [item], [item, ...]} | :error
        when item: term()
  def split_order(items, kind_of) do
    {array, rest} = Enum.split_while(items, &(kind_of.(&1) == :array_to_array))

    case rest do
      [serializer | bytes] ->
        if kind_of.(serializer) == :array_to_bytes and
             Enum.all?(bytes, &(kind_of.(&1) == :bytes_to_bytes)),
           do: {:ok, array, rest},
           else: :error

      [] ->
        :error
    end
  end

  @doc """
  `split_order/2` for codec specs, with the kinds from `ExZarr.Codec.Registry`. Errors:
  `{:unsupported_codec, name}`, or `{:invalid_codec_order, names}` (the specs' names).

      iex> ExZarr.Codec.split_specs([%{name: "zstd", configuration: %{}}])
      {:error, {:invalid_codec_order, ["zstd"]}}
  """
  @spec split_specs([spec()]) :: {:ok, [spec()], [spec(), ...]} | {:error, term()}
  def split_specs(specs) do
    with {:ok, kinds} <- ExZarr.Result.map_ok(specs, &kind_of_spec/1),
         {:ok, array, rest} <- split_order(Enum.zip(specs, kinds), &elem(&1, 1)) do
      {:ok, Enum.map(array, &elem(&1, 0)), Enum.map(rest, &elem(&1, 0))}
    else
      :error -> {:error, {:invalid_codec_order, Enum.map(specs, & &1.name)}}
      error -> error
    end
  end

  defp kind_of_spec(%{name: name}) do
    with {:ok, module} <- ExZarr.Codec.Registry.fetch(name), do: {:ok, module.kind()}
  end

  @doc """
  One codec spec as zarr-python writes it in `zarr.json` (also inside `sharding_indexed`):
  no `configuration` when it is empty, except for the vlen codecs, written with `{}`, and the
  `numcodecs.*` codecs, whose configuration zarr-python requires.

      iex> ExZarr.Codec.to_json(%{name: "crc32c", configuration: %{}})
      %{"name" => "crc32c"}
      iex> ExZarr.Codec.to_json(%{name: "zstd", configuration: %{"level" => 3}})
      %{"name" => "zstd", "configuration" => %{"level" => 3}}
      iex> ExZarr.Codec.to_json(%{name: "numcodecs.fletcher32", configuration: %{}})
      %{"name" => "numcodecs.fletcher32", "configuration" => %{}}
  """
  @spec to_json(spec()) :: map()
  def to_json(%{name: name}) when name in ["vlen-utf8", "vlen-bytes"],
    do: %{"name" => name, "configuration" => %{}}

  def to_json(%{name: "numcodecs." <> _ = name} = codec),
    do: %{"name" => name, "configuration" => Map.get(codec, :configuration) || %{}}

  def to_json(%{name: name} = codec) do
    case Map.get(codec, :configuration) do
      config when config in [nil, %{}] -> %{"name" => name}
      config -> %{"name" => name, "configuration" => config}
    end
  end
end
