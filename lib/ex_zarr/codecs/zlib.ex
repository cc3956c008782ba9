defmodule ExZarr.Codecs.Zlib do
  @moduledoc """
  zlib (v3 `numcodecs.zlib`, v2 `zlib`): `level` -1..9 (default 1; -1 is zlib's default, 6).
  One RFC 1950 stream, encoded and decoded with libdeflate.

      iex> {:ok, s} = ExZarr.Codecs.Zlib.init(%{"level" => 5}, %{decoded_size: nil})
      iex> {:ok, z} = ExZarr.Codecs.Zlib.encode("hello", s)
      iex> ExZarr.Codecs.Zlib.decode(z, s)
      {:ok, "hello"}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.zlib",
    v2_id: "zlib",
    kind: :bytes_to_bytes,
    keys: ["level"],
    native: :zlib,
    level: {1, -1..9}

  alias ExZarr.Native

  @impl true
  def encode(data, %{level: -1}), do: Native.zlib_compress(data, 6)
  def encode(data, s), do: Native.zlib_compress(data, s.level)
end
