Code.require_file("../sharding/counting_store.exs", __DIR__)

defmodule ExZarr.DType.VarLenTest do
  use ExUnit.Case, async: true
  import Bitwise

  alias ExZarr.Array
  alias ExZarr.Test.{CountingStore, Prop}

  defp create(opts) do
    ExZarr.create(Keyword.merge([storage: :memory, dtype: :string], opts))
  end

  describe "arrays" do
    test "missing chunks read as the fill value" do
      {:ok, a} = create(shape: {2, 3}, chunks: {1, 2}, fill_value: "nothing")
      :ok = Array.set_slice(a, ["x"], start: {1, 2}, stop: {2, 3})

      assert Array.get_slice(a) == {:ok, List.duplicate("nothing", 5) ++ ["x"]}
      assert Array.read_chunk(a, {0, 0}) == {:error, :not_found}
      assert Array.read_chunk(a, {1, 1}) == {:ok, ["x", "nothing"]}
    end

    test "chunks that are all fill are not stored" do
      {:ok, a} = create(shape: {4}, chunks: {2}, fill_value: "f")
      :ok = Array.set_slice(a, ["a", "b", "c", "d"])
      :ok = Array.set_slice(a, ["f", "f"], start: {2}, stop: {4})
      assert Array.read_chunk(a, {1}) == {:error, :not_found}
      assert Array.get_slice(a) == {:ok, ["a", "b", "f", "f"]}
    end

    test "0-d arrays, empty selections, bytes arrays" do
      {:ok, a} = create(shape: {})
      assert Array.get_slice(a) == {:ok, [""]}
      :ok = Array.set_slice(a, ["only"])
      assert Array.get_slice(a) == {:ok, ["only"]}

      {:ok, b} = create(shape: {3, 0}, dtype: :bytes, zarr_format: 2)
      assert Array.get_slice(b) == {:ok, []}

      {:ok, c} = create(shape: {3}, chunks: {2}, dtype: :bytes)
      :ok = Array.set_slice(c, [<<0>>, <<255, 254>>, ""])
      assert Array.get_slice(c, start: {1}, stop: {3}) == {:ok, [<<255, 254>>, ""]}
    end

    test "write_chunk, read_chunk and chunk_stream take and give lists" do
      {:ok, a} = create(shape: {3}, chunks: {2})
      :ok = Array.write_chunk(a, {1}, ["z", "edge"])
      assert Array.read_chunk(a, {1}) == {:ok, ["z", "edge"]}
      assert Array.get_slice(a) == {:ok, ["", "", "z"]}
      assert Enum.to_list(Array.chunk_stream(a)) == [{{0}, ["", ""]}, {{1}, ["z", "edge"]}]
      assert Array.write_chunk(a, {2}, ["a", "b"]) == {:error, {:invalid_chunk_coords, {2}}}
    end

    test "bad input is an error and writes nothing" do
      {:ok, a} = create(shape: {2}, chunks: {1})

      assert {:error, {:wrong_item_count, expected: 2, got: 1}} = Array.set_slice(a, ["a"])
      assert {:error, {:invalid_item, 1, 7}} = Array.set_slice(a, ["a", 7])
      assert {:error, {:invalid_item, 0, <<0xC3>>}} = Array.set_slice(a, [<<0xC3>>, "b"])
      assert {:error, {:not_a_list, "ab"}} = Array.set_slice(a, "ab")
      assert Array.get_slice(a) == {:ok, ["", ""]}
    end

    test "selections of more items than memory holds are refused before anything is read" do
      for dtype <- [:string, :bytes], shards <- [[], [shards: {1, 4096}]] do
        {:ok, a} =
          ExZarr.create(
            [storage: :memory, shape: {2, 1 <<< 40}, chunks: {1, 1024}, dtype: dtype] ++ shards
          )

        :ok = Array.set_slice(a, ["x", "y"], start: {1, 5}, stop: {2, 7})
        assert {:error, {:too_large, :selection, _, _}} = Array.get_slice(a)

        assert {:error, {:too_large, _, _, _}} =
                 Array.get_slice(a, start: {0, 0}, stop: {1, 1 <<< 36})

        assert Array.get_slice(a, start: {1, 4}, stop: {2, 8}) == {:ok, ["", "x", "y", ""]}
      end
    end

    test "corrupt chunks give errors naming the chunk" do
      {:ok, a} = create(shape: {4}, chunks: {2}, compressor: nil)
      :ok = Array.set_slice(a, ["a", "b", "c", "d"])

      for junk <- ["", <<1, 2>>, <<2::little-32, 9::little-32, "x">>, <<5::little-32>>] do
        :ok = ExZarr.Storage.put(a.storage, "c/1", junk)
        assert {:error, {:corrupt_chunk, "c/1", _}} = Array.get_slice(a)
        assert {:error, {:corrupt_chunk, "c/1", _}} = Array.read_chunk(a, {1})

        assert {:error, {:corrupt_chunk, "c/1", _}} =
                 Array.set_slice(a, ["q"], start: {3}, stop: {4})
      end

      {:ok, z} = create(shape: {4}, chunks: {2})
      :ok = Array.set_slice(z, ["a", "b", "c", "d"])
      :ok = ExZarr.Storage.put(z.storage, "c/0", "not zstd")
      assert {:error, {:corrupt_chunk, "c/0", {:decode, "zstd", _}}} = Array.get_slice(z)
    end

    test "unsupported pipelines are refused when the array is opened" do
      assert {:error, {:unsupported_codec, _}} = create(shape: {4}, codecs: ["bytes"])
      assert {:error, {:unsupported_codec, _}} = create(shape: {4}, codecs: ["vlen-bytes"])
      assert {:error, _} = create(shape: {4}, dtype: :int32, codecs: ["vlen-utf8"])

      assert {:error, {:unsupported_codec, _}} =
               create(
                 shape: {4},
                 codecs: [%{name: "transpose", configuration: %{order: [0]}}, "vlen-utf8"]
               )
    end

    test "sharded arrays: partial writes, fill inner chunks, corrupt shards" do
      {:ok, a} =
        create(shape: {4, 4}, chunks: {1, 2}, shards: {2, 4}, fill_value: "-", compressor: nil)

      :ok = Array.set_slice(a, ["a", "b", "c"], start: {1, 1}, stop: {2, 4})
      :ok = Array.set_slice(a, ["x"], start: {3, 0}, stop: {4, 1})

      assert Array.get_slice(a) ==
               {:ok, ~w(- - - - - a b c - - - - x - - -)}

      assert Array.get_slice(a, start: {1, 2}, stop: {4, 4}) == {:ok, ~w(b c - - - -)}
      assert Array.read_chunk(a, {1, 0}) == {:ok, ~w(- - - - x - - -)}

      assert {:error, {:unsupported_option, :level, _}} =
               Array.read_chunk(a, {1, 0}, level: :inner)

      assert_raise ExZarr.Error, fn -> Array.chunk_stream(a, level: :inner) end
      assert [{{0, 0}, _}, {{1, 0}, _}] = Enum.to_list(Array.chunk_stream(a))
      :ok = Array.set_slice(a, ["-"], start: {3, 0}, stop: {4, 1})
      assert Array.read_chunk(a, {1, 0}) == {:error, :not_found}

      {:ok, shard} = ExZarr.Storage.get(a.storage, "c/0/0")
      :ok = ExZarr.Storage.put(a.storage, "c/0/0", binary_part(shard, 0, byte_size(shard) - 1))
      assert {:error, {:corrupt_shard_index, "c/0/0", _}} = Array.get_slice(a)

      <<first, rest::binary>> = shard
      :ok = ExZarr.Storage.put(a.storage, "c/0/0", <<first + 1, rest::binary>>)
      assert {:error, {:corrupt_chunk, "c/0/0", _}} = Array.get_slice(a)
    end
  end

  test "a sharded read fetches the index and only the inner chunks it needs" do
    for ranges? <- [true, false] do
      {:ok, mem} = ExZarr.Storage.new(:memory, [])
      {:ok, store} = ExZarr.Storage.new(CountingStore, inner: mem, ranges: ranges?)
      {:ok, meta} = ExZarr.Metadata.new(shape: {8}, chunks: {2}, shards: {8}, dtype: :string)
      {:ok, a} = Array.new(meta, store)
      :ok = Array.set_slice(a, ~w(a b c d e f g h))
      CountingStore.reads(store)

      assert Array.get_slice(a, start: {4}, stop: {6}) == {:ok, ~w(e f)}

      if ranges? do
        assert [{"c/0", {:suffix, 68}, 68}, {"c/0", {_, n}, n}] = CountingStore.reads(store)
      else
        assert [{"c/0", nil, _}] = CountingStore.reads(store)
      end
    end
  end

  # A model of the array as a map from index tuple to value.
  defp box_indices(start, stop) do
    start
    |> Tuple.to_list()
    |> Enum.zip(Tuple.to_list(stop))
    |> Enum.reduce([[]], fn {lo, hi}, acc -> for a <- acc, i <- lo..(hi - 1)//1, do: a ++ [i] end)
    |> Enum.map(&List.to_tuple/1)
  end

  defp random_box(shape) do
    bounds =
      for n <- Tuple.to_list(shape) do
        lo = :rand.uniform(n + 1) - 1
        {lo, lo + :rand.uniform(n - lo + 1) - 1}
      end

    {bounds |> Enum.map(&elem(&1, 0)) |> List.to_tuple(),
     bounds |> Enum.map(&elem(&1, 1)) |> List.to_tuple()}
  end

  test "writes and reads of random boxes, sharded or not, match a model (property)" do
    Prop.check(
      :proper_types.integer(1, 1_000_000_000),
      fn seed ->
        :rand.seed(:exsss, {seed, 7, 11})
        ndim = :rand.uniform(4) - 1
        shape = List.to_tuple(for _ <- 1..ndim//1, do: :rand.uniform(6) - 1)
        chunks = List.to_tuple(for _ <- 1..ndim//1, do: :rand.uniform(4))
        # half of the arrays are sharded, with 1 or 2 inner chunks per shard along each axis
        shards =
          if ndim > 0 and :rand.uniform(2) == 1,
            do: chunks |> Tuple.to_list() |> Enum.map(&(&1 * :rand.uniform(2))) |> List.to_tuple()

        {:ok, a} =
          create(shape: shape, chunks: chunks, shards: shards, fill_value: "_", compressor: nil)

        all = box_indices(Tuple.duplicate(0, ndim), shape)
        model = Map.new(all, &{&1, "_"})

        model =
          Enum.reduce(1..3, model, fn k, model ->
            {start, stop} = random_box(shape)
            idx = box_indices(start, stop)
            values = Enum.map(idx, &"#{k}:#{inspect(&1)}")
            :ok = Array.set_slice(a, values, start: start, stop: stop)
            Map.merge(model, Map.new(Enum.zip(idx, values)))
          end)

        {start, stop} = random_box(shape)

        Array.get_slice(a) == {:ok, Enum.map(all, &model[&1])} and
          Array.get_slice(a, start: start, stop: stop) ==
            {:ok, Enum.map(box_indices(start, stop), &model[&1])}
      end,
      150
    )
  end
end
