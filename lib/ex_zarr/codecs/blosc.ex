defmodule ExZarr.Codecs.Blosc do
  @moduledoc """
  Blosc 1.x (v3 `blosc`, numcodecs `blosc`), what zarr-python and numcodecs use.

  Configuration (v3): `cname` (`blosclz`, `lz4`, `lz4hc`, `snappy`, `zlib`, `zstd`; default
  `zstd`), `clevel` 0..9 (default 5), `shuffle` (`noshuffle`, `shuffle`, `bitshuffle`; when
  absent: `bitshuffle` for one-byte elements, else `shuffle`), `typesize` (default: the
  element size of the chunk's data type, else 1; at most 2^31 - 1, c-blosc's limit) and
  `blocksize` (0 = automatic, at most 2^31 - 1).
  numcodecs' integer shuffle (0, 1, 2, or -1 for automatic) maps onto it.

  Decoding validates the 16-byte header against the input before Blosc runs, and never
  produces more than the chunk's size.

      iex> config = %{"cname" => "lz4", "typesize" => 8}
      iex> {:ok, s} = ExZarr.Codecs.Blosc.init(config, %{decoded_size: 16})
      iex> {:ok, enc} = ExZarr.Codecs.Blosc.encode(<<1::64-little, 2::64-little>>, s)
      iex> ExZarr.Codecs.Blosc.decode(enc, s)
      {:ok, <<1::64-little, 2::64-little>>}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "blosc",
    v2_id: "blosc",
    kind: :bytes_to_bytes,
    keys: ["cname", "clevel", "shuffle", "typesize", "blocksize"],
    native: :blosc

  alias ExZarr.Codec.Config
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @cnames ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"]
  # c-blosc keeps typesize and blocksize in an int32: larger values crash it (SIGFPE).
  @int32 1..0x7FFFFFFF
  @shuffles %{"noshuffle" => 0, "shuffle" => 1, "bitshuffle" => 2}
  @shuffle_names Map.new(@shuffles, fn {k, v} -> {v, k} end)

  @impl true
  def init(config, spec) do
    with {:ok, cname} <- Config.one_of(config, "cname", "zstd", @cnames),
         {:ok, clevel} <- Config.integer(config, "clevel", 5, 0..9),
         {:ok, typesize} <-
           Config.integer(config, "typesize", Numcodecs.spec_itemsize(spec) || 1, @int32),
         {:ok, shuffle} <- shuffle_option(config, typesize),
         {:ok, blocksize} <- Config.integer(config, "blocksize", 0, 0..@int32.last) do
      {max, exact} = Numcodecs.decode_bounds(spec)

      {:ok,
       %{
         cname: cname,
         clevel: clevel,
         shuffle: shuffle,
         typesize: typesize,
         blocksize: blocksize,
         max: max,
         exact: exact
       }}
    end
  end

  defp shuffle_option(config, typesize) do
    case Config.get(config, "shuffle") do
      nil -> {:ok, if(typesize == 1, do: "bitshuffle", else: "shuffle")}
      name when is_map_key(@shuffles, name) -> {:ok, name}
      other -> Config.invalid("shuffle", other, "one of #{inspect(Map.keys(@shuffles))}")
    end
  end

  @impl true
  def encode(data, s) do
    Native.blosc_compress(
      data,
      s.cname,
      s.clevel,
      Map.fetch!(@shuffles, s.shuffle),
      s.typesize,
      s.blocksize
    )
  end

  @impl true
  def configuration(s) do
    %{
      "cname" => s.cname,
      "clevel" => s.clevel,
      "shuffle" => s.shuffle,
      "typesize" => s.typesize,
      "blocksize" => s.blocksize
    }
  end

  @impl true
  def from_v2(config) do
    v3 =
      Map.merge(
        %{"cname" => "lz4", "clevel" => 5, "blocksize" => 0},
        Map.take(config, ["cname", "clevel", "typesize", "blocksize"])
      )

    case Config.get(config, "shuffle", 1) do
      -1 -> {:ok, v3}
      n when is_map_key(@shuffle_names, n) -> {:ok, Map.put(v3, "shuffle", @shuffle_names[n])}
      other -> Config.invalid("shuffle", other, "-1 (automatic), 0, 1 or 2")
    end
  end

  @impl true
  def to_v2(config) do
    shuffle = Map.get(@shuffles, Config.get(config, "shuffle"), -1)

    {:ok,
     config
     |> Map.take(["cname", "clevel", "blocksize"])
     |> Map.merge(%{"id" => "blosc", "shuffle" => shuffle})}
  end
end
