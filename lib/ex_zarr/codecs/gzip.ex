defmodule ExZarr.Codecs.Gzip do
  @moduledoc """
  gzip (v3 `gzip`, numcodecs `gzip`): `level` 0..9 (default 1, as numcodecs). Encodes one
  RFC 1952 member with libdeflate; decodes concatenated members straight into a binary of the
  chunk's size.

      iex> {:ok, s} = ExZarr.Codecs.Gzip.init(%{"level" => 5}, %{decoded_size: 5})
      iex> {:ok, gz} = ExZarr.Codecs.Gzip.encode("hello", s)
      iex> ExZarr.Codecs.Gzip.decode(gz, s)
      {:ok, "hello"}
  """
  use ExZarr.Codecs.Numcodecs,
    name: "gzip",
    v2_id: "gzip",
    kind: :bytes_to_bytes,
    keys: ["level"],
    v3_defaults: %{"level" => 1},
    native: :gzip,
    level: {1, 0..9}

  alias ExZarr.Native

  @impl true
  def encode(data, s), do: Native.gzip_compress(data, s.level)
end
