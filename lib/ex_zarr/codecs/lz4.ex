defmodule ExZarr.Codecs.Lz4 do
  @moduledoc """
  numcodecs LZ4 (v3 `numcodecs.lz4`, v2 `lz4`): a u32 little-endian decoded length followed by
  one raw LZ4 block. `acceleration` (default 1) trades ratio for speed.

      iex> {:ok, s} = ExZarr.Codecs.Lz4.init(%{}, %{decoded_size: nil})
      iex> {:ok, block} = ExZarr.Codecs.Lz4.encode("hello", s)
      iex> ExZarr.Codecs.Lz4.decode(block, s)
      {:ok, "hello"}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.lz4",
    v2_id: "lz4",
    kind: :bytes_to_bytes,
    keys: ["acceleration"],
    native: :lz4

  alias ExZarr.Codec.Config
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @impl true
  def init(config, spec) do
    with {:ok, acceleration} <-
           Config.integer(config, "acceleration", 1, -0x80000000..0x7FFFFFFF) do
      {max, exact} = Numcodecs.decode_bounds(spec)
      # LZ4 treats acceleration below 1 as 1, as numcodecs does.
      {:ok, %{acceleration: acceleration, max: max, exact: exact}}
    end
  end

  @impl true
  def encode(data, s), do: Native.lz4_compress(data, max(s.acceleration, 1))

  @impl true
  def configuration(s), do: %{"acceleration" => s.acceleration}
end
