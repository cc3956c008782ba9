defmodule ExZarr.ArrayTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Array

  alias ExZarr.Array

  defp u8(list), do: :erlang.list_to_binary(list)
  defp seq(n), do: u8(Enum.map(0..(n - 1), &rem(&1, 251)))

  defp f64(list), do: for(x <- list, into: <<>>, do: <<x::float-64-little>>)

  defp create(opts) do
    {:ok, a} =
      ExZarr.create(Keyword.merge([storage: :memory, dtype: :uint8, compressor: nil], opts))

    a
  end

  defmodule AskedStore do
    # The plain memory store, that tells the calling process each time it is asked for its
    # concurrency.
    @behaviour ExZarr.Storage

    for {fun, arity} <- [init: 1, get: 3, put: 3, delete: 2, list: 2, supports_ranges?: 1] do
      args = Macro.generate_arguments(arity, __MODULE__)
      defdelegate unquote(fun)(unquote_splicing(args)), to: ExZarr.Test.PlainStore
    end

    def io_concurrency(_state), do: send(self(), :asked) && 3
  end

  test "a read or write of many chunks asks the store for its concurrency once" do
    {:ok, store} = ExZarr.Storage.new(AskedStore, [])
    a = create(storage: store, shape: {4, 4}, chunks: {2, 2})

    assert :ok = Array.set_slice(a, seq(16))
    assert_received :asked
    refute_received :asked

    assert Array.get_slice(a) == {:ok, seq(16)}
    assert_received :asked
    refute_received :asked
  end

  defmodule SlowWritesStore do
    # The plain memory store whose writes take 20 ms each and count how many run at once, in
    # the atomics (now, peak) under {SlowWritesStore, :counts} in :persistent_term.
    @behaviour ExZarr.Storage

    for {fun, arity} <- [init: 1, get: 3, delete: 2, list: 2, supports_ranges?: 1] do
      args = Macro.generate_arguments(arity, __MODULE__)
      defdelegate unquote(fun)(unquote_splicing(args)), to: ExZarr.Test.PlainStore
    end

    def put(state, key, value) do
      counts = :persistent_term.get({__MODULE__, :counts})
      ExZarr.Test.Peak.bump(counts, 2, :atomics.add_get(counts, 1, 1))
      Process.sleep(20)
      :atomics.sub(counts, 1, 1)
      ExZarr.Test.PlainStore.put(state, key, value)
    end
  end

  test "a write of small chunks keeps more of them in flight than the default for reads" do
    counts = :atomics.new(2, [])
    :persistent_term.put({SlowWritesStore, :counts}, counts)
    {:ok, store} = ExZarr.Storage.new(SlowWritesStore, [])
    a = create(storage: store, shape: {1024, 1024}, chunks: {256, 256})

    assert :ok = Array.set_slice(a, :crypto.strong_rand_bytes(1024 * 1024))
    dirty = :erlang.system_info(:dirty_cpu_schedulers_online)
    assert :atomics.get(counts, 2) == dirty + 6
  after
    :persistent_term.erase({SlowWritesStore, :counts})
  end

  test "a fresh array reads as its fill value" do
    a = create(shape: {3, 5}, chunks: {2, 2}, fill_value: 9)
    assert Array.get_slice(a) == {:ok, :binary.copy(<<9>>, 15)}
    assert Array.read_chunk(a, {0, 0}) == {:error, :not_found}
  end

  for format <- [2, 3] do
    test "round trips whole and partial regions across chunk borders (v#{format})" do
      a = create(shape: {7, 9}, chunks: {3, 4}, zarr_format: unquote(format))
      data = seq(63)
      assert :ok = Array.set_slice(a, data)
      assert {:ok, ^data} = Array.get_slice(a)

      # a region crossing four chunks, from the row-major reference
      {:ok, region} = Array.get_slice(a, start: {2, 3}, stop: {5, 6})
      expected = for r <- 2..4, c <- 3..5, into: <<>>, do: <<:binary.at(data, r * 9 + c)>>
      assert region == expected
    end
  end

  test "partial writes merge into existing chunks and leave the rest untouched" do
    a = create(shape: {4, 4}, chunks: {2, 2}, fill_value: 0)
    :ok = Array.set_slice(a, :binary.copy(<<1>>, 16))
    :ok = Array.set_slice(a, u8([5, 6, 7, 8]), start: {1, 1}, stop: {3, 3})

    assert {:ok, bin} = Array.get_slice(a)

    assert bin ==
             u8([1, 1, 1, 1, 1, 5, 6, 1, 1, 7, 8, 1, 1, 1, 1, 1])
  end

  test "a selection as large as a chunk but ending in an edge chunk is split, not stored whole" do
    a = create(shape: {12}, chunks: {5}, fill_value: 99)
    :ok = Array.set_slice(a, u8([1, 2, 3, 4, 5]), start: {7}, stop: {12})
    assert Array.read_chunk(a, {2}) == {:ok, u8([4, 5, 99, 99, 99])}
    assert Array.get_slice(a, start: {5}, stop: {12}) == {:ok, u8([99, 99, 1, 2, 3, 4, 5])}
  end

  test "edge chunks are stored at full chunk size, padded with fill value" do
    a = create(shape: {3}, chunks: {2}, fill_value: 42)
    :ok = Array.set_slice(a, u8([1, 2, 3]))
    assert Array.read_chunk(a, {1}) == {:ok, u8([3, 42])}
    assert {:ok, raw} = ExZarr.Storage.get(a.storage, "c/1")
    assert byte_size(raw) > 0
  end

  test "all-fill chunks are not stored, and an existing one is deleted" do
    a = create(shape: {4}, chunks: {2}, fill_value: 0, compressor: nil)
    :ok = Array.set_slice(a, u8([1, 2, 0, 0]))
    assert {:ok, _} = ExZarr.Storage.get(a.storage, "c/0")
    assert {:error, :not_found} = ExZarr.Storage.get(a.storage, "c/1")
    :ok = Array.set_slice(a, u8([0, 0]), start: {0}, stop: {2})
    assert {:error, :not_found} = ExZarr.Storage.get(a.storage, "c/0")
  end

  test "write_empty_chunks: true stores fill chunks" do
    a = create(shape: {4}, chunks: {2}, fill_value: 0, write_empty_chunks: true)
    :ok = Array.set_slice(a, u8([0, 0, 0, 0]))
    assert {:ok, _} = ExZarr.Storage.get(a.storage, "c/1")
  end

  test "NaN fill chunks count as empty, any NaN payload" do
    a = create(shape: {2}, chunks: {2}, dtype: :float64, fill_value: :nan)
    :ok = Array.set_slice(a, <<0x7FF8000000000001::64-little, 0xFFF8000000000000::64-little>>)
    assert {:error, :not_found} = ExZarr.Storage.get(a.storage, "c/0")
    :ok = Array.set_slice(a, f64([1.5, 2.5]))
    assert {:ok, _} = ExZarr.Storage.get(a.storage, "c/0")
  end

  test "0-d arrays" do
    a = create(shape: {}, chunks: {}, dtype: :float64, fill_value: 1.0)
    assert Array.get_slice(a) == {:ok, f64([1.0])}
    :ok = Array.set_slice(a, f64([3.25]))
    assert Array.get_slice(a) == {:ok, f64([3.25])}
    assert {:ok, _} = ExZarr.Storage.get(a.storage, "c")
  end

  test "F order (v2) and transpose (v3) store permuted chunks but read back in C order" do
    for opts <- [[zarr_format: 2, order: "F"], [codecs: transpose_codecs()]] do
      a = create([shape: {2, 3}, chunks: {2, 3}, compressor: nil] ++ opts)
      :ok = Array.set_slice(a, u8([1, 2, 3, 4, 5, 6]))
      assert Array.get_slice(a) == {:ok, u8([1, 2, 3, 4, 5, 6])}
      {:ok, raw} = ExZarr.Storage.get(a.storage, Array.chunk_key(a, {0, 0}))
      assert raw == u8([1, 4, 2, 5, 3, 6])
    end
  end

  test "big-endian arrays store swapped bytes" do
    a = create(shape: {2}, chunks: {2}, dtype: :uint16, endian: :big, compressor: nil)
    :ok = Array.set_slice(a, <<1, 0, 2, 0>>)
    assert {:ok, <<0, 1, 0, 2>>} = ExZarr.Storage.get(a.storage, "c/0")
    assert Array.get_slice(a) == {:ok, <<1, 0, 2, 0>>}
  end

  test "errors: out of bounds, wrong sizes, bad chunk coordinates, corrupt chunks" do
    a = create(shape: {4}, chunks: {2}, compressor: %{id: "gzip", level: 1})
    assert {:error, {:out_of_bounds, _}} = Array.get_slice(a, start: {0}, stop: {5})

    assert {:error, {:wrong_data_size, expected: 2, got: 3}} =
             Array.set_slice(a, u8([1, 2, 3]), start: {0}, stop: {2})

    assert {:error, {:invalid_chunk_coords, {2}}} = Array.read_chunk(a, {2})
    assert {:error, {:wrong_data_size, expected: 2, got: 1}} = Array.write_chunk(a, {0}, u8([1]))

    :ok = ExZarr.Storage.put(a.storage, "c/0", "not gzip")
    assert {:error, {:corrupt_chunk, "c/0", _}} = Array.get_slice(a)
    assert {:ok, "not gzip"} = ExZarr.Storage.get(a.storage, "c/0")
  end

  test "data that is not a binary is an error, not a crash" do
    a = create(shape: {4}, chunks: {2})
    assert {:error, {:invalid_data, _}} = Array.set_slice(a, [1, 2, 3, 4])
    assert {:error, {:invalid_data, _}} = Array.write_chunk(a, {0}, :nope)
  end

  test "read_chunk / write_chunk / chunk_stream" do
    a = create(shape: {5}, chunks: {2}, fill_value: 7)
    :ok = Array.write_chunk(a, {1}, u8([3, 4]))
    assert Array.read_chunk(a, {1}) == {:ok, u8([3, 4])}

    for parallel <- [1, 3] do
      assert a |> Array.chunk_stream(parallel: parallel) |> Enum.to_list() ==
               [{{0}, u8([7, 7])}, {{1}, u8([3, 4])}, {{2}, u8([7, 7])}]
    end
  end

  test "v2 chunk keys with both separators" do
    for {sep, key} <- [{".", "1.0"}, {"/", "1/0"}] do
      a = create(shape: {4, 2}, chunks: {2, 2}, zarr_format: 2, dimension_separator: sep)
      :ok = Array.set_slice(a, u8([1, 1]), start: {2, 0}, stop: {3, 2})
      assert {:ok, _} = ExZarr.Storage.get(a.storage, key)
    end
  end

  defp transpose_codecs do
    [
      %{name: "transpose", configuration: %{"order" => [1, 0]}},
      %{name: "bytes", configuration: %{}}
    ]
  end
end
