defmodule ExZarr.Storage.LockTest do
  use ExUnit.Case, async: true
  @moduletag :tmp_dir

  alias ExZarr.Storage
  alias ExZarr.Storage.Lock

  test "one holder at a time per object, across handles", ctx do
    {:ok, one} = Storage.new(:filesystem, path: ctx.tmp_dir)
    {:ok, two} = Storage.new(:filesystem, path: ctx.tmp_dir <> "/.")
    counter = :ets.new(:counter, [:public])
    :ets.insert(counter, {:n, 0})

    # a read-modify-write of a counter that loses updates unless serialized
    1..100
    |> Task.async_stream(fn i ->
      Lock.run(if(rem(i, 2) == 0, do: one, else: two), "c/0", fn ->
        [{:n, n}] = :ets.lookup(counter, :n)
        Process.sleep(rem(i, 3))
        :ets.insert(counter, {:n, n + 1})
      end)
    end)
    |> Stream.run()

    assert :ets.lookup(counter, :n) == [{:n, 100}]
  end

  test "run returns what the function returns; a holder may take its lock again", ctx do
    {:ok, store} = Storage.new(:filesystem, path: ctx.tmp_dir)
    assert Lock.run(store, "k", fn -> Lock.run(store, "k", fn -> {:ok, 1} end) end) == {:ok, 1}
    assert_raise RuntimeError, fn -> Lock.run(store, "k", fn -> raise "boom" end) end
    # the raise released it
    assert Task.await(Task.async(fn -> Lock.run(store, "k", fn -> :free end) end)) == :free
  end

  test "a holder that dies releases its lock; other objects are never blocked" do
    {:ok, store} = Storage.new(:memory, owner: self())
    test = self()

    holder =
      spawn(fn ->
        Lock.run(store, "c/0", fn ->
          send(test, :held)
          Process.sleep(:infinity)
        end)
      end)

    assert_receive :held
    assert Lock.run(store, "c/1", fn -> :other end) == :other
    waiter = Task.async(fn -> Lock.run(store, "c/0", fn -> :got_it end) end)
    assert Task.yield(waiter, 100) == nil
    Process.exit(holder, :kill)
    assert Task.await(waiter) == :got_it
  end

  test "a waiter that dies in the queue is passed over" do
    {:ok, store} = Storage.new(:memory, owner: self())
    test = self()
    release = make_ref()

    holder =
      spawn(fn ->
        Lock.run(store, "c/0", fn ->
          send(test, :held)
          receive do: (^release -> :ok)
        end)
      end)

    assert_receive :held
    doomed = spawn(fn -> Lock.run(store, "c/0", fn -> send(test, :doomed_ran) end) end)
    Process.sleep(50)
    waiter = Task.async(fn -> Lock.run(store, "c/0", fn -> :got_it end) end)
    Process.sleep(50)
    Process.exit(doomed, :kill)
    send(holder, release)
    assert Task.await(waiter) == :got_it
    refute_received :doomed_ran
    # and the lock is free again
    assert Lock.run(store, "c/0", fn -> :free end) == :free
  end

  test "identity: the same object through any handle, other objects apart", ctx do
    {:ok, a} = Storage.new(:filesystem, path: ctx.tmp_dir)
    {:ok, b} = Storage.new(:filesystem, path: Path.join(ctx.tmp_dir, "sub/.."))
    {:ok, c} = Storage.new(:filesystem, path: Path.join(ctx.tmp_dir, "sub"))
    assert Storage.identity(a, "sub/c/0") == Storage.identity(b, "sub/c/0")
    assert Storage.identity(a, "sub/c/0") == Storage.identity(c, "c/0")
    assert Storage.identity(a, "c/0") != Storage.identity(a, "c/1")
    # a store at the filesystem's root, a trailing separator in the path
    {:ok, root} = Storage.new(:filesystem, path: "/")
    {:ok, d} = Storage.new(:filesystem, path: ctx.tmp_dir <> "/")

    assert Storage.identity(root, String.trim_leading(d.state.root, "/") <> "/c/0") ==
             Storage.identity(d, "c/0")

    {:ok, m1} = Storage.new(:memory, owner: self())
    {:ok, m2} = Storage.new(:memory, table: m1.state.table)
    {:ok, m3} = Storage.new(:memory, owner: self())
    assert Storage.identity(m1, "k") == Storage.identity(m2, "k")
    assert Storage.identity(m1, "k") != Storage.identity(m3, "k")

    {:ok, e1} = Storage.new(:ets, table_name: :lock_test_named)
    {:ok, e2} = Storage.new(:memory, table: :ets.whereis(:lock_test_named))
    assert Storage.identity(e1, "k") == Storage.identity(e2, "k")

    {:ok, cached} = Storage.new(:cache, inner: a, owner: self())
    assert Storage.identity(cached, "c/0") == Storage.identity(a, "c/0")
  end
end
