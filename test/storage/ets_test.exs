defmodule ExZarr.Storage.ETSTest do
  use ExUnit.Case, async: true

  use ExZarr.StorageConformance,
    backend: ExZarr.Storage.ETS,
    opts: fn ctx ->
      name = :"ets_store_#{:erlang.phash2(ctx.test)}"
      on_exit(fn -> ExZarr.Storage.ETS.drop(name) end)
      [table_name: name]
    end

  alias ExZarr.Storage.{ETS, TableOwner}

  test "the same name opens the same values from any process", %{store: store} do
    name = store.state.table
    :ok = Storage.put(store, "k", "v")

    task = Task.async(fn -> Storage.new(ETS, table_name: name) end)
    {:ok, again} = Task.await(task)
    assert Storage.get(again, "k") == {:ok, "v"}
    assert :ets.info(name, :owner) == Process.whereis(TableOwner)
  end

  test "a slice of a larger binary is stored as a copy", %{store: store} do
    big = :crypto.strong_rand_bytes(8_000_000)
    :ok = Storage.put(store, "k", binary_part(big, 8, 80_000))
    {:ok, read} = Storage.get(store, "k")
    assert read == binary_part(big, 8, 80_000)
    assert :binary.referenced_byte_size(read) == 80_000
  end

  test "the table survives the process that created it, until drop/1" do
    name = :ets_store_lifetime
    task = Task.async(fn -> Storage.new(ETS, table_name: name) end)
    {:ok, store} = Task.await(task)
    :ok = Storage.put(store, "k", "v")
    assert Storage.get(store, "k") == {:ok, "v"}
    assert ETS.drop(name) == :ok
    assert :ets.info(name) == :undefined
    assert Storage.get(store, "k") == {:error, {:table_gone, name}}
  end

  test "a public set table of the user's is used as is" do
    name = :ets_store_users_own
    :ets.new(name, [:named_table, :public, :set])
    {:ok, store} = Storage.new(ETS, table_name: name)
    :ok = Storage.put(store, "k", "v")
    assert [{"k", "v", _generation}] = :ets.lookup(name, "k")
    assert :ets.info(name, :owner) == self()
  end

  test "unusable tables and bad names give errors" do
    :ets.new(:ets_store_protected, [:named_table, :protected, :set])
    :ets.new(:ets_store_bag, [:named_table, :public, :bag])

    assert Storage.new(ETS, table_name: :ets_store_protected) ==
             {:error, {:unusable_table, :ets_store_protected, :set, :protected}}

    assert Storage.new(ETS, table_name: :ets_store_bag) ==
             {:error, {:unusable_table, :ets_store_bag, :bag, :public}}

    assert Storage.new(ETS, []) == {:error, {:missing_option, :table_name}}
    assert Storage.new(ETS, table_name: "t") == {:error, {:invalid_table_name, "t"}}
    assert Storage.new(ETS, table_name: nil) == {:error, {:invalid_table_name, nil}}
  end

  test "concurrent readers on a shared table", %{store: store} do
    for i <- 1..100, do: :ok = Storage.put(store, "c/#{i}", <<i::32>>)

    counts =
      1..8
      |> Task.async_stream(fn _ ->
        Enum.count(1..100, fn i -> Storage.get(store, "c/#{i}") == {:ok, <<i::32>>} end)
      end)
      |> Enum.map(fn {:ok, n} -> n end)

    assert counts == List.duplicate(100, 8)
  end
end
