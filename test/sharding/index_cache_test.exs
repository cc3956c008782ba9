Code.require_file("counting_store.exs", __DIR__)

defmodule ExZarr.Sharding.IndexCacheTest do
  # Not async: emptying the shared table must not race other tests' cached indexes.
  use ExUnit.Case, async: false
  @moduletag :tmp_dir

  alias ExZarr.{Array, Storage}
  alias ExZarr.Sharding.IndexCache
  alias ExZarr.Test.CountingStore

  test "entries are per handle, with their generation; the table is bounded" do
    table = IndexCache.table()
    assert table != nil
    {a, b} = {make_ref(), make_ref()}

    :ok = IndexCache.put(table, a, "c/0", {"old", 1})
    :ok = IndexCache.put(table, a, "c/0", {"new", 2})
    assert IndexCache.fetch(table, a, "c/0") == {:ok, {"new", 2}}
    assert IndexCache.fetch(table, b, "c/0") == :error
    # an index of unknown generation cannot be checked later: not cached
    :ok = IndexCache.put(table, b, "c/0", {"unknown", nil})
    assert IndexCache.fetch(table, b, "c/0") == :error

    big = :binary.copy(<<0>>, 65 * 1024 * 1024)
    :ok = IndexCache.put(table, b, "c/1", {big, 1})
    assert IndexCache.fetch(table, a, "c/0") == :error
    assert IndexCache.fetch(table, b, "c/1") == {:ok, {big, 1}}
    :ok = IndexCache.delete(table, b, "c/1")
    assert IndexCache.fetch(table, b, "c/1") == :error

    assert IndexCache.fetch(nil, a, "c/0") == :error
    assert IndexCache.put(nil, a, "c/0", {"x", 1}) == :ok
  end

  # One shard of four uncompressed 4-element inner chunks: all stored chunks have the same
  # length, so a stale (offset, nbytes) lands exactly on another chunk of the new shard.
  defp create(:memory, _dir), do: create(storage: :memory)
  defp create(:filesystem, dir), do: create(path: dir)

  defp create(opts) do
    ExZarr.create(
      [shape: {16}, chunks: {4}, shards: {16}, dtype: :uint8, compressor: nil] ++ opts
    )
  end

  defp reopen(%Array{} = a), do: Array.new(a.metadata, a.storage)

  defp data, do: for(i <- 1..16, into: <<>>, do: <<i>>)

  for store <- [:memory, :filesystem] do
    test "#{store}: a shard rewritten by another handle is never read with the old index", ctx do
      {:ok, a} = create(unquote(store), ctx.tmp_dir)
      :ok = Array.set_slice(a, data())
      # the reader caches the index: chunk 0 at offset 0, chunk 1 at offset 4, ...
      assert Array.get_slice(a, start: {0}, stop: {4}) == {:ok, <<1, 2, 3, 4>>}

      # another handle clears inner chunk 0: it is no longer stored, chunk 1 moves to offset 0
      {:ok, writer} = reopen(a)
      :ok = Array.set_slice(writer, <<0, 0, 0, 0>>, start: {0}, stop: {4})

      assert Array.get_slice(a, start: {0}, stop: {4}) == {:ok, <<0, 0, 0, 0>>}
      assert Array.read_chunk(a, {0}, level: :inner) == {:error, :not_found}
      assert Array.get_slice(a) == {:ok, <<0, 0, 0, 0>> <> binary_part(data(), 4, 12)}

      # and back: chunk 0 stored again, the others move up
      :ok = Array.set_slice(writer, <<9, 9, 9, 9>>, start: {0}, stop: {4})
      assert Array.read_chunk(a, {1}, level: :inner) == {:ok, <<5, 6, 7, 8>>}
      assert Array.get_slice(a, start: {0}, stop: {8}) == {:ok, <<9, 9, 9, 9, 5, 6, 7, 8>>}
    end
  end

  test "a shard rewritten in place by another program (same size, chunks swapped)", ctx do
    {:ok, a} = create(:filesystem, ctx.tmp_dir)
    :ok = Array.set_slice(a, data())
    assert Array.get_slice(a, start: {0}, stop: {4}) == {:ok, <<1, 2, 3, 4>>}

    # the shard as another program might lay it out: the same size, new values, chunks 0
    # and 1 swapped, so that the old index finds chunk 1 where chunk 0 was
    {:ok, old} = Storage.get(a.storage, "c/0")
    entries = [{4, 4}, {0, 4}, {8, 4}, {12, 4}]
    index = for {o, n} <- entries, into: <<>>, do: <<o::64-little, n::64-little>>
    new = "EFGHABCDIJKLMNOP" <> index <> <<ExZarr.Native.crc32c(index)::32-little>>
    assert byte_size(new) == byte_size(old)

    # a later clock tick than the read (a coarse-timestamp filesystem could not tell them
    # apart within one), the same inode, the same size
    Process.sleep(20)
    path = Path.join(ctx.tmp_dir, Array.chunk_key(a, {0}))
    {:ok, file} = File.open(path, [:read, :write, :binary])
    :ok = IO.binwrite(file, new)
    :ok = File.close(file)

    assert Array.get_slice(a, start: {0}, stop: {8}) == {:ok, "ABCDEFGH"}
  end

  test "a cached index costs no read while the shard is unchanged; a stale one one more" do
    {:ok, mem} = Storage.new(:memory, owner: self())
    {:ok, store} = Storage.new(CountingStore, inner: mem)
    {:ok, a} = create(storage: store)
    :ok = Array.set_slice(a, data())
    CountingStore.reads(store)

    assert {:ok, _} = Array.get_slice(a, start: {0}, stop: {4})
    assert [{_, {:suffix, _}, _}, {_, {0, 4}, 4}] = CountingStore.reads(store)
    assert {:ok, _} = Array.get_slice(a, start: {4}, stop: {8})
    assert [{_, {4, 4}, 4}] = CountingStore.reads(store)

    # rewritten behind the handle's back: the read at the old generation is refused, then
    # the index and the chunk are read again
    {:ok, writer} = reopen(a)
    :ok = Array.set_slice(writer, <<7, 7, 7, 7>>, start: {4}, stop: {8})
    CountingStore.reads(store)
    assert Array.get_slice(a, start: {4}, stop: {8}) == {:ok, <<7, 7, 7, 7>>}
    assert [{_, {4, 4}, _}, {_, {:suffix, _}, _}, {_, {4, 4}, 4}] = CountingStore.reads(store)

    # a region whose inner chunks the cached index says are missing reads the index again
    # (nothing else would show that the shard changed)
    :ok = Array.set_slice(a, <<0, 0, 0, 0>>, start: {12}, stop: {16})
    assert {:ok, <<0, 0, 0, 0>>} = Array.get_slice(a, start: {12}, stop: {16})
    :ok = Array.set_slice(writer, <<5, 5, 5, 5>>, start: {12}, stop: {16})
    assert Array.get_slice(a, start: {12}, stop: {16}) == {:ok, <<5, 5, 5, 5>>}
  end

  test "a shard rewritten during every read gives up with an error, never mixed data" do
    {:ok, a} = create(storage: :memory)
    :ok = Array.set_slice(a, data())
    {:ok, writer} = reopen(a)
    stop = :atomics.new(1, [])

    rewriter =
      Task.async(fn ->
        Stream.iterate(0, &(&1 + 1))
        |> Enum.find(fn i ->
          # chunk 0 alternates between missing and stored: the layout moves each time
          value = if rem(i, 2) == 0, do: <<0, 0, 0, 0>>, else: <<1, 2, 3, 4>>
          :ok = Array.set_slice(writer, value, start: {0}, stop: {4})
          :atomics.get(stop, 1) == 1
        end)
      end)

    results = for _ <- 1..300, do: Array.get_slice(a, start: {0}, stop: {8})
    :atomics.put(stop, 1, 1)
    Task.await(rewriter)

    for result <- results do
      assert result in [
               {:ok, <<0, 0, 0, 0, 5, 6, 7, 8>>},
               {:ok, <<1, 2, 3, 4, 5, 6, 7, 8>>},
               {:error, {:shard_changed, "c/0"}}
             ]
    end
  end
end
