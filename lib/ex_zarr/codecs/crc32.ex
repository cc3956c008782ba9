defmodule ExZarr.Codecs.Crc32 do
  @moduledoc """
  numcodecs CRC32 (v3 `numcodecs.crc32`, v2 `crc32`): zlib's CRC-32 of the data as a
  little-endian u32, stored before the data (`location` `"start"`, numcodecs' default) or after
  it (`"end"`). See `ExZarr.Codecs.Checksum32`.

      iex> {:ok, s} = ExZarr.Codecs.Crc32.init(%{}, %{decoded_size: nil})
      iex> {:ok, enc} = ExZarr.Codecs.Crc32.encode("123456789", s)
      iex> IO.iodata_to_binary(enc)
      <<0x26, 0x39, 0xF4, 0xCB, "123456789">>
  """
  use ExZarr.Codecs.Checksum32,
    name: "numcodecs.crc32",
    v2_id: "crc32",
    checksum: :crc32,
    location: "start"
end
