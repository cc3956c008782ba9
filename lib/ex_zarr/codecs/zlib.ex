defmodule ExZarr.Codecs.Zlib do
  @moduledoc """
  zlib (v3 `numcodecs.zlib`, v2 `zlib`): `level` -1..9 (default 1; -1 is zlib's default, 6).
  One RFC 1950 stream, encoded and decoded with libdeflate.

      {:ok, s} = ExZarr.Codecs.Zlib.init(%{"level" => 5}, %{decoded_size: nil})
      {:ok, z} = ExZarr.Codecs.Zlib.encode("hello", s)
      {:ok, "hello"} = ExZarr.Codecs.Zlib.decode(z, s)
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.zlib",
    v2_id: "zlib",
    kind: :bytes_to_bytes,
    keys: ["level"]

  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Native

  @impl true
  def init(config, spec), do: Numcodecs.level_state(config, spec, 1, -1..9)

  @impl true
  def encode(data, %{level: -1}), do: Native.zlib_compress(data, 6)
  def encode(data, s), do: Native.zlib_compress(data, s.level)

  @impl true
  def decode(data, s), do: Native.zlib_decompress(data, s.max, s.exact)

  # Decoded by the NIF straight into an output buffer when the decoded size is known.
  @impl true
  def native_decoder(%{exact: true}), do: :zlib
  def native_decoder(_s), do: nil

  @impl true
  def configuration(s), do: %{"level" => s.level}
end
