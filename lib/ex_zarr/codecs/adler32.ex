defmodule ExZarr.Codecs.Adler32 do
  @moduledoc """
  numcodecs Adler32 (v3 `numcodecs.adler32`, v2 `adler32`): zlib's Adler-32 of the data as a
  little-endian u32, stored before the data (`location` `"start"`, numcodecs' default) or after
  it (`"end"`). See `ExZarr.Codecs.Checksum32`.

      iex> {:ok, s} = ExZarr.Codecs.Adler32.init(%{"location" => "end"}, %{decoded_size: nil})
      iex> {:ok, enc} = ExZarr.Codecs.Adler32.encode("Wikipedia", s)
      iex> IO.iodata_to_binary(enc)
      <<"Wikipedia", 0x98, 0x03, 0xE6, 0x11>>
  """
  use ExZarr.Codecs.Checksum32,
    name: "numcodecs.adler32",
    v2_id: "adler32",
    checksum: :adler32,
    location: "start"
end
