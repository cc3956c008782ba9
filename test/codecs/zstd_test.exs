defmodule ExZarr.Codecs.ZstdTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.Zstd

  alias ExZarr.Test.Codecs

  defp codec(v2_config, decoded_size), do: Codecs.from_v2(v2_config, decoded_size)

  test "zstd decodes frames without a content size, bounded by the chunk size" do
    {zstd, known} = codec(%{"id" => "zstd"}, 6000)
    {_, unknown} = codec(%{"id" => "zstd"}, nil)
    data = :crypto.strong_rand_bytes(5000)
    frame = Codecs.zstd_stream_frame([{:raw, data}, {:rle, ?z, 1000}])
    expected = data <> :binary.copy("z", 1000)
    assert zstd.decode(frame, known) == {:ok, expected}
    assert zstd.decode(frame, unknown) == {:ok, expected}
    # Two frames back to back.
    {_, two} = codec(%{"id" => "zstd"}, 12_000)
    assert zstd.decode(frame <> frame, two) == {:ok, expected <> expected}
    # RLE blocks expand 4 bytes into 128 KiB each: stopped at the chunk size.
    bomb = Codecs.zstd_stream_frame(List.duplicate({:rle, 0, 131_072}, 100))
    assert {:error, {:zstd, msg}} = zstd.decode(bomb, known)
    assert msg =~ "exceeds"
    assert {:error, _} = zstd.decode(binary_part(frame, 0, byte_size(frame) - 1), unknown)
  end

  test "a chunk of 8 MiB or more is compressed by zstd's threads into a frame numcodecs reads" do
    # 20 MiB of float64 (five jobs) with some structure, so that zstd's jobs have work to do
    data =
      for i <- 0..(20 * 131_072 - 1),
          into: <<>>,
          do: <<:math.sin(i / 300) * 1000::float-64-little>>

    {zstd, s} = codec(%{"id" => "zstd", "level" => 3}, byte_size(data))
    assert {:ok, frame} = zstd.encode(data, s)
    # the frame is the same for any number of workers (so on any machine), smaller than the data
    assert {:ok, ^frame} = ExZarr.Native.zstd_compress(data, 3, false, 1)
    assert {:ok, ^frame} = ExZarr.Native.zstd_compress(data, 3, false, 3)
    assert byte_size(frame) < byte_size(data)
    assert zstd.decode(frame, s) == {:ok, data}

    dir = ExZarr.Test.Tmp.path("exzarr_zstd_mt_")
    File.mkdir_p!(dir)
    on_exit(fn -> File.rm_rf!(dir) end)
    File.write!(Path.join(dir, "frame"), frame)
    File.write!(Path.join(dir, "data"), data)

    assert ExZarr.Test.Python.run!(
             """
             import sys, numcodecs
             d = sys.argv[1]
             decoded = numcodecs.Zstd().decode(open(d + "/frame", "rb").read())
             print(bytes(decoded) == open(d + "/data", "rb").read())
             """,
             [dir]
           ) =~ "True"
  end

  test "levels up to 4 cut 128 KiB blocks; slower levels may split them" do
    # 2 MiB whose statistics change every 48 KiB (smooth float64, then small int32): zstd
    # 1.5.7's block splitter cuts blocks there (at level 3 into 94), which costs time at the
    # fast levels (codecs.c)
    data =
      for part <- 0..41, into: <<>> do
        if rem(part, 2) == 0,
          do: for(i <- 0..6143, into: <<>>, do: <<:math.sin(i / 50)::float-64-little>>),
          else: for(i <- 0..12_287, into: <<>>, do: <<rem(i * 7, 100)::32-little>>)
      end

    blocks = fn level ->
      {:ok, frame} = ExZarr.Native.zstd_compress(data, level, false)
      assert ExZarr.Native.zstd_decompress(frame, byte_size(data), true) == {:ok, data}
      Codecs.zstd_block_count(frame)
    end

    full = div(byte_size(data) + 131_071, 131_072)
    for level <- [-1, 1, 2, 3, 4], do: assert(blocks.(level) == full)
    assert blocks.(6) > full
  end
end
