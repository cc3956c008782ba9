defmodule ExZarr.Sharding.IndexCacheTest do
  # Not async: emptying the shared table must not race other tests' cached indexes.
  use ExUnit.Case, async: false

  alias ExZarr.Sharding.IndexCache

  test "entries are per handle; put_new keeps, put replaces; the table is bounded" do
    table = IndexCache.table()
    assert table != nil
    {a, b} = {make_ref(), make_ref()}

    :ok = IndexCache.put_new(table, a, "c/0", "old")
    :ok = IndexCache.put_new(table, a, "c/0", "stale")
    assert IndexCache.fetch(table, a, "c/0") == {:ok, "old"}
    assert IndexCache.fetch(table, b, "c/0") == :error
    :ok = IndexCache.put(table, a, "c/0", "new")
    assert IndexCache.fetch(table, a, "c/0") == {:ok, "new"}

    big = :binary.copy(<<0>>, 65 * 1024 * 1024)
    :ok = IndexCache.put(table, b, "c/1", big)
    assert IndexCache.fetch(table, a, "c/0") == :error
    assert IndexCache.fetch(table, b, "c/1") == {:ok, big}
    :ok = IndexCache.delete(table, b, "c/1")
    assert IndexCache.fetch(table, b, "c/1") == :error

    assert IndexCache.fetch(nil, a, "c/0") == :error
    assert IndexCache.put(nil, a, "c/0", "x") == :ok
  end
end
