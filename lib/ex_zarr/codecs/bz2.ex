defmodule ExZarr.Codecs.Bz2 do
  @moduledoc """
  bzip2 (v3 `numcodecs.bz2`, v2 `bz2`): `level` 1..9 (default 1), the block size in 100 kB.
  Decoding accepts concatenated streams, as Python's `bz2.decompress`.

      iex> {:ok, s} = ExZarr.Codecs.Bz2.init(%{"level" => 9}, %{decoded_size: 5})
      iex> {:ok, enc} = ExZarr.Codecs.Bz2.encode("hello", s)
      iex> ExZarr.Codecs.Bz2.decode(enc, s)
      {:ok, "hello"}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "numcodecs.bz2",
    v2_id: "bz2",
    kind: :bytes_to_bytes,
    keys: ["level"],
    native: :bz2,
    level: {1, 1..9}

  alias ExZarr.Native

  @impl true
  def encode(data, s), do: Native.bz2_compress(data, s.level)
end
