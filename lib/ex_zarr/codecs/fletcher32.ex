defmodule ExZarr.Codecs.Fletcher32 do
  @moduledoc """
  numcodecs Fletcher32 (v3 `numcodecs.fletcher32`, v2 `fletcher32`): the Fletcher-32 checksum
  of HDF5 and netCDF (sums of big-endian 16-bit words, an odd last byte as the high byte of a
  last word) appended as a little-endian u32. No configuration. See `ExZarr.Codecs.Checksum32`.

      iex> {:ok, s} = ExZarr.Codecs.Fletcher32.init(%{}, %{decoded_size: nil})
      iex> {:ok, enc} = ExZarr.Codecs.Fletcher32.encode(<<1, 2, 3, 4>>, s)
      iex> IO.iodata_to_binary(enc)
      <<1, 2, 3, 4, 0x06, 0x04, 0x08, 0x05>>
  """
  use ExZarr.Codecs.Checksum32,
    name: "numcodecs.fletcher32",
    v2_id: "fletcher32",
    checksum: :fletcher32,
    keys: []

  @impl true
  def init(_config, _spec),
    do: {:ok, %{checksum: :fletcher32, seed: 0, location: "end", config: %{}}}

  @impl true
  def configuration(_state), do: %{}
end
