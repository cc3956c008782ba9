defmodule ExZarr.ParallelTest do
  use ExUnit.Case, async: true

  alias ExZarr.{Parallel, Storage}

  test "local stores default to two chunks more than the dirty CPU schedulers, options override" do
    {:ok, a} = ExZarr.create(shape: {4}, chunks: {2}, dtype: :uint8, storage: :memory)
    dirty = :erlang.system_info(:dirty_cpu_schedulers_online)
    assert Parallel.concurrency(:chunks, a.storage) == dirty + 2
    assert Parallel.concurrency(:chunks, a.storage, max_concurrency: 5) == 5
    assert Parallel.concurrency(:chunks, a.storage, max_concurrency: 5, max_in_flight: 2) == 2
    assert Parallel.concurrency(:chunks, a.storage, max_in_flight: 1) == 1
    assert Parallel.concurrency(:requests) == 16
    assert Parallel.concurrency(:nodes) == 2 * System.schedulers_online()
    assert Parallel.concurrency(:cpu) == System.schedulers_online()
  end

  test "writes of small chunks keep up to four more in flight, holding at most 4 MiB" do
    {:ok, a} = ExZarr.create(shape: {4}, chunks: {2}, dtype: :uint8, storage: :memory)
    dirty = :erlang.system_info(:dirty_cpu_schedulers_online)
    mib = 1024 * 1024

    for {bytes, extra} <- [{1024, 4}, {mib, 4}, {2 * mib, 2}, {4 * mib, 1}, {64 * mib, 0}] do
      assert Parallel.concurrency(:chunk_writes, a.storage, chunk_bytes: bytes) ==
               dirty + 2 + extra
    end

    assert Parallel.concurrency(:chunk_writes, a.storage) == dirty + 2

    assert Parallel.concurrency(:chunk_writes, a.storage, chunk_bytes: 1024, max_concurrency: 3) ==
             3

    assert Parallel.concurrency(:chunk_writes, a.storage, chunk_bytes: 1024, max_in_flight: 2) ==
             2
  end

  test "remote stores keep more requests in flight" do
    {:ok, store} = Storage.new(:s3, bucket: "b", endpoint: "http://127.0.0.1:1", anonymous: true)

    assert Storage.io_concurrency(store) == ExZarr.Storage.HTTP.io_concurrency()
    assert Parallel.concurrency(:chunks, store) == ExZarr.Storage.HTTP.io_concurrency()
    assert Parallel.concurrency(:chunk_writes, store) == ExZarr.Storage.HTTP.io_concurrency()
    assert Storage.io_concurrency(elem(Storage.new(:memory, []), 1)) == nil
  end

  describe "map/3" do
    test "keeps the order by default, in tasks" do
      me = self()
      results = Parallel.map(Enum.to_list(1..20), &{&1, self() != me}, max_concurrency: 4)
      assert Enum.map(results, &elem(&1, 0)) == Enum.to_list(1..20)
      assert Enum.all?(results, &elem(&1, 1))
    end

    test "small work stays in the calling process" do
      me = self()
      assert Parallel.map([1, 2, 3], fn _ -> self() end, bytes: 3 * 1024) == [me, me, me]
      assert Parallel.map([1, 2], fn _ -> self() end, bytes: 10, min_bytes: 5) != [me, me]
      assert Parallel.map([1], fn _ -> self() end) == [me]
    end

    test "batches give every item's result, in order" do
      items = Enum.to_list(1..1000)

      assert Parallel.map(items, &(&1 * 2), batch: true, max_concurrency: 3) ==
               Enum.map(items, &(&1 * 2))
    end

    test "an item over its timeout is killed and reported" do
      results =
        Parallel.map([1, 2], fn n -> if n == 2, do: Process.sleep(5_000), else: n end,
          timeout: 100
        )

      assert results == [1, {:error, {:chunk_task_failed, :timeout}}]
    end
  end

  describe "chunks/5" do
    test "small local work runs inline, remote work always in tasks" do
      me = self()
      {:ok, memory} = Storage.new(:memory, [])
      assert Parallel.chunks([1, 2], fn _ -> self() end, memory, 2048, []) == [me, me]
      assert me not in Parallel.chunks([1, 2], fn _ -> self() end, memory, 1024 * 1024, [])

      {:ok, s3} = Storage.new(:s3, bucket: "b", endpoint: "http://127.0.0.1:1", anonymous: true)
      assert me not in Parallel.chunks([1, 2], fn _ -> self() end, s3, 1, [])
    end

    defmodule AskedStore do
      # A store that reports each time it is asked for its concurrency.
      def io_concurrency(test), do: send(test, :asked) && 3
    end

    # The most of `n` items `Parallel.chunks/6` runs at once as `kind` of work.
    defp peak(opts, kind \\ :chunks, n \\ 6) do
      {:ok, mem} = Storage.new(:memory, [])
      counts = :atomics.new(2, [])

      fun = fn _ ->
        ExZarr.Test.Peak.bump(counts, 2, :atomics.add_get(counts, 1, 1))
        Process.sleep(20)
        :atomics.sub(counts, 1, 1)
      end

      Parallel.chunks(Enum.to_list(1..n), fun, mem, 1_000_000_000, opts, kind)
      :atomics.get(counts, 2)
    end

    test "max_in_flight bounds the tasks whatever the concurrency" do
      assert peak(max_concurrency: 6, max_in_flight: 1) == 1
      assert peak(max_concurrency: 6, max_in_flight: 2) == 2
      assert peak(max_concurrency: 6) > 2
    end

    test "writes of small chunks run more at once than reads" do
      dirty = :erlang.system_info(:dirty_cpu_schedulers_online)
      assert peak([chunk_bytes: 1024], :chunks, 20) == dirty + 2
      assert peak([chunk_bytes: 1024], :chunk_writes, 20) == dirty + 6
      assert peak([chunk_bytes: 64 * 1024 * 1024], :chunk_writes, 20) == dirty + 2
    end

    test "asks the store for its concurrency once per call" do
      store = %Storage{module: AskedStore, state: self()}
      assert Parallel.chunks([1, 2], &(&1 * 2), store, 1, []) |> Enum.sort() == [2, 4]
      assert_received :asked
      refute_received :asked
    end
  end

  describe "stream/3" do
    test "one at a time in the consuming process, or in tasks" do
      me = self()
      one = Parallel.stream(1..3, fn _ -> {:ok, self()} end, max_concurrency: 1)
      assert Enum.to_list(one) == [me, me, me]
      many = Parallel.stream(1..30, &{:ok, &1 + 1}, max_concurrency: 4)
      assert Enum.to_list(many) == Enum.to_list(2..31)
    end

    test "an error or a timeout raises in the consumer, not in a task" do
      for n <- [1, 3] do
        fun = &if(&1 == 4, do: {:error, :bad}, else: {:ok, &1})
        stream = Parallel.stream(1..5, fun, max_concurrency: n)
        assert_raise ExZarr.Error, fn -> Enum.to_list(stream) end
      end

      sleepy = fn n -> if n == 2, do: Process.sleep(5_000), else: {:ok, n} end
      slow = Parallel.stream([1, 2], sleepy, max_concurrency: 2, timeout: 100)
      assert_raise ExZarr.Error, fn -> Enum.to_list(slow) end
    end
  end
end
