defmodule ExZarr.Codecs.Crc32c do
  @moduledoc """
  CRC32C checksum (v3 `crc32c`, numcodecs `crc32c`): appends the CRC32C (Castagnoli) of the
  data as a little-endian u32; decoding verifies and strips it. numcodecs' `location: "start"`
  (checksum first) is supported too. See `ExZarr.Codecs.Checksum32`.

      iex> {:ok, s} = ExZarr.Codecs.Crc32c.init(%{}, %{decoded_size: nil})
      iex> {:ok, enc} = ExZarr.Codecs.Crc32c.encode("123456789", s)
      iex> IO.iodata_to_binary(enc)
      <<"123456789", 0x83, 0x92, 0x06, 0xE3>>
  """
  use ExZarr.Codecs.Checksum32,
    name: "crc32c",
    v2_id: "crc32c",
    checksum: :crc32c,
    location: "end"
end
