defmodule ExZarr.StorageTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Storage

  @moduletag :tmp_dir

  test "a zip:// URL writes a zip that opens again after close", %{tmp_dir: dir} do
    url = "zip://" <> Path.join(dir, "a.zip")

    {:ok, a} =
      ExZarr.create(
        path: url,
        mode: :write,
        shape: {4},
        chunks: {2},
        dtype: :uint8,
        compressor: nil
      )

    :ok = ExZarr.Array.set_slice(a, <<1, 2, 3, 4>>)
    :ok = ExZarr.close(a)
    {:ok, b} = ExZarr.open(path: url)
    assert ExZarr.Array.get_slice(b) == {:ok, <<1, 2, 3, 4>>}
    :ok = ExZarr.close(b)
  end

  test "cache: puts an LRU cache in front of the store", %{tmp_dir: dir} do
    {:ok, a} = ExZarr.create(path: dir, cache: 1_000_000, shape: {4}, chunks: {2}, dtype: :uint8)

    assert a.storage.module == ExZarr.Storage.Cache
    :ok = ExZarr.Array.set_slice(a, <<5, 6, 7, 8>>)
    assert ExZarr.Array.get_slice(a) == {:ok, <<5, 6, 7, 8>>}
    :ok = ExZarr.close(a)
    {:ok, b} = ExZarr.open(path: dir)
    assert ExZarr.Array.get_slice(b) == {:ok, <<5, 6, 7, 8>>}
  end

  test "backends are reachable by name" do
    for name <- [:memory, :ets] do
      opts = if name == :ets, do: [table_name: :facade_storage_test], else: []
      assert {:ok, %ExZarr.Storage{}} = ExZarr.storage([storage: name] ++ opts)
    end
  end
end
