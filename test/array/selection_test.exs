Code.require_file("../sharding/counting_store.exs", __DIR__)

defmodule ExZarr.Array.SelectionTest do
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Storage}
  alias ExZarr.Test.CountingStore

  # -- a reference over the whole array's elements ------------------------------------------

  defp axis(i, size) when is_integer(i), do: [if(i < 0, do: i + size, else: i)]
  defp axis(:all, size), do: Enum.to_list(0..(size - 1)//1)

  defp axis(%Range{first: f, last: l, step: s}, size) do
    {a, b} = {if(f < 0, do: f + size, else: f), if(l < 0, do: l + size, else: l)}
    Enum.to_list(a..b//s)
  end

  defp axis([b | _] = mask, _size) when is_boolean(b),
    do: for({true, i} <- Enum.with_index(mask), do: i)

  defp axis(list, size), do: Enum.flat_map(list, &axis(&1, size))

  defp product(lists),
    do:
      Enum.reduce(Enum.reverse(lists), [[]], fn l, acc ->
        for i <- l, rest <- acc, do: [i | rest]
      end)

  defp ravel(coords, shape),
    do:
      Enum.zip(coords, Tuple.to_list(shape)) |> Enum.reduce(0, fn {i, n}, acc -> acc * n + i end)

  # The linear indices a selection picks, in output order.
  defp picked(shape, _chunks, {:orthogonal, sel}) do
    sel
    |> Tuple.to_list()
    |> Enum.with_index()
    |> Enum.map(fn {e, k} -> axis(e, elem(shape, k)) end)
    |> product()
    |> Enum.map(&ravel(&1, shape))
  end

  defp picked(shape, _chunks, {:coordinates, points}),
    do:
      Enum.map(
        points,
        &ravel(
          Enum.zip_with(Tuple.to_list(&1), Tuple.to_list(shape), fn i, n ->
            if i < 0, do: i + n, else: i
          end),
          shape
        )
      )

  defp picked(_shape, _chunks, {:mask, mask}),
    do: for({b, i} <- Enum.with_index(:binary.bin_to_list(mask)), b != 0, do: i)

  defp picked(shape, chunks, {:blocks, sel}) do
    ranges =
      for {e, k} <- Enum.with_index(Tuple.to_list(sel)) do
        {size, c} = {elem(shape, k), elem(chunks, k)}
        grid = div(size + c - 1, c)

        blocks =
          case e do
            :all -> 0..(grid - 1)
            i when is_integer(i) -> [if(i < 0, do: i + grid, else: i)]
            r -> axis(r, grid)
          end

        for b <- blocks, i <- (b * c)..(min(b * c + c, size) - 1)//1, do: i
      end

    ranges |> product() |> Enum.map(&ravel(&1, shape))
  end

  defp picked(shape, _chunks, {:step, {start, stop, step}}) do
    for(
      k <- 0..(tuple_size(shape) - 1),
      do: Enum.to_list(elem(start, k)..(elem(stop, k) - 1)//elem(step, k))
    )
    |> product()
    |> Enum.map(&ravel(&1, shape))
  end

  defp elements(data, _isz) when is_list(data), do: List.to_tuple(data)
  defp elements(data, isz), do: List.to_tuple(for <<e::binary-size(isz) <- data>>, do: e)

  defp join(list, true), do: list
  defp join(list, false), do: IO.iodata_to_binary(list)

  # -- random arrays and selections ---------------------------------------------------------

  defp rand_array(seed) do
    :rand.seed(:exsss, {seed, 5, 7})
    format = Enum.random([2, 3])
    dtype = Enum.random([:uint8, :int16, :float64, :string])
    ndim = :rand.uniform(3)
    shape = List.to_tuple(for _ <- 1..ndim, do: :rand.uniform(9))
    inner = List.to_tuple(for _ <- 1..ndim, do: :rand.uniform(4))
    sharded? = format == 3 and :rand.uniform(2) == 1

    chunks =
      if sharded?,
        do: Tuple.to_list(inner) |> Enum.map(&(&1 * :rand.uniform(2))) |> List.to_tuple(),
        else: inner

    opts =
      [shape: shape, chunks: inner, dtype: dtype, storage: :memory, zarr_format: format] ++
        if(sharded?, do: [shards: chunks], else: []) ++
        if(:rand.uniform(3) == 1, do: [chunk_cache: 1_000_000], else: [])

    {:ok, a} = ExZarr.create(opts)
    data = values(dtype, ExZarr.Shape.product(shape))
    :ok = Array.set_slice(a, data)
    {a, data}
  end

  defp values(:string, n), do: for(_ <- 1..n//1, do: Enum.random(["", "a", "bc", "déf"]))

  defp values(:float64, n),
    do: for(_ <- 1..n//1, into: <<>>, do: <<:rand.uniform(100) / 4::float-64-little>>)

  # (reproducible, and zero, the fill value, often: chunks not stored are written too)
  defp values(dtype, n),
    do:
      for(
        _ <- 1..(n * ExZarr.DType.itemsize(dtype))//1,
        into: <<>>,
        do: <<Enum.random([0, 0, :rand.uniform(256) - 1])>>
      )

  defp rand_selection(shape, chunks) do
    dims = Tuple.to_list(shape)

    case :rand.uniform(5) do
      1 ->
        {:orthogonal,
         List.to_tuple(
           for size <- dims do
             case :rand.uniform(5) do
               1 ->
                 :rand.uniform(2 * size) - 1 - size

               2 ->
                 :all

               3 ->
                 (a = :rand.uniform(size) - 1) &&
                   a..(a + :rand.uniform(size - a) - 1)//:rand.uniform(3)

               4 ->
                 for _ <- 1..:rand.uniform(5), do: :rand.uniform(2 * size) - 1 - size

               5 ->
                 for _ <- 1..size, do: :rand.uniform(2) == 1
             end
           end
         )}

      2 ->
        {:coordinates,
         for(
           _ <- 1..:rand.uniform(8),
           do: List.to_tuple(for(s <- dims, do: :rand.uniform(2 * s) - 1 - s))
         )}

      3 ->
        {:mask, for(_ <- 1..Enum.product(dims), into: <<>>, do: <<Enum.random([0, 1, 3])>>)}

      4 ->
        grid = Enum.zip_with(dims, Tuple.to_list(chunks), &div(&1 + &2 - 1, &2))

        {:blocks,
         List.to_tuple(
           for g <- grid, do: Enum.random([:all, :rand.uniform(g) - 1, 0..(g - 1)//1])
         )}

      5 ->
        start = Enum.map(dims, &(:rand.uniform(&1) - 1))
        stop = Enum.zip_with(start, dims, fn a, s -> a + :rand.uniform(s - a) end)

        {:step,
         {List.to_tuple(start), List.to_tuple(stop),
          List.to_tuple(Enum.map(dims, fn _ -> :rand.uniform(3) end))}}
    end
  end

  defp get(a, {:orthogonal, sel}), do: Array.get_orthogonal(a, sel)
  defp get(a, {:coordinates, sel}), do: Array.get_coordinates(a, sel)
  defp get(a, {:mask, sel}), do: Array.get_mask(a, sel)
  defp get(a, {:blocks, sel}), do: Array.get_blocks(a, sel)
  defp get(a, {:step, {s, e, st}}), do: Array.get_slice(a, start: s, stop: e, step: st)

  defp set(a, {:orthogonal, sel}, d), do: Array.set_orthogonal(a, sel, d)
  defp set(a, {:coordinates, sel}, d), do: Array.set_coordinates(a, sel, d)
  defp set(a, {:mask, sel}, d), do: Array.set_mask(a, sel, d)
  defp set(a, {:blocks, sel}, d), do: Array.set_blocks(a, sel, d)
  defp set(a, {:step, {s, e, st}}, d), do: Array.set_slice(a, d, start: s, stop: e, step: st)

  # -- properties ---------------------------------------------------------------------------

  test "reads and writes of every kind match the reference (dtypes, sharded, v2/v3, cached)" do
    for seed <- 1..150 do
      {a, data} = rand_array(seed)
      %{shape: shape, chunks: chunks, dtype: dtype} = a.metadata
      var? = dtype == :string
      isz = if var?, do: 0, else: ExZarr.DType.itemsize(dtype)
      elems = elements(data, isz)
      sel = rand_selection(shape, chunks)
      idx = picked(shape, chunks, sel)

      what =
        "seed #{seed} #{inspect(a.metadata.shape)} #{inspect(chunks)} #{dtype} #{inspect(sel)}"

      assert get(a, sel) == {:ok, join(Enum.map(idx, &elem(elems, &1)), var?)}, what

      new = values(dtype, length(idx))
      result = set(a, sel, new)
      assert result == :ok, what <> ": " <> inspect(result)
      # later values win where an element repeats
      written = Enum.zip(idx, Tuple.to_list(elements(new, isz))) |> Map.new()

      expected =
        for i <- 0..(tuple_size(elems) - 1)//1,
            do: Map.get_lazy(written, i, fn -> elem(elems, i) end)

      assert Array.get_slice(a) == {:ok, join(expected, var?)}, what
    end
  end

  test "points written into chunks that are not stored (one-element chunks)" do
    {:ok, a} = ExZarr.create(shape: {3}, chunks: {1}, dtype: :uint8, storage: :memory)
    :ok = Array.set_slice(a, <<0, 5, 0>>)
    assert Array.set_mask(a, <<1, 1, 0>>, <<7, 8>>) == :ok
    assert Array.set_coordinates(a, [{2}], <<9>>) == :ok
    assert Array.get_slice(a) == {:ok, <<7, 8, 9>>}
  end

  test "0-d arrays: every kind selects their one element" do
    for {dtype, v} <- [int16: <<7::16-little>>, string: ["hi"]] do
      {:ok, a} = ExZarr.create(shape: {}, chunks: {}, dtype: dtype, storage: :memory)
      :ok = Array.set_slice(a, v)
      two = if is_list(v), do: v ++ v, else: v <> v
      assert Array.get_orthogonal(a, {}) == {:ok, v}
      assert Array.get_coordinates(a, [{}, {}]) == {:ok, two}
      assert Array.get_mask(a, <<1>>) == {:ok, v}
      assert Array.get_blocks(a, {}) == {:ok, v}
      assert Array.get_slice(a, step: {}) == {:ok, v}
      assert Array.set_coordinates(a, [{}], v) == :ok
      assert Array.selection_shape(a, {}) == {:ok, {}}
    end
  end

  test "Access reads orthogonal selections and get_and_update writes them" do
    {:ok, a} = ExZarr.create(shape: {6, 4}, chunks: {4, 3}, dtype: :uint8, storage: :memory)
    :ok = Array.set_slice(a, for(i <- 0..23, into: <<>>, do: <<i>>))
    assert a[{0..5//2, -1}] == <<3, 11, 19>>
    assert a[{[5, 0], 1..2}] == <<21, 22, 1, 2>>
    assert {<<3, 11, 19>>, ^a} = Access.get_and_update(a, {0..5//2, -1}, &{&1, <<0, 0, 0>>})
    assert a[{:all, 3}] == <<0, 7, 0, 15, 0, 23>>
    assert_raise ExZarr.Error, fn -> a[{6, 0}] end
    assert_raise ExZarr.Error, ~r/fixed shape/, fn -> Access.pop(a, {0, 0}) end
  end

  defp sharded_uint8(store, shape, chunks, shards) do
    {:ok, a} =
      ExZarr.create(shape: shape, chunks: chunks, shards: shards, dtype: :uint8, storage: store)

    a
  end

  test "a coordinate selection of a sharded array fetches the index and the inner chunks it touches" do
    {:ok, mem} = Storage.new(:memory, [])
    {:ok, store} = Storage.new(CountingStore, inner: mem)

    a = sharded_uint8(store, {64, 64}, {8, 8}, {32, 32})

    :ok = Array.set_slice(a, :crypto.strong_rand_bytes(64 * 64))
    {:ok, a} = Array.new(a.metadata, a.storage)
    CountingStore.reads(store)
    {:ok, all} = Array.get_slice(a)
    CountingStore.reads(store)
    points = [{1, 1}, {33, 40}, {2, 3}, {63, 63}]
    assert {:ok, got} = Array.get_coordinates(a, points, coalesce_gap: 0)
    assert got == for({r, c} <- points, into: <<>>, do: binary_part(all, r * 64 + c, 1))
    reads = CountingStore.reads(store)
    # two shards; one inner chunk of each point (at most 64 bytes compressed, plus a frame),
    # the indexes cached by the full read; (1, 1) and (2, 3) share one
    assert Enum.sort(for {key, _range, _} <- reads, do: key) == ["c/0/0", "c/1/1", "c/1/1"]
    assert Enum.all?(reads, fn {_, {_offset, n}, bytes} -> n == bytes and bytes < 100 end)
  end

  # Each point costs a whole inner chunk's decode: many points over large inner chunks are
  # read shard by shard in tasks, a few stay in the calling process (ExZarr.Parallel's 512 KiB).
  test "point reads of a sharded array run in tasks when their inner chunks add up" do
    {:ok, mem} = Storage.new(:memory, [])
    {:ok, store} = Storage.new(CountingStore, inner: mem, notify: self())

    a = sharded_uint8(store, {1024, 1024}, {256, 256}, {512, 512})

    data = :crypto.strong_rand_bytes(1024 * 1024)
    :ok = Array.set_slice(a, data)

    readers = fn ->
      Stream.repeatedly(fn ->
        receive do
          {:counting_store_read, pid, _key} -> pid
        after
          0 -> nil
        end
      end)
      |> Enum.take_while(& &1)
    end

    readers.()
    :rand.seed(:exsss, {1, 2, 3})
    # four shards of four 64 KiB inner chunks, every inner chunk touched: 1 MiB of decoding
    many = for _ <- 1..200, do: {:rand.uniform(1024) - 1, :rand.uniform(1024) - 1}
    # two inner chunks: 128 KiB
    few = [{0, 0}, {600, 700}]

    for points <- [many, few] do
      assert {:ok, got} = Array.get_coordinates(a, points)
      assert got == for({r, c} <- points, into: <<>>, do: binary_part(data, r * 1024 + c, 1))
      assert readers.() != []
    end

    {:ok, _} = Array.get_coordinates(a, many)
    assert Enum.any?(readers.(), &(&1 != self()))
    {:ok, _} = Array.get_coordinates(a, few)
    assert Enum.all?(readers.(), &(&1 == self()))
  end

  test "bad selections and data are errors naming what is wrong" do
    {:ok, a} = ExZarr.create(shape: {4, 5}, chunks: {2, 2}, dtype: :int16, storage: :memory)

    assert Array.get_orthogonal(a, {0, 5}) ==
             {:error, {:index_out_of_range, axis: 1, index: 5, size: 5}}

    assert Array.get_orthogonal(a, {[true], :all}) ==
             {:error, {:wrong_mask_length, axis: 0, length: 1, size: 4}}

    assert {:error, {:invalid_step, axis: 0, step: -1, range: _}} =
             Array.get_orthogonal(a, {3..0, 0})

    assert Array.get_mask(a, <<1>>) == {:error, {:wrong_mask_size, expected: 20, got: 1}}

    assert Array.get_coordinates(a, [{0, 0}, {-5, 0}]) ==
             {:error, {:index_out_of_range, point: 1, axis: 0, index: -5, size: 4}}

    assert Array.set_orthogonal(a, {0, [1, 2]}, <<1::16>>) ==
             {:error, {:wrong_data_size, expected: 4, got: 2}}

    assert Array.set_coordinates(a, [{0, 0}], [<<1, 0>>]) ==
             {:error, {:invalid_data, "expected a binary of packed elements, got a list"}}

    assert Array.get_blocks(a, {0..1//2, 0}) == {:error, {:invalid_step, axis: 0, step: 2}}
    assert Array.get_orthogonal(a, {0, 0}, step: 1) == {:error, {:unknown_option, :step}}
    assert Array.selection_shape(a, {1, [0, 0, 1]}) == {:ok, {3}}
    assert Array.selection_shape(:nope, {1}) == {:error, {:invalid_argument, Array, :nope}}
    assert {:error, {:invalid_argument, Array, :nope}} = Array.get_mask(:nope, <<>>)
    assert_raise ExZarr.Error, fn -> Array.get_orthogonal!(a, {9, 0}) end

    # selections larger than memory are refused before they are planned (strings too)
    {:ok, huge} =
      ExZarr.create(shape: {2 ** 40}, chunks: {2 ** 20}, dtype: :string, storage: :memory)

    assert {:error, {:too_large, :selection, _, _}} = Array.get_orthogonal(huge, {0..-1//1})
    assert {:error, {:too_large, :selection, _, _}} = Array.get_slice(huge, step: {2})
  end
end
