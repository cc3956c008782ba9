defmodule ExZarr.Storage.MnesiaTest do
  # Mnesia is one per node: these tests set up its directory and schema, so they run alone.
  use ExUnit.Case, async: false

  setup_all do
    random = Base.encode16(:crypto.strong_rand_bytes(6), case: :lower)
    dir = Path.join(System.tmp_dir!(), "ex_zarr_mnesia_" <> random)
    :stopped = :mnesia.stop()
    Application.put_env(:mnesia, :dir, String.to_charlist(dir))
    :ok = :mnesia.create_schema([node()])
    :ok = :mnesia.start()

    on_exit(fn ->
      :mnesia.stop()
      :mnesia.delete_schema([node()])
      File.rm_rf!(dir)
    end)

    :ok
  end

  use ExZarr.StorageConformance,
    backend: ExZarr.Storage.Mnesia,
    generations: false,
    opts: fn ctx ->
      table = :"zarr_#{:erlang.phash2(ctx.test)}"
      on_exit(fn -> :mnesia.delete_table(table) end)
      [table: table, copies: ctx[:copies] || :disc_copies]
    end

  alias ExZarr.Storage.Mnesia

  test "values are in the table's records and survive reopening", %{store: store} do
    table = store.state.table
    :ok = Storage.put(store, "c/0", ["a", "b"])
    assert :mnesia.dirty_read(table, "c/0") == [{table, "c/0", "ab"}]
    {:ok, again} = Storage.new(Mnesia, table: table)
    assert Storage.get(again, "c/0") == {:ok, "ab"}
    assert :mnesia.table_info(table, :storage_type) == :disc_copies
  end

  for copies <- [:disc_only_copies, :ram_copies] do
    @tag copies: copies
    test "#{copies} tables", %{store: store} do
      assert :mnesia.table_info(store.state.table, :storage_type) == unquote(copies)
      :ok = Storage.put(store, "k", "0123")
      assert Storage.get(store, "k", {1, 2}) == {:ok, "12"}
      assert Storage.supports_ranges?(store) == (unquote(copies) == :ram_copies)
    end
  end

  test "bad options and foreign tables give errors" do
    {:atomic, :ok} = :mnesia.create_table(:zarr_foreign, attributes: [:id, :a, :b])

    assert Storage.new(Mnesia, table: :zarr_foreign) ==
             {:error, {:incompatible_table, :zarr_foreign, [:id, :a, :b]}}

    assert Storage.new(Mnesia, []) == {:error, {:missing_option, :table}}
    assert Storage.new(Mnesia, table: "t") == {:error, {:invalid_option, :table, "t"}}

    assert Storage.new(Mnesia, table: :t, copies: :tape) ==
             {:error, {:invalid_option, :copies, :tape}}
  end

  test "a deleted table gives errors, not crashes", %{store: store} do
    {:atomic, :ok} = :mnesia.delete_table(store.state.table)
    assert {:error, {:mnesia, _}} = Storage.get(store, "k")
    assert {:error, {:mnesia, _}} = Storage.put(store, "k", "v")
    assert {:error, {:mnesia, _}} = Storage.list(store)
  end
end
