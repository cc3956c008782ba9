defmodule ExZarr.Storage.TableOwnerTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.TableOwner

  test "named tables are created once and shared; drop deletes them" do
    {:ok, :table_owner_test_shared} = TableOwner.create(name: :table_owner_test_shared)
    {:ok, :table_owner_test_shared} = TableOwner.create(name: :table_owner_test_shared)
    assert :ets.info(:table_owner_test_shared, :owner) == Process.whereis(TableOwner)
    assert :ets.info(:table_owner_test_shared, :protection) == :public
    assert :ok = TableOwner.drop(:table_owner_test_shared)
    assert :ets.info(:table_owner_test_shared) == :undefined
    assert :ok = TableOwner.drop(:table_owner_test_shared)
  end

  test "a name held by someone else's table is an error" do
    :ets.new(:table_owner_test_foreign, [:named_table])

    assert TableOwner.create(name: :table_owner_test_foreign) ==
             {:error, {:table_name_taken, :table_owner_test_foreign}}

    # Dropping it is refused silently: TableOwner only deletes its own tables.
    assert :ok = TableOwner.drop(:table_owner_test_foreign)
    assert :ets.info(:table_owner_test_foreign, :owner) == self()
  end

  test "a dropped name can be reused without the first owner's exit dropping the new table" do
    owner = spawn(fn -> receive do: (:stop -> :ok) end)
    {:ok, name} = TableOwner.create(name: :table_owner_test_reuse, owner: owner)
    :ok = TableOwner.drop(name)
    {:ok, ^name} = TableOwner.create(name: name)
    ref = Process.monitor(owner)
    send(owner, :stop)
    assert_receive {:DOWN, ^ref, _, _, _}
    # A call to TableOwner is handled after the DOWN it received before.
    {:ok, other} = TableOwner.create([])
    assert :ets.info(name, :owner) == Process.whereis(TableOwner)
    :ok = TableOwner.drop(name)
    :ok = TableOwner.drop(other)
  end

  test "bad arguments give errors and leave the owner running" do
    pid = Process.whereis(TableOwner)
    assert TableOwner.create(name: "t") == {:error, {:invalid_table_name, "t"}}
    assert TableOwner.create(owner: :me) == {:error, {:invalid_owner, :me}}
    assert Process.whereis(TableOwner) == pid
  end
end
