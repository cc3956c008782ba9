defmodule ExZarr.Array.ReshapeTest do
  use ExUnit.Case, async: true
  import Bitwise

  alias ExZarr.{Array, Indexing, Shape, Storage}
  alias ExZarr.Test.Prop

  defp create(opts) do
    defaults = [storage: :memory, dtype: :uint8, compressor: nil, fill_value: 0]
    {:ok, a} = ExZarr.create(Keyword.merge(defaults, opts))
    a
  end

  defp i32(list), do: for(x <- list, into: <<>>, do: <<x::32-little>>)
  defp from_i32(bin), do: for(<<x::signed-32-little <- bin>>, do: x)

  defp stored_chunks(a) do
    {:ok, keys} = Storage.list(a.storage)
    keys |> Enum.reject(&(&1 in ["zarr.json", ".zarray", ".zattrs"])) |> Enum.sort()
  end

  describe "resize/2" do
    for format <- [2, 3] do
      test "growing keeps the data and shows fill values in the new region (v#{format})" do
        a =
          create(
            shape: {2, 3},
            chunks: {2, 2},
            dtype: :int32,
            fill_value: -1,
            zarr_format: unquote(format)
          )

        :ok = Array.set_slice(a, i32([1, 2, 3, 4, 5, 6]))

        assert {:ok, a} = Array.resize(a, {3, 4})
        assert a.metadata.shape == {3, 4}
        assert from_i32(Array.get_slice!(a)) == [1, 2, 3, -1, 4, 5, 6, -1, -1, -1, -1, -1]

        {:ok, reopened} = ExZarr.open(storage: a.storage)
        assert reopened.metadata.shape == {3, 4}
      end

      test "shrinking deletes outside chunks and clears the cut part of border chunks (v#{format})" do
        a =
          create(
            shape: {10},
            chunks: {4},
            dtype: :int32,
            fill_value: -1,
            zarr_format: unquote(format)
          )

        :ok = Array.set_slice(a, i32(Enum.to_list(0..9)))
        assert length(stored_chunks(a)) == 3

        assert {:ok, a} = Array.resize(a, {5})
        assert length(stored_chunks(a)) == 2
        assert from_i32(Array.get_slice!(a)) == [0, 1, 2, 3, 4]
        assert {:ok, raw} = Array.read_chunk(a, {1})
        assert from_i32(raw) == [4, -1, -1, -1]

        assert {:ok, a} = Array.resize(a, {10})
        assert from_i32(Array.get_slice!(a)) == [0, 1, 2, 3, 4, -1, -1, -1, -1, -1]
      end
    end

    # (a conditional read-modify-write of it, as partial writes: a delete cannot be one)
    test "a border chunk cut down to fill values only is stored as fill values" do
      a = create(shape: {6}, chunks: {4})
      :ok = Array.set_slice(a, <<0, 0, 0, 0, 0, 9>>)
      assert stored_chunks(a) == ["c/1"]
      assert {:ok, a} = Array.resize(a, {5})
      assert stored_chunks(a) == ["c/1"]
      assert {:ok, a} = Array.resize(a, {8})
      assert Array.get_slice(a) == {:ok, <<0, 0, 0, 0, 0, 0, 0, 0>>}
    end

    test "shrinking one dimension while growing another" do
      a = create(shape: {4, 4}, chunks: {3, 3})
      data = :erlang.list_to_binary(Enum.to_list(1..16))
      :ok = Array.set_slice(a, data)

      assert {:ok, a} = Array.resize(a, {2, 7})
      assert {:ok, a} = Array.resize(a, {4, 7})

      assert Array.get_slice!(a) ==
               :erlang.list_to_binary([
                 [1, 2, 3, 4, 0, 0, 0],
                 [5, 6, 7, 8, 0, 0, 0],
                 List.duplicate(0, 7),
                 List.duplicate(0, 7)
               ])
    end

    test "resizing to zero and back" do
      a = create(shape: {3, 3}, chunks: {2, 2})
      :ok = Array.set_slice(a, :binary.copy(<<7>>, 9))
      assert {:ok, a} = Array.resize(a, {0, 3})
      assert stored_chunks(a) == []
      assert Array.get_slice(a) == {:ok, <<>>}
      assert {:ok, a} = Array.resize(a, {1, 1})
      assert Array.get_slice(a) == {:ok, <<0>>}
    end

    test "v2 metadata is rewritten with the new shape and the attributes kept" do
      a = create(shape: {4}, zarr_format: 2, attributes: %{"k" => "v"})
      {:ok, a} = Array.resize(a, {9})
      {:ok, zarray} = Storage.get(a.storage, ".zarray")
      assert :jiffy.decode(zarray, [:return_maps])["shape"] == [9]
      assert Array.attributes(ExZarr.open!(storage: a.storage)) == %{"k" => "v"}
    end

    test "a sharded array is cut at inner-chunk level inside its border shard" do
      a = create(shape: {8, 8}, chunks: {2, 2}, shards: {4, 4})
      :ok = Array.set_slice(a, :binary.copy(<<5>>, 64))
      assert {:ok, a} = Array.resize(a, {3, 8})
      assert stored_chunks(a) == ["c/0/0", "c/0/1"]
      assert {:ok, a} = Array.resize(a, {8, 8})

      expected = :binary.copy(<<5>>, 24) <> :binary.copy(<<0>>, 40)
      assert Array.get_slice!(a) == expected
    end

    test "bad shapes are errors and change nothing" do
      a = create(shape: {4, 4})

      for bad <- [{4}, {4, -1}, {4, 2.0}, [4, 4], nil] do
        assert Array.resize(a, bad) == {:error, {:invalid_shape, bad}}
      end

      assert ExZarr.open!(storage: a.storage).metadata.shape == {4, 4}
    end

    test "shapes beyond the int64 range are refused" do
      a = create(shape: {4, 4})

      assert {:error, {:too_large, :shape, _, _}} = Array.resize(a, {4, 1 <<< 63})
      assert ExZarr.open!(storage: a.storage).metadata.shape == {4, 4}
    end

    for {dtype, items} <- [string: ["a", "bé", "c"], bytes: [<<0, 1>>, <<>>, <<255>>]] do
      for {format, opts} <- [{2, []}, {2, [order: "F"]}, {3, []}, {3, [shards: {4, 2}]}] do
        test "#{dtype} arrays are cut through a chunk too (v#{format} #{inspect(opts)})" do
          {:ok, a} =
            ExZarr.create(
              [storage: :memory, shape: {3, 3}, chunks: {2, 2}, dtype: unquote(dtype)] ++
                [zarr_format: unquote(format)] ++ unquote(opts)
            )

          items = unquote(items)
          rows = [items, Enum.reverse(items), items]
          :ok = Array.set_slice(a, Enum.concat(rows))

          # cuts the chunks of row 1 and column 1 through the middle
          assert {:ok, a} = Array.resize(a, {1, 1})
          assert Array.get_slice(a) == {:ok, [hd(items)]}
          assert {:ok, a} = Array.resize(a, {3, 3})
          assert Array.get_slice(a) == {:ok, [hd(items) | List.duplicate(a.fill_element, 8)]}

          {:ok, reopened} = ExZarr.open(storage: a.storage)
          assert Array.get_slice(reopened) == Array.get_slice(a)
        end
      end
    end

    test "a grid with an empty dimension is not walked (shape [6, 2^32 + 1, 0])" do
      {:ok, store} = Storage.new(:memory, [])

      zarray = %{
        "zarr_format" => 2,
        "shape" => [6, (1 <<< 32) + 1, 0],
        "chunks" => [2, 6, 1],
        "dtype" => "<i2",
        "compressor" => :null,
        "fill_value" => :null,
        "filters" => :null,
        "order" => "C"
      }

      :ok = Storage.put(store, ".zarray", :jiffy.encode(zarray))
      {:ok, a} = ExZarr.open(storage: store)

      {micros, result} = :timer.tc(fn -> Array.resize(a, {5, (1 <<< 32) + 4, 0}) end)
      assert {:ok, %{metadata: %{shape: {5, _, 0}}}} = result
      assert micros < 1_000_000
    end

    # 2^32 chunk coordinates to clear and as many to delete: only the stored chunks are
    # visited (a listing), the others cost nothing.
    for {label, prefix} <- [{"at the root", ""}, {"in a group", "g/a"}] do
      @tag prefix: prefix
      test "a shrink of a huge grid visits the stored chunks only (#{label})", %{prefix: prefix} do
        {:ok, store} = Storage.new(:memory, [])
        big = 1 <<< 32

        {:ok, a} =
          ExZarr.create(
            storage: store,
            prefix: prefix,
            shape: {big, 4},
            chunks: {1, 2},
            dtype: :uint8,
            compressor: nil,
            fill_value: 0
          )

        for row <- [0, 7, big - 2, big - 1],
            do: :ok = Array.set_slice(a, <<1, 2, 3, 4>>, start: {row, 0}, stop: {row + 1, 4})

        # a sibling whose keys start with the array's prefix must be left alone
        sibling = prefix <> "2"

        if prefix != "" do
          {:ok, b} =
            ExZarr.create(
              storage: store,
              prefix: sibling,
              shape: {2, 4},
              chunks: {1, 2},
              dtype: :uint8
            )

          :ok = Array.set_slice(b, :binary.copy(<<9>>, 8))
        end

        {micros, result} = :timer.tc(fn -> Array.resize(a, {big - 1, 3}) end)
        assert {:ok, a} = result
        assert micros < 5_000_000

        # rows 0, 7 and 2^32 - 2 are kept (both chunks each, the second cut), 2^32 - 1 deleted
        {:ok, keys} = Storage.list(store, prefix)
        assert Enum.count(keys, &(&1 =~ ~r{(^|/)c/\d+/\d+$})) == 6, inspect(keys)

        assert Array.get_slice!(a, start: {0, 0}, stop: {1, 3}) == <<1, 2, 3>>
        assert Array.get_slice!(a, start: {big - 2, 0}, stop: {big - 1, 3}) == <<1, 2, 3>>
        assert Array.read_chunk(a, {7, 1}) == {:ok, <<3, 0>>}
        assert Array.read_chunk(a, {big - 2, 1}) == {:ok, <<3, 0>>}

        if prefix != "" do
          {:ok, b} = ExZarr.open(storage: store, prefix: sibling)
          assert Array.get_slice!(b) == :binary.copy(<<9>>, 8)
        end
      end
    end

    test "a shrink of a huge grid on a store that cannot list is refused and changes nothing" do
      {:ok, store} = Storage.new(ExZarr.Test.PlainStore, listable: false)
      big = 1 <<< 32
      a = create(storage: store, shape: {big, 4}, chunks: {1, 2})
      :ok = Array.set_slice(a, <<1, 2, 3, 4>>, start: {big - 1, 0}, stop: {big, 4})

      assert {:error, {:too_large, :chunk_visits, count, max}} = Array.resize(a, {big - 1, 3})
      assert count > max
      {:ok, a} = ExZarr.open(storage: store)
      assert a.metadata.shape == {big, 4}
      assert Array.get_slice!(a, start: {big - 1, 0}, stop: {big, 4}) == <<1, 2, 3, 4>>
    end

    test "matches a reference model over random resizes and writes" do
      gen =
        :proper_types.bind(
          :proper_types.integer(1, 3),
          fn ndim ->
            {Prop.tuple_of(ndim, 0, 6), Prop.tuple_of(ndim, 1, 3),
             :proper_types.list({Prop.tuple_of(ndim, 0, 7), :proper_types.integer(0, 3)})}
          end,
          false
        )

      Prop.check(gen, fn {shape, chunks, steps} -> model_holds?(shape, chunks, steps) end, 60)
    end
  end

  # Each step writes value `v` over the whole array (none for 0), then resizes; the model is
  # a map index -> value, restricted to the shape after each resize.
  defp model_holds?(shape, chunks, steps) do
    a = create(shape: shape, chunks: chunks)

    {a, model} =
      Enum.reduce(steps, {a, %{}}, fn {new_shape, v}, {a, model} ->
        model =
          if v == 0 do
            model
          else
            :ok = Array.set_slice(a, :binary.copy(<<v>>, Shape.product(a.metadata.shape)))
            Map.new(indices(a.metadata.shape), &{&1, v})
          end

        {:ok, a} = Array.resize(a, new_shape)
        {a, Map.filter(model, fn {idx, _} -> inside?(idx, new_shape) end)}
      end)

    expected = for idx <- indices(a.metadata.shape), into: <<>>, do: <<Map.get(model, idx, 0)>>
    grid = Indexing.grid_shape(a.metadata.shape, chunks)

    Array.get_slice!(a) == expected and
      Enum.all?(stored_chunks(a), fn "c" <> _ = key ->
        coords = key |> String.split("/") |> tl() |> Enum.map(&String.to_integer/1)
        inside?(List.to_tuple(coords), grid)
      end)
  end

  defp indices(shape) do
    shape
    |> Tuple.to_list()
    |> Enum.reduce([[]], fn n, acc -> for prefix <- acc, i <- 0..(n - 1)//1, do: prefix ++ [i] end)
    |> Enum.map(&List.to_tuple/1)
  end

  defp inside?(idx, shape) do
    Enum.zip(Tuple.to_list(idx), Tuple.to_list(shape)) |> Enum.all?(fn {i, n} -> i < n end)
  end

  describe "append/3" do
    for format <- [2, 3] do
      test "appends along the first and the last axis (v#{format})" do
        a = create(shape: {2, 3}, chunks: {2, 2}, dtype: :int32, zarr_format: unquote(format))
        :ok = Array.set_slice(a, i32([1, 2, 3, 4, 5, 6]))

        assert {:ok, a} = Array.append(a, i32([7, 8, 9, 10, 11, 12]))
        assert a.metadata.shape == {4, 3}
        assert {:ok, a} = Array.append(a, i32([-1, -2, -3, -4]), -1)
        assert a.metadata.shape == {4, 4}

        assert from_i32(Array.get_slice!(a)) ==
                 [1, 2, 3, -1, 4, 5, 6, -2, 7, 8, 9, -3, 10, 11, 12, -4]

        assert ExZarr.open!(storage: a.storage).metadata.shape == {4, 4}
      end
    end

    test "appends along a middle axis of a 3-d array" do
      a = create(shape: {2, 1, 2}, chunks: {1, 1, 1})
      :ok = Array.set_slice(a, <<1, 2, 3, 4>>)
      assert {:ok, a} = Array.append(a, <<5, 6, 7, 8, 9, 10, 11, 12>>, 1)
      assert a.metadata.shape == {2, 3, 2}
      assert Array.get_slice!(a) == <<1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12>>
    end

    test "appending nothing changes nothing; bad data and axes are errors" do
      a = create(shape: {2, 3})
      assert {:ok, ^a} = Array.append(a, <<>>)

      assert Array.append(a, <<1, 2>>) ==
               {:error, {:wrong_data_size, expected_multiple_of: 3, got: 2}}

      assert Array.append(a, <<1, 2>>, 2) == {:error, {:invalid_axis, 2}}
      assert Array.append(a, <<1, 2>>, -3) == {:error, {:invalid_axis, -1}}
      assert Array.append(a, <<1>>, :x) == {:error, {:invalid_axis, :x}}

      empty = create(shape: {2, 0})
      assert {:error, {:cannot_append, _}} = Array.append(empty, <<1>>, 0)
      assert {:ok, grown} = Array.append(empty, <<1, 2>>, 1)
      assert Array.get_slice!(grown) == <<1, 2>>
    end
  end
end
