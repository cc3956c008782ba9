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

  test "the guide's table_name: works, as table: does; both must agree" do
    {:ok, store} = Storage.new(:mnesia, table_name: :zarr_guide_name)
    on_exit(fn -> :mnesia.delete_table(:zarr_guide_name) end)
    :ok = Storage.put(store, "k", "v")
    {:ok, again} = Storage.new(:mnesia, table: :zarr_guide_name)
    assert Storage.get(again, "k") == {:ok, "v"}
    assert {:ok, _} = Storage.new(:mnesia, table: :zarr_guide_name, table_name: :zarr_guide_name)

    assert Storage.new(:mnesia, table: :a, table_name: :b) ==
             {:error, {:conflicting_options, :table_name, :table}}

    assert Storage.new(:mnesia, table_name: "t") == {:error, {:invalid_option, :table_name, "t"}}
  end

  test "a new table is in RAM by default; copies: must match an existing table's" do
    {:ok, store} = Storage.new(:mnesia, table_name: :zarr_default_copies)
    on_exit(fn -> :mnesia.delete_table(:zarr_default_copies) end)
    assert :mnesia.table_info(:zarr_default_copies, :storage_type) == :ram_copies
    assert store.state.copies == :ram_copies
    assert {:ok, _} = Storage.new(:mnesia, table_name: :zarr_default_copies, copies: :ram_copies)

    assert Storage.new(:mnesia, table_name: :zarr_default_copies, copies: :disc_copies) ==
             {:error, {:incompatible_table, :zarr_default_copies, {:copies, :ram_copies}}}
  end

  test "a slice of a larger binary is stored as a copy", %{store: store} do
    big = :crypto.strong_rand_bytes(1_000_000)
    :ok = Storage.put(store, "k", binary_part(big, 1, 70_000))
    [{_, "k", stored}] = :mnesia.dirty_read(store.state.table, "k")
    assert stored == binary_part(big, 1, 70_000)
    assert :binary.referenced_byte_size(stored) == 70_000
  end

  test "bad options and foreign tables give errors" do
    {:atomic, :ok} = :mnesia.create_table(:zarr_foreign, attributes: [:id, :a, :b])

    assert Storage.new(Mnesia, table: :zarr_foreign) ==
             {:error, {:incompatible_table, :zarr_foreign, [:id, :a, :b]}}

    assert Storage.new(Mnesia, []) == {:error, {:missing_option, :table_name}}
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

defmodule ExZarr.Storage.MnesiaFreshNodeTest do
  # What a user of a fresh node sees: Mnesia not set up at all (no schema on disc).
  use ExUnit.Case, async: false

  alias ExZarr.Storage

  @moduletag :tmp_dir

  setup %{tmp_dir: dir} do
    previous = Application.get_env(:mnesia, :dir)
    :stopped = :mnesia.stop()
    Application.put_env(:mnesia, :dir, String.to_charlist(Path.join(dir, "mnesia")))

    on_exit(fn ->
      :mnesia.stop()
      if previous, do: Application.put_env(:mnesia, :dir, previous)
      if previous == nil, do: Application.delete_env(:mnesia, :dir)
    end)
  end

  test "the default works out of the box, in RAM, writing nothing to disc", %{tmp_dir: dir} do
    assert {:ok, store} = Storage.new(:mnesia, table_name: :my_array_chunks)
    :ok = Storage.put(store, "zarr.json", "{}")
    assert Storage.get(store, "zarr.json") == {:ok, "{}"}
    assert :mnesia.table_info(:schema, :storage_type) == :ram_copies
    refute File.exists?(Path.join(dir, "mnesia"))

    {:ok, a} =
      ExZarr.create(storage: :mnesia, table_name: :guide_chunks, shape: {4}, dtype: :int8)

    :ok = ExZarr.Array.set_slice(a, <<1, 2, 3, 4>>)
    {:ok, b} = ExZarr.open(storage: :mnesia, table_name: :guide_chunks)
    assert ExZarr.Array.get_slice(b) == {:ok, <<1, 2, 3, 4>>}
  end

  test "copies: :disc_copies makes the disc schema and survives a restart", %{tmp_dir: dir} do
    assert {:ok, store} = Storage.new(:mnesia, table_name: :zarr_on_disc, copies: :disc_copies)
    assert :mnesia.table_info(:schema, :storage_type) == :disc_copies
    assert File.exists?(Path.join([dir, "mnesia", "schema.DAT"]))
    :ok = Storage.put(store, "c/0", "persisted")

    :stopped = :mnesia.stop()
    assert {:ok, again} = Storage.new(:mnesia, table_name: :zarr_on_disc)
    assert again.state.copies == :disc_copies
    assert Storage.get(again, "c/0") == {:ok, "persisted"}

    assert {:ok, only} =
             Storage.new(:mnesia, table_name: :zarr_disc_only, copies: :disc_only_copies)

    assert only.state.copies == :disc_only_copies
  end

  test "a disc schema that cannot be made is a clear error", %{tmp_dir: dir} do
    # The directory's place is taken by a file.
    File.write!(Path.join(dir, "mnesia"), "")
    {:ok, _} = Storage.new(:mnesia, table_name: :zarr_in_ram)

    assert {:error, {:mnesia_needs_disc_schema, :zarr_wants_disc, _reason}} =
             Storage.new(:mnesia, table_name: :zarr_wants_disc, copies: :disc_copies)
  end
end
