defmodule ExZarr.Codecs.Shuffle do
  @moduledoc """
  numcodecs Shuffle (v3 `numcodecs.shuffle`, v2 filter `shuffle`), bytes->bytes: groups the
  k-th byte of every `elementsize`-byte element together (default: the chunk's element size,
  else 4, as zarr-python and numcodecs), which helps the compressor after it.

      iex> {:ok, s} = ExZarr.Codecs.Shuffle.init(%{"elementsize" => 2}, %{decoded_size: nil})
      iex> ExZarr.Codecs.Shuffle.encode(<<1, 2, 3, 4>>, s)
      {:ok, <<1, 3, 2, 4>>}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.shuffle",
    v2_id: "shuffle",
    kind: :bytes_to_bytes,
    keys: ["elementsize"]

  alias ExZarr.Codec.Config
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @impl true
  def init(config, spec) do
    default = Numcodecs.spec_itemsize(spec) || 4

    with {:ok, size} <- Config.integer(config, "elementsize", default, 1..0x7FFFFFFF),
         do: {:ok, %{elementsize: size}}
  end

  @impl true
  def encode(data, s), do: Native.shuffle(IO.iodata_to_binary(data), s.elementsize)

  @impl true
  def decode(data, s), do: Native.unshuffle(data, s.elementsize)

  @impl true
  def configuration(s), do: %{"elementsize" => s.elementsize}

  @impl true
  def encoded_size(size, _s), do: size
end
