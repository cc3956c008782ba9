defmodule ExZarr.Storage.UpdateTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage
  alias ExZarr.Storage.{Backoff, Memory}

  doctest Backoff

  defmodule NoConditions do
    @moduledoc "The memory store without `put_if/4`: a backend that cannot do conditions."
    @behaviour ExZarr.Storage
    alias ExZarr.Storage.Memory

    @impl true
    defdelegate init(opts), to: Memory
    @impl true
    defdelegate get(state, key, range), to: Memory
    @impl true
    defdelegate put(state, key, value), to: Memory
    @impl true
    defdelegate delete(state, key), to: Memory
    @impl true
    defdelegate list(state, prefix), to: Memory
    @impl true
    defdelegate supports_ranges?(state), to: Memory
    @impl true
    defdelegate get_ranges_with_generation(state, key, ranges, expected), to: Memory
    @impl true
    defdelegate identity(state, key), to: Memory
  end

  use ExZarr.StorageConformance,
    backend: NoConditions,
    conditions: false,
    large_size: 1_000_000,
    opts: fn _ctx -> [owner: self()] end

  defp memory do
    {:ok, store} = Storage.new(:memory, owner: self())
    store
  end

  test "the backoff grows exponentially up to its cap, with full jitter" do
    assert Enum.map(0..6, &Backoff.cap(&1, 10, 300)) == [10, 20, 40, 80, 160, 300, 300]
    assert Backoff.cap(1000, 10, 300) == 300
    # a base of 0 never waits
    {micros, :ok} = :timer.tc(fn -> Enum.each(1..20, fn _ -> Backoff.sleep(3, 0, 100) end) end)
    assert micros < 100_000
  end

  test "a writer that always loses gives up after the attempts, calling fun once each" do
    store = memory()
    :ok = Storage.put(store, "k", "0")
    counter = :counters.new(1, [])

    rival = fn current ->
      :counters.add(counter, 1, 1)
      # another writer changes the value between our read and our write
      :ok = Storage.put(store, "k", current <> "!")
      {:write, "mine", :ok}
    end

    assert Storage.update(store, "k", rival, attempts: 4, base_backoff: 0) ==
             {:error, {:write_conflict, "k", 4}}

    assert :counters.get(counter, 1) == 4
    assert Storage.get(store, "k") == {:ok, "0!!!!"}
  end

  test "writers on one node queue on the node lock and never conflict" do
    store = memory()
    counter = :counters.new(1, [])

    1..40
    |> Task.async_stream(
      fn _ ->
        Storage.update(store, "n", fn current ->
          :counters.add(counter, 1, 1)
          n = if current, do: String.to_integer(current), else: 0
          {:write, Integer.to_string(n + 1), :ok}
        end)
      end,
      max_concurrency: 20
    )
    |> Enum.each(fn {:ok, {:ok, :ok, _}} -> :ok end)

    assert Storage.get(store, "n") == {:ok, "40"}
    assert :counters.get(counter, 1) == 40
  end

  test "{:delete, reply} removes the value on the generation read, in one step on memory" do
    store = memory()
    :ok = Storage.put(store, "k", "v")
    assert {:ok, :gone, nil} = Storage.update(store, "k", fn "v" -> {:delete, :gone} end)
    assert Storage.get(store, "k") == {:error, :not_found}
    # nothing to delete: nothing happens
    assert {:ok, :none, nil} = Storage.update(store, "k", fn nil -> {:delete, :none} end)

    :ok = Storage.put(store, "k", "v")
    {:ok, [_], generation} = Storage.get_ranges_with_generation(store, "k", [nil])
    :ok = Storage.put(store, "k", "w")
    assert Storage.delete_if(store, "k", generation) == {:error, :generation_mismatch}
    assert Storage.get(store, "k") == {:ok, "w"}
    {:ok, [_], generation} = Storage.get_ranges_with_generation(store, "k", [nil])
    assert Storage.delete_if(store, "k", generation) == :ok
    assert Storage.get(store, "k") == {:error, :not_found}
  end

  test "a delete that loses to another writer reads again and keeps the new value" do
    store = memory()
    :ok = Storage.put(store, "k", "old")
    parent = self()

    result =
      Storage.update(
        store,
        "k",
        fn
          "old" ->
            # another writer rewrites the value between the read and the delete
            if Process.get(:raced) == nil do
              Process.put(:raced, true)
              :ok = Storage.put(store, "k", "new")
              send(parent, :raced)
            end

            {:delete, :deleted}

          "new" ->
            {:keep, :kept}
        end,
        node_lock: false
      )

    assert_received :raced
    assert {:ok, :kept, _generation} = result
    assert Storage.get(store, "k") == {:ok, "new"}
  end

  test "a value whose generation is unknown cannot be updated on a condition" do
    store = memory()
    # a row put there by other code, without a generation
    :ets.insert(store.state.table, {"raw", "v"})

    assert Storage.update(store, "raw", fn _ -> {:write, "w", :ok} end) ==
             {:error, {:generation_unknown, "raw"}}

    assert Storage.get(store, "raw") == {:ok, "v"}
  end

  test "bad arguments are errors" do
    store = memory()

    assert Storage.update(store, "k", :not_a_fun) ==
             {:error, {:invalid_argument, :fun, :not_a_fun}}

    assert Storage.update(:nope, "k", fn _ -> {:keep, 1} end) ==
             {:error, {:invalid_argument, Storage, :nope}}

    assert Storage.update(store, "k", fn _ -> {:keep, 1} end, [:x]) ==
             {:error, {:invalid_options, [:x]}}

    for {name, bad} <- [
          base_backoff: -1,
          max_backoff: 1.5,
          node_lock: :yes,
          without_conditions: :ok
        ] do
      assert Storage.update(store, "k", fn _ -> {:keep, 1} end, [{name, bad}]) ==
               {:error, {:invalid_option, name, bad}}
    end

    assert Storage.put_if(:nope, "k", "v", :absent) ==
             {:error, {:invalid_argument, Storage, :nope}}
  end

  test "a table gone is an error, not a crash" do
    store = memory()
    :ok = Memory.drop(store.state)
    table = store.state.table
    assert Storage.put_if(store, "k", "v", :absent) == {:error, {:table_gone, table}}

    assert Storage.update(store, "k", fn _ -> {:write, "v", :ok} end) ==
             {:error, {:table_gone, table}}
  end
end
