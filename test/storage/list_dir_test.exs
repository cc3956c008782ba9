defmodule ExZarr.Storage.ListDirTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage

  @moduletag :tmp_dir

  for backend <- [:memory, :filesystem] do
    test "list_dir gives direct children on #{backend}", %{tmp_dir: dir} do
      opts = if unquote(backend) == :filesystem, do: [path: dir], else: []
      {:ok, store} = Storage.new(unquote(backend), opts)

      for key <- ["zarr.json", "g/zarr.json", "g/a/zarr.json", "g/a/c/0/0", "g/b.x", "h/1"],
          do: :ok = Storage.put(store, key, "v")

      assert Storage.list_dir(store) == {:ok, %{keys: ["zarr.json"], prefixes: ["g", "h"]}}
      assert Storage.list_dir(store, "g") == {:ok, %{keys: ["b.x", "zarr.json"], prefixes: ["a"]}}
      assert Storage.list_dir(store, "g/a/") == {:ok, %{keys: ["zarr.json"], prefixes: ["c"]}}
      assert Storage.list_dir(store, "missing") == {:ok, %{keys: [], prefixes: []}}
      assert Storage.list_dir(store, "../x") == {:error, {:invalid_key, "../x"}}
    end
  end
end
