defmodule ExZarr.BadInput.PathEscapeTest do
  @moduledoc """
  Keys that try to leave the store's root (`..` segments, absolute paths, NUL bytes) are refused
  by the filesystem store with `{:error, _}`: nothing is read, written or deleted outside the
  root, and the files inside stay as they were.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{Interop, Snapshot}

  setup do
    dir = Interop.tmp_dir!("path-escape")
    on_exit(fn -> File.rm_rf!(dir) end)
    root = Path.join(dir, "store")
    File.mkdir_p!(Path.join(dir, "outside"))
    File.write!(Path.join(dir, "outside/secret"), "do not touch")
    File.write!(Path.join(dir, "secret"), "do not touch either")
    assert {:ok, store} = ExZarr.Storage.new(:filesystem, path: root)
    assert :ok = ExZarr.Storage.put(store, "c/0/0", "chunk")
    %{dir: dir, root: root, store: store, before: Snapshot.take(dir)}
  end

  @escaping [
    "..",
    "../secret",
    "../outside/secret",
    "c/../../secret",
    "c/0/../../../outside/secret",
    "./../secret",
    "c/./../../secret",
    "c/0/\0/x"
  ]

  for key <- @escaping do
    @tag key: key
    test "key #{inspect(key)} is refused", ctx do
      assert {:error, _} = ExZarr.Storage.get(ctx.store, ctx.key)
      assert {:error, _} = ExZarr.Storage.get(ctx.store, ctx.key, {0, 4})
      assert {:error, _} = ExZarr.Storage.put(ctx.store, ctx.key, "overwritten")
      assert {:error, _} = ExZarr.Storage.delete(ctx.store, ctx.key)
      assert Snapshot.diff(ctx.before, Snapshot.take(ctx.dir)) == []
    end
  end

  test "a backslash key is refused or stays inside the root", ctx do
    result = ExZarr.Storage.put(ctx.store, "..\\secret", "data")
    assert result == :ok or match?({:error, _}, result)

    changed = Snapshot.diff(ctx.before, Snapshot.take(ctx.dir))
    assert Enum.all?(changed, &String.starts_with?(&1, "added store/")), inspect(changed)
  end

  test "an absolute key never reaches the absolute path", ctx do
    target = Path.join(ctx.dir, "absolute-target")
    result = ExZarr.Storage.put(ctx.store, target, "data")
    refute File.exists?(target)
    assert {:error, _} = result
    assert {:error, _} = ExZarr.Storage.get(ctx.store, Path.join(ctx.dir, "secret"))
    assert Snapshot.diff(ctx.before, Snapshot.take(ctx.dir)) == []
  end

  for prefix <- ["..", "../outside", "a/../../outside", "a/./b", "/abs"] do
    @tag prefix: prefix
    test "array prefix #{inspect(prefix)} is refused by create and open", ctx do
      opts = [shape: {4}, chunks: {2}, dtype: :uint8, path: ctx.root, prefix: ctx.prefix]
      assert {:error, _} = ExZarr.create(opts)
      assert {:error, _} = ExZarr.open(path: ctx.root, prefix: ctx.prefix)
      assert Snapshot.diff(ctx.before, Snapshot.take(ctx.dir)) == []
    end
  end

  # names a group's create_array/3 refuses: reserved ("__") or only dots
  for prefix <- ["__meta", "a/__b", "...", "a/..."] do
    @tag prefix: prefix
    test "array prefix #{inspect(prefix)} is refused by create as by a group", ctx do
      opts = [shape: {4}, chunks: {2}, dtype: :uint8, path: ctx.root, prefix: ctx.prefix]
      assert {:error, {:invalid_node_name, _}} = ExZarr.create(opts)

      assert {:error, {:invalid_node_name, _}} =
               ExZarr.create_group(path: ctx.root, prefix: ctx.prefix)

      assert Snapshot.diff(ctx.before, Snapshot.take(ctx.dir)) == []
    end
  end

  test "listing with an escaping prefix is refused", ctx do
    assert {:error, _} = ExZarr.Storage.list(ctx.store, "../")
    assert {:error, _} = ExZarr.Storage.list(ctx.store, "c/../../outside")
  end

  test "the keys inside the root still work (control)", ctx do
    assert {:ok, "chunk"} = ExZarr.Storage.get(ctx.store, "c/0/0")
    assert {:ok, keys} = ExZarr.Storage.list(ctx.store, "")
    assert "c/0/0" in keys
  end
end
