Code.require_file("boxes.exs", __DIR__)

defmodule ExZarr.Sharding.ReadTest do
  # Sharded reads decode each shard's inner chunks with one native batch call
  # (ExZarr.Native.outbuf_put_batch/6, or ExZarr.Native.decode_into/7 for a whole shard) when
  # the inner pipeline is little-endian bytes + at most one compressor, else chunk by chunk
  # through the native output buffer. Both must read what an unsharded array holds, and report
  # corrupt inner chunks.
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Storage}
  alias ExZarr.Test.Boxes

  @bytes_le %{"name" => "bytes", "configuration" => %{"endian" => "little"}}

  @pipelines [
    {"bytes", [@bytes_le]},
    {"blosc",
     [@bytes_le, %{"name" => "blosc", "configuration" => %{"cname" => "lz4", "typesize" => 2}}]},
    {"zstd", [@bytes_le, %{"name" => "zstd", "configuration" => %{"level" => 1}}]},
    {"gzip", [@bytes_le, %{"name" => "gzip", "configuration" => %{"level" => 1}}]},
    {"numcodecs.lz4", [@bytes_le, %{"name" => "numcodecs.lz4"}]},
    {"numcodecs.zlib", [@bytes_le, %{"name" => "numcodecs.zlib"}]},
    {"numcodecs.bz2", [@bytes_le, %{"name" => "numcodecs.bz2"}]},
    {"big-endian bytes",
     [%{"name" => "bytes", "configuration" => %{"endian" => "big"}}, %{"name" => "zstd"}]},
    {"transpose (chunk by chunk)",
     [%{"name" => "transpose", "configuration" => %{"order" => [2, 1, 0]}}, @bytes_le]},
    {"zstd + crc32c (chunk by chunk)", [@bytes_le, %{"name" => "zstd"}, %{"name" => "crc32c"}]}
  ]

  defp array(shape, inner, shards, codecs) do
    config = %{"chunk_shape" => Tuple.to_list(inner), "codecs" => codecs}

    {:ok, a} =
      ExZarr.create(
        storage: :memory,
        shape: shape,
        chunks: shards,
        dtype: :uint16,
        fill_value: 7,
        codecs: [%{name: "sharding_indexed", configuration: config}]
      )

    a
  end

  # Elements 7 (the fill value) in whole runs, so that some inner chunks are not stored.
  defp data(n),
    do:
      for(
        i <- 0..(n - 1),
        into: <<>>,
        do: <<if(rem(div(i, 300), 3) == 0, do: 7, else: i)::16-little>>
      )

  for {name, codecs} <- @pipelines do
    test "inner pipeline #{name}: reads agree with an unsharded array" do
      :rand.seed(:exsss, {4, 5, 6})
      shape = {30, 21, 17}
      a = array(shape, {4, 5, 3}, {12, 10, 9}, unquote(Macro.escape(codecs)))

      {:ok, ref} =
        ExZarr.create(
          storage: :memory,
          shape: shape,
          chunks: {4, 5, 3},
          dtype: :uint16,
          fill_value: 7
        )

      data = data(30 * 21 * 17)
      box = [start: {0, 0, 0}, stop: {25, 21, 17}]
      :ok = Array.set_slice(a, binary_part(data, 0, 25 * 21 * 17 * 2), box)
      :ok = Array.set_slice(ref, binary_part(data, 0, 25 * 21 * 17 * 2), box)

      assert Array.get_slice(a) == Array.get_slice(ref)

      for _ <- 1..40 do
        {start, stop} = Boxes.random(shape)
        box = [start: start, stop: stop]
        assert Array.get_slice(a, box) == Array.get_slice(ref, box)
      end

      # whole shards (the codec's own decode)
      assert Array.read_chunk(a, {0, 0, 0}) == Array.read_chunk(ref_shard(ref), {0, 0, 0})
    end
  end

  # The same data read back as one {12, 10, 9} shard.
  defp ref_shard(ref) do
    {:ok, bin} = Array.get_slice(ref, start: {0, 0, 0}, stop: {12, 10, 9})

    {:ok, one} =
      ExZarr.create(
        storage: :memory,
        shape: {12, 10, 9},
        chunks: {12, 10, 9},
        dtype: :uint16,
        fill_value: 7
      )

    :ok = Array.set_slice(one, bin)
    one
  end

  # Overwrites the first bytes (the codec's header or magic number, which every codec checks)
  # of the first stored inner chunk of shard `key`; the index and its checksum stay valid.
  defp corrupt_inner(a, key) do
    {:ok, shard} = Storage.get(a.storage, key)
    {ExZarr.Codecs.ShardingIndexed, s} = a.pipeline.array_to_bytes
    {:ok, ib} = ExZarr.Codecs.ShardingIndexed.index_bytes(s, shard)
    {:ok, index} = ExZarr.Codecs.ShardingIndexed.decode_index(s, ib, byte_size(shard))

    {offset, nbytes} =
      Enum.find_value(
        0..(s.count - 1),
        &(ExZarr.Codecs.ShardingIndexed.entry(index, &1) != :empty &&
            ExZarr.Codecs.ShardingIndexed.entry(index, &1))
      )

    n = min(4, nbytes)
    <<before::binary-size(offset), _::binary-size(n), rest::binary>> = shard
    :ok = Storage.put(a.storage, key, [before, :binary.copy(<<0xA5>>, n), rest])
    {:ok, fresh} = Array.new(a.metadata, a.storage)
    fresh
  end

  for {name, codecs} <- @pipelines, name not in ["bytes", "transpose (chunk by chunk)"] do
    test "inner pipeline #{name}: a corrupt inner chunk is an error" do
      a = array({64, 64, 64}, {16, 16, 16}, {64, 64, 64}, unquote(Macro.escape(codecs)))
      :ok = Array.set_slice(a, data(64 * 64 * 64))
      a = corrupt_inner(a, "c/0/0/0")
      assert {:error, {:corrupt_inner_chunk, _}} = Array.get_slice(a)

      assert {:error, {:corrupt_chunk, "c/0/0/0", {:decode, _, {:corrupt_inner_chunk, _}}}} =
               Array.read_chunk(a, {0, 0, 0})
    end
  end

  test "a large parallel read with a corrupt inner chunk is an error, then reads go on" do
    codecs = [@bytes_le, %{"name" => "zstd", "configuration" => %{"level" => 1}}]
    a = array({128, 128, 128}, {16, 16, 16}, {64, 64, 64}, codecs)
    data = data(128 * 128 * 128)
    :ok = Array.set_slice(a, data)
    assert Array.get_slice(a) == {:ok, data}
    bad = corrupt_inner(a, "c/1/0/1")
    assert {:error, {:corrupt_inner_chunk, why}} = Array.get_slice(bad)
    assert why =~ "zstd"
    assert {:ok, _} = Array.get_slice(bad, start: {0, 0, 0}, stop: {64, 64, 64})
  end

  test "a chunk cache keeps raw inner chunks as binaries of their own, not the bytes read" do
    config = %{"chunk_shape" => [8, 8], "codecs" => [@bytes_le]}

    {:ok, a} =
      ExZarr.create(
        storage: :memory,
        shape: {32, 32},
        chunks: {16, 16},
        dtype: :uint16,
        codecs: [%{name: "sharding_indexed", configuration: config}],
        chunk_cache: 1_000_000
      )

    data = data(32 * 32)
    :ok = Array.set_slice(a, data)
    {:ok, a} = Array.new(a.metadata, a.storage, chunk_cache: 1_000_000)
    # two inner chunks (128 bytes each) of shard {0, 0}, read in one span
    assert {:ok, got} = Array.get_slice(a, start: {0, 0}, stop: {8, 16})
    assert got == for(r <- 0..7, into: <<>>, do: binary_part(data, r * 64, 32))
    shard = ExZarr.Codec.Chunk.new(a.storage, Array.chunk_key(a, {0, 0}))

    for i <- [0, 1] do
      assert {:ok, inner} = ExZarr.ChunkCache.fetch(a.chunk_cache, shard, {:inner, i})
      assert byte_size(inner) == 128
      assert :binary.referenced_byte_size(inner) == 128
    end
  end

  test "a shard cut short is an error" do
    a = array({32, 32, 32}, {8, 8, 8}, {32, 32, 32}, [@bytes_le, %{"name" => "zstd"}])
    :ok = Array.set_slice(a, data(32 * 32 * 32))
    {:ok, shard} = Storage.get(a.storage, "c/0/0/0")
    :ok = Storage.put(a.storage, "c/0/0/0", binary_part(shard, 0, div(byte_size(shard), 2)))
    {:ok, fresh} = Array.new(a.metadata, a.storage)
    assert {:error, {:corrupt_shard_index, "c/0/0/0", _}} = Array.get_slice(fresh)
  end
end
