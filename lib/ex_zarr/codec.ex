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
  @callback kind() :: kind()
  @callback init(configuration :: map(), chunk_spec()) :: {:ok, state()} | {:error, term()}
  @callback encode(data :: iodata(), state()) :: {:ok, iodata()} | {:error, term()}
  @callback decode(data :: binary(), state()) :: {:ok, binary()} | {:error, term()}

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

  @optional_callbacks v2_id: 0,
                      config_keys: 0,
                      resolve_spec: 2,
                      encoded_size: 2,
                      from_v2: 1,
                      to_v2: 1
end
