defmodule ExZarr.Sharding.LimitsTest do
  # Not async: it sets the :ex_zarr :max_bytes setting for its duration (the tag `max_bytes`),
  # and measures memory.
  use ExUnit.Case, async: false
  @moduletag max_bytes: 1024 * 1024

  alias ExZarr.{Array, Storage}

  setup ctx do
    previous = Application.get_env(:ex_zarr, :max_bytes)
    Application.put_env(:ex_zarr, :max_bytes, ctx.max_bytes)

    on_exit(fn ->
      if previous,
        do: Application.put_env(:ex_zarr, :max_bytes, previous),
        else: Application.delete_env(:ex_zarr, :max_bytes)
    end)
  end

  defp create(shape, chunks, shards) do
    ExZarr.create(
      shape: shape,
      chunks: chunks,
      shards: shards,
      dtype: :uint8,
      compressor: nil,
      storage: :memory
    )
  end

  defp create(bits), do: create({2 ** bits}, {1}, {2 ** bits})

  test "a shard whose index would not fit in memory is refused" do
    assert {:error, {:too_large, :shard_index, _, _}} = create({2 ** 20}, {1}, {2 ** 20})
  end

  test "a request touching too many inner chunks is refused before planning them" do
    {:ok, a} = create({4096}, {1}, {4096})
    assert {:error, {:too_large, :chunks_touched, _, _}} = Array.get_slice(a)
    assert {:error, {:too_large, :chunks_touched, _, _}} = Array.set_slice(a, <<0::32768>>)
    assert {:ok, <<0, 0>>} = Array.get_slice(a, start: {10}, stop: {12})
  end

  # a 2^26-chunk shard has a 1 GiB index: allowed, whatever this machine's memory
  @tag max_bytes: 4 * 1024 ** 3
  test "opening a sharded array costs the same whatever its inner chunk count" do
    # (the Morton order of 2^22 inner chunks took 5.6 s to build at open; 2^26 ran out of memory)
    for bits <- [22, 26] do
      before = :erlang.memory(:total)
      {micros, {:ok, a}} = :timer.tc(fn -> create(bits) end)
      {reopen_micros, {:ok, _}} = :timer.tc(fn -> ExZarr.open(storage: a.storage) end)
      assert micros + reopen_micros < 1_000_000
      assert :erlang.memory(:total) - before < 64 * 1024 * 1024
      # nothing stored: a read costs one missing index
      assert Array.get_slice(a, start: {5}, stop: {7}) == {:ok, <<0, 0>>}
    end
  end

  test "a read checks the index entries it uses, not the others" do
    {:ok, a} = create(4)
    :ok = Array.set_slice(a, for(i <- 1..16, into: <<>>, do: <<i>>))
    {:ok, shard} = Storage.get(a.storage, "c/0")
    data = binary_part(shard, 0, 16)
    index = binary_part(shard, 16, 16 * 16)
    # inner chunks 9 and 10: half-empty pairs
    <<head::binary-size(16 * 9), _::binary-size(32), tail::binary>> = index
    bad = head <> <<2 ** 64 - 1::64-little, 1::64-little, 1::64-little, 2 ** 64 - 1::64-little>>
    index = bad <> tail

    :ok =
      Storage.put(a.storage, "c/0", data <> index <> <<ExZarr.Native.crc32c(index)::32-little>>)

    {:ok, a} = ExZarr.open(storage: a.storage)

    assert Array.get_slice(a, start: {0}, stop: {9}) == {:ok, <<1, 2, 3, 4, 5, 6, 7, 8, 9>>}
    assert Array.get_slice(a, start: {11}, stop: {16}) == {:ok, <<12, 13, 14, 15, 16>>}
    assert {:error, {:corrupt_shard_index, "c/0", _}} = Array.get_slice(a, start: {9}, stop: {10})
    assert {:error, {:corrupt_shard_index, "c/0", _}} = Array.read_chunk(a, {10}, level: :inner)
    # a whole shard is checked whole
    assert {:error, {:corrupt_chunk, "c/0", _}} = Array.read_chunk(a, {0})
  end

  # 4096 inner chunks (64 KiB of index, 4 MiB of bookkeeping) in a 1 MiB limit: the whole
  # shard is refused, its parts are read and written (found by the fuzzer: read_chunk of a
  # shard of 2^22 inner chunks went over the heap limit).
  test "a whole shard is read or written only when its inner chunks fit in memory" do
    {:ok, a} = create({8192}, {1}, {4096})
    :ok = Array.set_slice(a, <<1, 2>>, start: {4095}, stop: {4097})

    assert {:error, {:too_large, :chunks_touched, _, _}} = Array.read_chunk(a, {0})
    assert {:error, {:too_large, :chunks_touched, _, _}} = Array.write_chunk(a, {1}, <<0::32768>>)

    for level <- [:chunk, :inner] do
      assert_raise ExZarr.Error, ~r/chunks_touched/, fn ->
        Enum.take(Array.chunk_stream(a, parallel: 1, level: level), 1)
      end
    end

    assert Array.get_slice(a, start: {4094}, stop: {4098}) == {:ok, <<0, 1, 2, 0>>}
    assert {:ok, <<2>>} = Array.read_chunk(a, {4096}, level: :inner)
  end

  test "variable-length shards are read and written whole: they must fit in memory" do
    # 2^15 items of 64 bytes each: 2 MiB
    assert {:error, {:too_large, :chunk, _, _}} =
             ExZarr.create(
               shape: {2 ** 15},
               chunks: {16},
               shards: {2 ** 15},
               dtype: :string,
               storage: :memory
             )

    assert {:ok, _} =
             ExZarr.create(
               shape: {2 ** 15},
               chunks: {16},
               shards: {2 ** 12},
               dtype: :string,
               storage: :memory
             )
  end
end
