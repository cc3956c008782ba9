defmodule ExZarr.Codecs.Crc32c do
  @moduledoc """
  CRC32C checksum (v3 `crc32c`, numcodecs `crc32c`): appends the CRC32C (Castagnoli) of the
  data as a little-endian u32; decoding verifies and strips it. numcodecs' `location: "start"`
  (checksum first) is supported too.

      {:ok, s} = ExZarr.Codecs.Crc32c.init(%{}, %{decoded_size: nil})
      {:ok, enc} = ExZarr.Codecs.Crc32c.encode("123456789", s)
      IO.iodata_to_binary(enc)
      #=> <<"123456789", 0x83, 0x92, 0x06, 0xE3>>
  """
  use ExZarr.Codecs.Numcodecs,
    name: "crc32c",
    v2_id: "crc32c",
    kind: :bytes_to_bytes,
    keys: ["location"]

  alias ExZarr.Codec.Config
  alias ExZarr.Native

  @impl true
  def init(config, _spec) do
    with {:ok, location} <- Config.one_of(config, "location", "end", ["start", "end"]),
         do: {:ok, %{location: location}}
  end

  @impl true
  def encode(data, %{location: "end"}), do: {:ok, [data, <<Native.crc32c(data)::32-little>>]}
  def encode(data, %{location: "start"}), do: {:ok, [<<Native.crc32c(data)::32-little>>, data]}

  @impl true
  def decode(data, _s) when byte_size(data) < 4,
    do: {:error, {:crc32c, "input shorter than the 4-byte checksum"}}

  def decode(data, %{location: location}) do
    n = byte_size(data) - 4

    {payload, <<stored::32-little>>} =
      case location do
        "end" -> {binary_part(data, 0, n), binary_part(data, n, 4)}
        "start" -> {binary_part(data, 4, n), binary_part(data, 0, 4)}
      end

    case Native.crc32c(payload) do
      ^stored -> {:ok, payload}
      computed -> {:error, {:checksum_mismatch, stored: stored, computed: computed}}
    end
  end

  @impl true
  def configuration(%{location: "end"}), do: %{}
  def configuration(%{location: "start"}), do: %{"location" => "start"}

  @impl true
  def encoded_size(size, _s), do: size + 4
end
