defmodule ExZarr.Storage.MemoryTest do
  use ExUnit.Case, async: true
  use ExZarr.StorageConformance, backend: :memory, opts: fn _ctx -> [owner: self()] end

  alias ExZarr.Storage.{Memory, TableOwner}

  test "the table outlives the process that opened the store" do
    task =
      Task.async(fn ->
        {:ok, store} = Storage.new(:memory, [])
        :ok = Storage.put(store, "k", "v")
        store
      end)

    store = Task.await(task)
    refute Process.alive?(task.pid)
    assert Storage.get(store, "k") == {:ok, "v"}
    assert :ets.info(store.state.table, :owner) == Process.whereis(TableOwner)
    assert Memory.drop(store.state) == :ok
    assert Storage.get(store, "k") == {:error, {:table_gone, store.state.table}}
    assert Storage.put(store, "k", "v") == {:error, {:table_gone, store.state.table}}
  end

  test "with :owner, the table goes when the owner exits" do
    owner = spawn(fn -> receive do: (:stop -> :ok) end)
    {:ok, store} = Storage.new(:memory, owner: owner)
    :ok = Storage.put(store, "k", "v")
    ref = Process.monitor(owner)
    send(owner, :stop)
    assert_receive {:DOWN, ^ref, _, _, _}
    # TableOwner handles the DOWN before our next call to it returns.
    {:ok, other} = TableOwner.create(owner: self())
    assert :ets.info(store.state.table) == :undefined
    :ok = TableOwner.drop(other)
  end

  test "two stores on one table share their values", %{store: store} do
    {:ok, other} = Storage.new(:memory, table: store.state.table)
    :ok = Storage.put(store, "k", "v")
    assert Storage.get(other, "k") == {:ok, "v"}
  end

  test "a whole binary is stored as is and ranges are sub-binaries of it", %{store: store} do
    value = :crypto.strong_rand_bytes(100_000)
    :ok = Storage.put(store, "k", value)
    {:ok, read} = Storage.get(store, "k")
    {:ok, part} = Storage.get(store, "k", {10, 100})
    assert read == value and part == binary_part(value, 10, 100)
    assert :binary.referenced_byte_size(part) == 100_000
  end

  test "a slice of a larger binary is stored as a copy, not pinning the larger one",
       %{store: store} do
    big = :crypto.strong_rand_bytes(8_000_000)

    for {key, value} <- [
          {"slice", binary_part(big, 100, 80_000)},
          {"iodata", [binary_part(big, 0, 80_000)]},
          {"nested", [[], [binary_part(big, 5, 70_000)]]}
        ] do
      :ok = Storage.put(store, key, value)
      {:ok, read} = Storage.get(store, key)
      assert read == IO.iodata_to_binary(value)
      assert :binary.referenced_byte_size(read) == byte_size(read)
    end
  end

  test "bad options give errors" do
    assert Storage.new(:memory, table: :no_such_table_here) ==
             {:error, {:no_such_table, :no_such_table_here}}

    assert Storage.new(:memory, table: "x") == {:error, {:no_such_table, "x"}}
    # a reference that is no table id (:ets.info/2 raised on it)
    ref = make_ref()
    assert Storage.new(:memory, table: ref) == {:error, {:no_such_table, ref}}
    assert Storage.new(:memory, owner: :not_a_pid) == {:error, {:invalid_owner, :not_a_pid}}
  end
end
