defmodule ExZarr.Codecs.Checksum32 do
  @moduledoc """
  The numcodecs 32-bit checksum codecs (bytes->bytes): the data is stored with a little-endian
  u32 checksum of it before or after it; decoding verifies and strips the checksum, and a
  mismatch, or an input shorter than the checksum, is an error.

  | module | v3 name / v2 id | checksum | where | configuration |
  |---|---|---|---|---|
  | `ExZarr.Codecs.Crc32c` | `crc32c` / `crc32c` | CRC32C | end | `location` |
  | `ExZarr.Codecs.Crc32` | `numcodecs.crc32` / `crc32` | zlib CRC-32 | start | `location` |
  | `ExZarr.Codecs.Adler32` | `numcodecs.adler32` / `adler32` | zlib Adler-32 | start | `location` |
  | `ExZarr.Codecs.Fletcher32` | `numcodecs.fletcher32` / `fletcher32` | HDF5 Fletcher-32 | end | none |
  | `ExZarr.Codecs.JenkinsLookup3` | `numcodecs.jenkins_lookup3` / `jenkins_lookup3` | lookup3 | end | `initval`, `prefix` |

  `location` is `"start"` or `"end"` (numcodecs' default for each codec when absent).
  Configuration keys a codec does not have are refused by `ExZarr.Codec.Registry` (see
  `ExZarr.Codec.Config`). The `numcodecs.*` codecs store the options they were given, as
  zarr-python does (and numcodecs' full configuration in Zarr v2).

  A codec module declares itself with

      use ExZarr.Codecs.Checksum32,
        name: "numcodecs.crc32", v2_id: "crc32", checksum: :crc32, location: "start"

  which makes a codec configured by `location` alone (default `"start"` here); a codec with
  other options gives its configuration keys as `keys:` instead of `location:`, and implements
  `init/2` and `configuration/1`.
  """

  alias ExZarr.Codec.Config
  alias ExZarr.Native

  @typedoc "Where the checksum is stored."
  @type location :: String.t()

  @typedoc "A configured checksum codec: which checksum, its seed and where it is stored."
  @type state :: %{
          required(:checksum) => Native.checksum(),
          required(:seed) => non_neg_integer(),
          required(:location) => location(),
          optional(atom()) => term()
        }

  defmacro __using__(opts) do
    quote bind_quoted: [opts: opts] do
      location = Keyword.get(opts, :location)

      use ExZarr.Codecs.Numcodecs,
        name: Keyword.fetch!(opts, :name),
        v2_id: Keyword.fetch!(opts, :v2_id),
        kind: :bytes_to_bytes,
        keys: Keyword.get(opts, :keys, ["location"])

      alias ExZarr.Codecs.Checksum32

      @impl true
      def encode(data, state), do: Checksum32.encode(data, state)

      @impl true
      def decode(data, state), do: Checksum32.decode(data, state)

      @impl true
      def encoded_size(size, _state), do: size + 4

      if location do
        @checksum Keyword.fetch!(opts, :checksum)
        @default_location location

        @impl true
        def init(config, _spec),
          do: Checksum32.location_state(config, @checksum, @default_location)

        @impl true
        def configuration(state),
          do: Checksum32.location_config(name(), state, @default_location)
      end
    end
  end

  @doc """
  The state of a codec whose only option is `location`: checks the location (`default` when
  absent), and keeps the configuration as given.
  """
  @spec location_state(map(), Native.checksum(), location()) :: {:ok, state()} | {:error, term()}
  def location_state(config, checksum, default) do
    with {:ok, location} <- Config.one_of(config, "location", default, ["start", "end"]),
         do: {:ok, %{checksum: checksum, seed: 0, location: location, config: config}}
  end

  @doc """
  The stored configuration of a `location` codec: a `numcodecs.*` codec stores what it was
  given, as zarr-python does; the core `crc32c` only a location that is not the default.
  """
  @spec location_config(String.t(), state(), location()) :: map()
  def location_config("numcodecs." <> _, %{config: config}, _default), do: config
  def location_config(_name, %{location: default}, default), do: %{}
  def location_config(_name, %{location: location}, _default), do: %{"location" => location}

  @doc """
  The data with its checksum at the state's location.

      iex> state = %{checksum: :crc32, seed: 0, location: "start"}
      iex> ExZarr.Codecs.Checksum32.encode("123456789", state) |> elem(1) |> IO.iodata_to_binary()
      <<0x26, 0x39, 0xF4, 0xCB, "123456789">>
  """
  @spec encode(iodata(), state()) :: {:ok, iodata()}
  def encode(data, %{location: location} = s) do
    sum = <<Native.checksum(s.checksum, data, s.seed)::32-little>>
    if location == "end", do: {:ok, [data, sum]}, else: {:ok, [sum, data]}
  end

  @doc """
  The data without its checksum, after checking it:
  `{:error, {:checksum_mismatch, stored: s, computed: c}}` when it does not match.
  """
  @spec decode(binary(), state()) :: {:ok, binary()} | {:error, term()}
  def decode(data, %{checksum: checksum}) when byte_size(data) < 4,
    do: {:error, {checksum, "input shorter than the 4-byte checksum"}}

  def decode(data, %{location: location} = s) do
    n = byte_size(data) - 4

    {payload, stored} =
      case location do
        "end" -> {binary_part(data, 0, n), binary_part(data, n, 4)}
        "start" -> {binary_part(data, 4, n), binary_part(data, 0, 4)}
      end

    <<stored::32-little>> = stored

    case Native.checksum(s.checksum, payload, s.seed) do
      ^stored -> {:ok, payload}
      computed -> {:error, {:checksum_mismatch, stored: stored, computed: computed}}
    end
  end
end
