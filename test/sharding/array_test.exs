Code.require_file("counting_store.exs", __DIR__)
Code.require_file("boxes.exs", __DIR__)

defmodule ExZarr.Sharding.ArrayTest do
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Storage}
  alias ExZarr.Test.{Boxes, CountingStore}

  defp seq(n, mod \\ 251), do: :erlang.list_to_binary(Enum.map(0..(n - 1), &rem(&1, mod)))

  defp sharded(opts) do
    {:ok, a} =
      ExZarr.create(Keyword.merge([storage: :memory, dtype: :uint8, compressor: nil], opts))

    a
  end

  defp random_data(start, stop, itemsize) do
    n = Enum.zip_reduce(Tuple.to_list(start), Tuple.to_list(stop), 1, &((&2 - &1) * &3))

    # mostly zeros (the fill value) with some values, so that inner chunks become empty too
    if :rand.uniform(3) == 1,
      do: :binary.copy(<<0>>, n * itemsize),
      else: :crypto.strong_rand_bytes(n * itemsize)
  end

  test "create(shards:) wraps the codecs in sharding_indexed, as zarr-python's create_array" do
    opts = [shape: {100, 80}, chunks: {10, 20}, compressor: %{id: "zstd", level: 1}]
    a = sharded([shards: {50, 40}] ++ opts)
    assert a.metadata.chunks == {50, 40}

    assert [%{name: "sharding_indexed", configuration: config}] = a.metadata.codecs

    assert [%{name: "bytes"}, %{name: "zstd", configuration: zstd}] =
             sharded(opts).metadata.codecs

    assert config == %{
             "chunk_shape" => [10, 20],
             "codecs" => [%{"name" => "bytes"}, %{"name" => "zstd", "configuration" => zstd}],
             "index_codecs" => [
               %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
               %{"name" => "crc32c"}
             ],
             "index_location" => "end"
           }

    assert {:error, {:invalid_option, :shards, {50, 45}}} =
             ExZarr.create(shape: {100, 80}, chunks: {10, 20}, shards: {50, 45})

    assert {:error, {:invalid_option, :shards, {50, 40}}} =
             ExZarr.create(shape: {100, 80}, chunks: {10, 20}, shards: {50, 40}, zarr_format: 2)
  end

  for location <- ["end", "start"] do
    test "random writes and reads agree with an unsharded array (index at #{location})" do
      :rand.seed(:exsss, {1, 2, 3})
      shape = {21, 17, 9}
      inner = {4, 4, 3}

      config = %{
        "chunk_shape" => Tuple.to_list(inner),
        "codecs" => [
          %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
          %{"name" => "zstd"}
        ],
        "index_location" => unquote(location)
      }

      a =
        sharded(
          shape: shape,
          chunks: {8, 8, 9},
          dtype: :uint16,
          codecs: [%{name: "sharding_indexed", configuration: config}]
        )

      ref = sharded(shape: shape, chunks: inner, dtype: :uint16)

      for _ <- 1..60 do
        {start, stop} = Boxes.random(shape)

        if :rand.uniform(2) == 1 do
          data = random_data(start, stop, 2)
          assert :ok = Array.set_slice(a, data, start: start, stop: stop)
          assert :ok = Array.set_slice(ref, data, start: start, stop: stop)
        else
          assert Array.get_slice(a, start: start, stop: stop) ==
                   Array.get_slice(ref, start: start, stop: stop)
        end
      end

      assert Array.get_slice(a) == Array.get_slice(ref)
      # a fresh handle (no cached index) reads the same
      {:ok, again} = Array.new(a.metadata, a.storage)
      assert Array.get_slice(again) == Array.get_slice(ref)
    end
  end

  test "a pipeline with codecs around sharding_indexed is read and written shard by shard" do
    config = %{"chunk_shape" => [2, 2], "codecs" => [%{"name" => "bytes"}]}

    a =
      sharded(
        shape: {5, 6},
        chunks: {4, 4},
        codecs: [%{name: "sharding_indexed", configuration: config}, %{name: "crc32c"}]
      )

    refute ExZarr.Codec.Pipeline.supports_partial_decode?(a.pipeline)
    data = seq(30)
    :ok = Array.set_slice(a, data)
    :ok = Array.set_slice(a, <<0, 0, 0, 0>>, start: {0, 0}, stop: {2, 2})
    expected = <<0, 0>> <> binary_part(data, 2, 4) <> <<0, 0>> <> binary_part(data, 8, 22)
    assert Array.get_slice(a) == {:ok, expected}
    assert Array.read_chunk(a, {0, 0}, level: :inner) == {:error, :not_sharded}
  end

  test "a shard whose inner chunks all become fill is deleted" do
    a = sharded(shape: {8}, chunks: {2}, shards: {4})
    :ok = Array.set_slice(a, seq(8))
    assert {:ok, ["c/0", "c/1", "zarr.json"]} = Storage.list(a.storage)
    :ok = Array.set_slice(a, <<0, 0, 0>>, start: {4}, stop: {7})
    assert {:ok, ["c/0", "c/1", "zarr.json"]} = Storage.list(a.storage)
    :ok = Array.set_slice(a, <<0>>, start: {7}, stop: {8})
    assert {:ok, ["c/0", "zarr.json"]} = Storage.list(a.storage)
    assert Array.get_slice(a) == {:ok, <<0, 1, 2, 3, 0, 0, 0, 0>>}
    assert Array.get_slice(a, start: {4}, stop: {8}) == {:ok, <<0, 0, 0, 0>>}
  end

  test "write_empty_chunks: true stores fill inner chunks" do
    a = sharded(shape: {4}, chunks: {2}, shards: {4}, write_empty_chunks: true)
    :ok = Array.set_slice(a, <<0, 0, 0, 0>>)
    {:ok, shard} = Storage.get(a.storage, "c/0")
    assert byte_size(shard) == 4 + 2 * 16 + 4
  end

  test "read_chunk/write_chunk work on shards; level: :inner reads inner chunks" do
    a = sharded(shape: {6, 6}, chunks: {2, 2}, shards: {4, 4})
    data = seq(36)
    :ok = Array.set_slice(a, data)

    {:ok, shard} = Array.read_chunk(a, {1, 1})
    # the edge shard holds rows/cols 4..5, padded with fill
    assert binary_part(shard, 0, 4) == <<28, 29, 0, 0>>
    assert Array.read_chunk(a, {2, 2}, level: :inner) == {:ok, <<28, 29, 34, 35>>}
    assert Array.read_chunk(a, {0, 1}, level: :inner) == {:ok, <<2, 3, 8, 9>>}
    assert Array.read_chunk(a, {3, 0}, level: :inner) == {:error, {:invalid_chunk_coords, {3, 0}}}

    :ok = Array.write_chunk(a, {1, 1}, :binary.copy(<<5>>, 16))
    assert Array.get_slice(a, start: {4, 4}, stop: {6, 6}) == {:ok, <<5, 5, 5, 5>>}
    assert Array.read_chunk(a, {0, 0}, level: :inner) == {:ok, <<0, 1, 6, 7>>}

    :ok = Array.write_chunk(a, {1, 1}, :binary.copy(<<0>>, 16))
    assert Array.read_chunk(a, {1, 1}) == {:error, :not_found}
    assert Array.read_chunk(a, {2, 2}, level: :inner) == {:error, :not_found}
    assert {:error, {:wrong_data_size, _}} = Array.write_chunk(a, {0, 0}, <<1>>)

    plain = sharded(shape: {4}, chunks: {2})
    assert Array.read_chunk(plain, {0}, level: :inner) == {:error, :not_sharded}
  end

  test "chunk_stream streams shards, or inner chunks with level: :inner" do
    a = sharded(shape: {6, 5}, chunks: {2, 2}, shards: {4, 4})
    data = seq(30)
    :ok = Array.set_slice(a, data)
    :ok = Array.set_slice(a, <<0, 0, 0, 0>>, start: {0, 0}, stop: {2, 2})

    assert Enum.map(Array.chunk_stream(a), &elem(&1, 0)) == [{0, 0}, {0, 1}, {1, 0}, {1, 1}]

    inner = Enum.to_list(Array.chunk_stream(a, level: :inner, parallel: 2))
    assert length(inner) == 9
    assert {{0, 0}, <<0, 0, 0, 0>>} in inner
    assert {{2, 2}, <<24, 0, 29, 0>>} in inner
    assert Enum.to_list(Array.chunk_stream(a, level: :inner, parallel: 1)) == inner
  end

  test "concurrent writes to one shard through one handle lose nothing" do
    a = sharded(shape: {64}, chunks: {4}, shards: {64})

    1..16
    |> Task.async_stream(fn i ->
      Array.set_slice(a, :binary.copy(<<i>>, 3), start: {(i - 1) * 4 + 1}, stop: {i * 4})
    end)
    |> Enum.each(&assert(&1 == {:ok, :ok}))

    {:ok, all} = Array.get_slice(a)
    assert all == for(i <- 1..16, into: <<>>, do: <<0, i, i, i>>)
  end

  describe "partial reads" do
    setup do
      {:ok, mem} = Storage.new(:memory, [])
      {:ok, store} = Storage.new(CountingStore, inner: mem)
      # 256x256 shards of 64 inner chunks of 32x32 = 1024 bytes each, uncompressed
      a = sharded(storage: store, shape: {512, 512}, chunks: {32, 32}, shards: {256, 256})
      data = :crypto.strong_rand_bytes(512 * 512)
      :ok = Array.set_slice(a, data)
      CountingStore.reads(store)
      %{a: a, store: store, data: data}
    end

    defp expected(data, {r0, c0}, {r1, c1}),
      do: for(r <- r0..(r1 - 1), into: <<>>, do: binary_part(data, r * 512 + c0, c1 - c0))

    test "one inner chunk costs the index and that chunk", %{a: a, store: store, data: data} do
      # a fresh handle: nothing cached
      {:ok, a} = Array.new(a.metadata, a.storage)

      assert Array.get_slice(a, start: {288, 320}, stop: {320, 352}) ==
               {:ok, expected(data, {288, 320}, {320, 352})}

      assert CountingStore.reads(store) == [
               {"c/1/1", {:suffix, 64 * 16 + 4}, 64 * 16 + 4},
               {"c/1/1", {9 * 1024, 1024}, 1024}
             ]

      # the index is cached now
      assert {:ok, _} = Array.get_slice(a, start: {256, 256}, stop: {260, 300})
      assert CountingStore.reads(store) == [{"c/1/1", {0, 3072}, 3072}]
    end

    test "neighbouring inner chunks are read at once", %{a: a, store: store, data: data} do
      # inner chunks (0,0) (1,0) (0,1) (1,1) are the first four in Morton order
      assert Array.get_slice(a, start: {10, 10}, stop: {60, 60}) ==
               {:ok, expected(data, {10, 10}, {60, 60})}

      # (a write drops the index from the cache: this read fetched it again)
      assert [{"c/0/0", {:suffix, _}, _}, {"c/0/0", {0, 4096}, 4096}] = CountingStore.reads(store)

      # inner chunks (0, 0..7) are at Morton positions 0, 2, 8, 10, 32, 34, 40, 42
      assert {:ok, _} = Array.get_slice(a, start: {0, 0}, stop: {1, 256}, coalesce_gap: 0)
      assert length(CountingStore.reads(store)) == 8
      assert {:ok, _} = Array.get_slice(a, start: {0, 0}, stop: {1, 256}, coalesce_gap: 1024)
      assert length(CountingStore.reads(store)) == 4
    end

    test "a write through the handle refreshes its cached index", %{a: a, data: data} do
      assert {:ok, _} = Array.get_slice(a, start: {0, 0}, stop: {8, 8})
      :ok = Array.set_slice(a, :binary.copy(<<0>>, 32 * 32), start: {0, 0}, stop: {32, 32})
      :ok = Array.set_slice(a, :binary.copy(<<9>>, 10), start: {40, 0}, stop: {41, 10})
      {:ok, got} = Array.get_slice(a, start: {0, 0}, stop: {64, 64})
      {:ok, fresh} = Array.new(a.metadata, a.storage)
      assert Array.get_slice(fresh, start: {0, 0}, stop: {64, 64}) == {:ok, got}
      assert binary_part(got, 40 * 64, 10) == :binary.copy(<<9>>, 10)
      assert binary_part(got, 32 * 64 + 10, 54) == binary_part(data, 32 * 512 + 10, 54)
    end

    test "a read failing with a cached index is retried with a fresh one", %{a: a} do
      {:ok, other} = Array.new(a.metadata, a.storage)

      :ok =
        Array.set_slice(other, :binary.copy(<<0>>, 256 * 256), start: {0, 0}, stop: {256, 256})

      assert {:ok, ["c/0/1", "c/1/0", "c/1/1", "zarr.json"]} = Storage.list(a.storage)

      assert Array.get_slice(a, start: {100, 0}, stop: {101, 256}) ==
               {:ok, :binary.copy(<<0>>, 256)}
    end

    test "stores without ranges read each shard once", %{a: a, data: data} do
      {:ok, store} = Storage.new(CountingStore, inner: a.storage, ranges: false)
      {:ok, a} = Array.new(a.metadata, store)

      assert Array.get_slice(a, start: {250, 0}, stop: {260, 40}) ==
               {:ok, expected(data, {250, 0}, {260, 40})}

      reads = CountingStore.reads(store)
      assert Enum.sort(Enum.map(reads, &elem(&1, 0))) == ["c/0/0", "c/1/0"]
      assert Enum.all?(reads, &(elem(&1, 1) == nil))

      assert Array.read_chunk(a, {9, 1}, level: :inner) ==
               {:ok, expected(data, {288, 32}, {320, 64})}
    end

    test "a corrupt index gives an error", %{a: a, store: store} do
      {:ok, shard} = Storage.get(store, "c/0/0")
      size = byte_size(shard)
      <<body::binary-size(size - 4), crc::32-little>> = shard
      :ok = Storage.put(store, "c/0/0", [body, <<crc + 1::32-little>>])
      {:ok, a} = Array.new(a.metadata, a.storage)

      assert {:error, {:corrupt_shard_index, "c/0/0", _}} =
               Array.get_slice(a, start: {0, 0}, stop: {1, 1})

      assert {:error, {:corrupt_shard_index, "c/0/0", _}} =
               Array.read_chunk(a, {0, 0}, level: :inner)

      # a valid index pointing past the end of the (truncated) shard
      :ok =
        Storage.put(
          store,
          "c/0/1",
          binary_part(body, 0, 4096) <> binary_part(shard, size - 1028, 1028)
        )

      assert {:error, {:corrupt_shard_index, "c/0/1", _}} =
               Array.get_slice(a, start: {0, 511}, stop: {256, 512})

      assert {:error, _} = Array.set_slice(a, <<1>>, start: {0, 300}, stop: {1, 301})
    end
  end
end
