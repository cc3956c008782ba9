defmodule ExZarr.BadInput.CorruptChunksTest do
  @moduledoc """
  Truncated and corrupt chunks (compressed garbage, truncated streams, streams that decode to
  the wrong size or far too much, raw chunks of the wrong size, checksum mismatches): reading
  them, and partial writes that must read them first, give `{:error, _}`, the other chunks
  still read, and the stored files stay byte-identical.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{Corruption, Interop, Snapshot}

  @arrays %{
    v2_gzip: [zarr_format: 2, compressor: %{id: "gzip", level: 5}],
    v2_zlib: [zarr_format: 2, compressor: %{id: "zlib", level: 1}],
    v2_raw: [zarr_format: 2, compressor: nil],
    v3_gzip: [zarr_format: 3, compressor: %{id: "gzip", level: 5}],
    v3_raw: [zarr_format: 3, compressor: nil],
    v3_crc32c: [
      zarr_format: 3,
      codecs: [
        %{name: "bytes", configuration: %{"endian" => "little"}},
        %{name: "crc32c", configuration: %{}}
      ]
    ]
  }

  # {array, description, corruption}: see corrupt/2
  @corruptions [
    {:v2_gzip, "gzip garbage", :garbage},
    {:v2_gzip, "truncated gzip", :half},
    {:v2_gzip, "gzip of too few bytes", :gzip_short},
    {:v3_gzip, "gzip of far too many bytes", :gzip_bomb},
    {:v3_gzip, "gzip with a flipped byte", :flip_middle},
    {:v3_gzip, "empty file", :empty},
    {:v2_zlib, "zlib garbage", :zlib_garbage},
    {:v2_zlib, "truncated zlib", :drop_tail},
    {:v2_raw, "raw chunk too short", :half},
    {:v2_raw, "raw chunk one byte too long", :one_more},
    {:v3_raw, "raw chunk four bytes too long", :four_more},
    {:v3_raw, "empty raw chunk", :empty},
    {:v3_crc32c, "crc32c mismatch", :flip_start},
    {:v3_crc32c, "crc32c chunk shorter than its checksum", :two_bytes}
  ]

  defp corrupt(:garbage, _), do: "this is not a gzip stream at all, just text"
  defp corrupt(:half, c), do: binary_part(c, 0, div(byte_size(c), 2))
  defp corrupt(:gzip_short, _), do: :zlib.gzip(<<1, 2, 3>>)
  defp corrupt(:gzip_bomb, _), do: :zlib.gzip(:binary.copy(<<1>>, 4_000_000))
  defp corrupt(:flip_middle, c), do: flip(c, div(byte_size(c), 2))
  defp corrupt(:flip_start, c), do: flip(c, 3)
  defp corrupt(:empty, _), do: ""
  defp corrupt(:zlib_garbage, _), do: <<0x78, 0x9C, 0xFF, 0xFF, 0xFF, 0xFF, 0, 1, 2>>
  defp corrupt(:drop_tail, c), do: binary_part(c, 0, byte_size(c) - 6)
  defp corrupt(:one_more, c), do: c <> <<0>>
  defp corrupt(:four_more, c), do: c <> <<0, 0, 0, 0>>
  defp corrupt(:two_bytes, _), do: <<1, 2>>

  defp flip(bin, at) do
    <<pre::binary-size(at), b, rest::binary>> = bin
    <<pre::binary, Bitwise.bxor(b, 0xFF), rest::binary>>
  end

  setup do
    dir = Interop.tmp_dir!("corrupt-chunks")
    on_exit(fn -> File.rm_rf!(dir) end)
    %{dir: dir}
  end

  for {kind, label, corruption} <- @corruptions do
    @tag kind: kind, corruption: corruption
    test "#{label} (#{kind}): errors, other chunks read, files unchanged", ctx do
      opts = Map.fetch!(@arrays, ctx.kind)
      Corruption.assert_rejected(ctx.dir, opts, &corrupt(ctx.corruption, &1))
    end
  end

  # Reading may treat the directory as a missing chunk (zarr-python's LocalStore does);
  # writing over it must fail without touching it.
  test "writing to a chunk key that is a directory: errors, nothing changes", %{dir: dir} do
    path = Path.join(dir, "a.zarr")
    opts = [shape: {8, 8}, chunks: {4, 4}, dtype: :int32, path: path, fill_value: 0]
    assert {:ok, a} = ExZarr.create(opts)
    File.mkdir_p!(Path.join(path, "c/0/0"))
    before = Snapshot.take(dir)

    assert {:error, _} = ExZarr.Array.set_slice(a, <<1::32>>, start: {0, 0}, stop: {1, 1})
    assert {:error, _} = ExZarr.Array.write_chunk(a, {0, 0}, :binary.copy(<<1>>, 64))
    assert Snapshot.diff(before, Snapshot.take(dir)) == []
  end

  test "a zarr.json that is a directory: open errors", %{dir: dir} do
    File.mkdir_p!(Path.join(dir, "a.zarr/zarr.json"))
    assert {:error, _} = ExZarr.open(path: Path.join(dir, "a.zarr"))
  end
end
