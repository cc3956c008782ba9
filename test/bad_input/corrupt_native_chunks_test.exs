defmodule ExZarr.BadInput.CorruptNativeChunksTest do
  @moduledoc """
  Hostile chunks for the native codecs (zstd, lz4, blosc, bz2, lzma): garbage after a valid
  magic, valid streams of the wrong decoded size, length prefixes and blosc headers that claim
  more than the buffer holds or absurd sizes, zero block and type sizes. The NIF must answer
  `{:error, _}` without reading past a buffer or allocating what a header claims; the files
  stay unchanged. Tagged `:native_codecs`.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{Corruption, Interop}

  @moduletag :native_codecs

  unless Interop.native_codecs?() do
    @moduletag skip: "ExZarr does not support zstd, blosc and lz4 yet"
  end

  # Streams made by numcodecs 0.16.6 (hex): valid, but of the wrong decoded size for the
  # 64-byte chunks of the test array.
  @zstd_1000 "28b52ffd60e8024d00001000000100e32b8005"
  @zstd_32 "28b52ffd2020010100000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
  @lz4_1000 "e80300001f000100ffffffd2500000000000"
  @blosc_1000 "02012101e8030000e803000026000000140000000e0000001f000100ffffffd2500000000000"
  @bz2_1000 "425a683131415926535901e8d060000001c001c00000800008200020aa6d4198ba83c5dc914e1424007a341800"
  @lzma_1000 "fd377a585a000004e6d6b4460200210116000000742fe5a3e003e7000b5d00006ffdffffa3b75a0d5e0000004f258aec2be22a37000127e807000000f4558f5cb1c467fb020000000004595a"

  @compressors %{
    zstd: %{id: "zstd", level: 1},
    lz4: %{id: "lz4", acceleration: 1},
    blosc: %{id: "blosc", cname: "lz4", clevel: 5, shuffle: 1},
    bz2: %{id: "bz2", level: 1},
    lzma: %{id: "lzma"}
  }

  @cases [
    {:zstd, "zstd magic then garbage", :zstd_garbage},
    {:zstd, "zstd frame of 1000 bytes", {:hex, @zstd_1000}},
    {:zstd, "zstd frame of 32 bytes", {:hex, @zstd_32}},
    {:zstd, "truncated zstd frame", :half},
    {:zstd, "empty zstd chunk", :empty},
    {:lz4, "lz4 prefix 64 then garbage", :lz4_garbage},
    {:lz4, "lz4 prefix 4 GiB", :lz4_huge},
    {:lz4, "lz4 block of 1000 bytes", {:hex, @lz4_1000}},
    {:lz4, "truncated lz4 block", :half},
    {:lz4, "lz4 prefix only", :prefix_only},
    {:blosc, "blosc frame of 1000 bytes", {:hex, @blosc_1000}},
    {:blosc, "truncated blosc frame", :half},
    {:blosc, "blosc header only", :header_only},
    {:blosc, "blosc memcpy header claiming more than present", :blosc_short_memcpy},
    {:blosc, "blosc header claiming 2 GiB", :blosc_huge},
    {:blosc, "blosc blocksize 0", :blosc_zero_blocksize},
    {:blosc, "blosc typesize 0", :blosc_zero_typesize},
    {:blosc, "blosc cbytes beyond the buffer", :blosc_cbytes_beyond},
    {:blosc, "blosc unknown version", :blosc_version},
    {:blosc, "blosc lz4 block of garbage", {:blosc_garbage, 1}},
    {:blosc, "blosc zstd block of garbage", {:blosc_garbage, 4}},
    {:blosc, "blosc block start beyond the buffer", :blosc_bstart_beyond},
    {:bz2, "bz2 magic then garbage", :bz2_garbage},
    {:bz2, "bz2 stream of 1000 bytes", {:hex, @bz2_1000}},
    {:lzma, "xz magic then garbage", :xz_garbage},
    {:lzma, "xz stream of 1000 bytes", {:hex, @lzma_1000}}
  ]

  defp corrupt({:hex, hex}, _), do: Base.decode16!(hex, case: :lower)
  defp corrupt(:half, c), do: binary_part(c, 0, div(byte_size(c), 2))
  defp corrupt(:empty, _), do: ""
  defp corrupt(:zstd_garbage, _), do: <<0x28, 0xB5, 0x2F, 0xFD>> <> :binary.copy(<<0xA5>>, 40)
  defp corrupt(:lz4_garbage, _), do: <<64::32-little>> <> :binary.copy(<<0xF0>>, 20)
  defp corrupt(:lz4_huge, _), do: <<0xFFFFFFFF::32-little>> <> :binary.copy(<<0x1F>>, 20)
  defp corrupt(:prefix_only, _), do: <<64::32-little>>
  defp corrupt(:header_only, c), do: binary_part(c, 0, 16)
  defp corrupt(:bz2_garbage, _), do: "BZh9" <> :binary.copy(<<0x5A>>, 40)
  defp corrupt(:xz_garbage, _), do: <<0xFD, "7zXZ", 0>> <> :binary.copy(<<0x11>>, 40)

  # blosc header: version, versionlz, flags, typesize, nbytes, blocksize, cbytes (flags 0x13:
  # shuffle + memcpyed + dont_split; 0x21: shuffle, lz4)
  defp corrupt(:blosc_short_memcpy, _), do: blosc(0x13, 4, 64, 64, 80) <> <<1, 2, 3, 4>>
  defp corrupt(:blosc_huge, _), do: blosc(0x13, 4, 0x7FFFFFFF, 64, 80) <> :binary.copy(<<7>>, 64)
  defp corrupt(:blosc_zero_blocksize, _), do: blosc(0x21, 4, 64, 0, 40) <> :binary.copy(<<3>>, 24)
  defp corrupt(:blosc_zero_typesize, _), do: blosc(0x21, 0, 64, 64, 40) <> :binary.copy(<<3>>, 24)

  defp corrupt(:blosc_cbytes_beyond, _),
    do: blosc(0x13, 4, 64, 64, 4000) <> :binary.copy(<<9>>, 64)

  defp corrupt(:blosc_version, c) do
    <<_, rest::binary>> = c
    <<99, rest::binary>>
  end

  # A compressed (not memcpyed) frame of one unsplit block: block start 20, then the
  # block's compressed size and bytes that no compressor of that id can decode.
  defp corrupt({:blosc_garbage, compressor}, _) do
    flags = 0x10 + 0x01 + Bitwise.bsl(compressor, 5)
    blosc(flags, 4, 64, 64, 44) <> <<20::32-little, 20::32-little>> <> :binary.copy(<<0xEE>>, 20)
  end

  defp corrupt(:blosc_bstart_beyond, _) do
    blosc(0x31, 4, 64, 64, 44) <> <<5000::32-little, 20::32-little>> <> :binary.copy(<<0>>, 20)
  end

  defp blosc(flags, typesize, nbytes, blocksize, cbytes) do
    <<2, 1, flags, typesize, nbytes::32-little, blocksize::32-little, cbytes::32-little>>
  end

  setup do
    dir = Interop.tmp_dir!("corrupt-native")
    on_exit(fn -> File.rm_rf!(dir) end)
    %{dir: dir}
  end

  for {codec, label, corruption} <- @cases, fmt <- [2, 3] do
    @tag codec: codec, corruption: corruption, fmt: fmt
    test "v#{fmt} #{label}: errors, other chunks read, files unchanged", ctx do
      opts = [zarr_format: ctx.fmt, compressor: Map.fetch!(@compressors, ctx.codec)]
      Corruption.assert_rejected(ctx.dir, opts, &corrupt(ctx.corruption, &1))
    end
  end
end
