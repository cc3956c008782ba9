defmodule ExZarr.Storage.FilesystemTest do
  use ExUnit.Case, async: true
  @moduletag :tmp_dir
  use ExZarr.StorageConformance, backend: :filesystem, opts: fn ctx -> [path: ctx.tmp_dir] end

  alias ExZarr.Storage.Filesystem

  defp files(dir), do: dir |> Path.join("**") |> Path.wildcard(match_dot: true) |> Enum.sort()

  test "keys map to files under the root", %{store: store, tmp_dir: dir} do
    :ok = Storage.put(store, "a/c/0.1", "x")
    assert File.read!(Path.join(dir, "a/c/0.1")) == "x"
    File.write!(Path.join(dir, "a/written_by_hand"), "y")
    assert Storage.get(store, "a/written_by_hand") == {:ok, "y"}
    assert Storage.list(store) == {:ok, ["a/c/0.1", "a/written_by_hand"]}
  end

  test "file:// URLs resolve to absolute roots", %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: "file://" <> dir <> "/u%20rl")
    assert store.state.root == Path.join(dir, "u rl")
    :ok = Storage.put(store, "k", "v")
    assert File.read!(Path.join(dir, "u rl/k")) == "v"

    assert Storage.new(:filesystem, path: "file://host/x") ==
             {:error, {:invalid_path, "file://host/x"}}

    assert Storage.new(:filesystem, []) == {:error, {:missing_option, :path}}
    assert Storage.new(:filesystem, path: 3) == {:error, {:invalid_path, 3}}
  end

  test "the root is created on the first write", %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: Path.join(dir, "new/deeper"))
    assert Storage.list(store) == {:ok, []}
    assert Storage.get(store, "k") == {:error, :not_found}
    :ok = Storage.put(store, "k", "v")
    assert File.read!(Path.join(dir, "new/deeper/k")) == "v"
  end

  test "fsync: true writes the same way", %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: dir, fsync: true)
    :ok = Storage.put(store, "a/b", ["x", "y"])
    assert Storage.get(store, "a/b") == {:ok, "xy"}
  end

  test "a failed write leaves the old value and no temporary file", %{store: store, tmp_dir: dir} do
    :ok = Storage.put(store, "a/b", "old")
    assert {:error, {:invalid_value, _}} = Storage.put(store, "a/b", ["new", :bad])
    assert Storage.get(store, "a/b") == {:ok, "old"}
    assert files(dir) == [Path.join(dir, "a"), Path.join(dir, "a/b")]
  end

  test "a failed rename leaves the other values and no temporary file", %{
    store: store,
    tmp_dir: dir
  } do
    :ok = Storage.put(store, "a/b", "old")
    # "a" is a directory, so the rename over it fails.
    assert {:error, {:file_error, _, _}} = Storage.put(store, "a", "value")
    assert Storage.get(store, "a/b") == {:ok, "old"}
    assert files(dir) == [Path.join(dir, "a"), Path.join(dir, "a/b")]
    # A file where a directory is needed fails the same way.
    assert {:error, {:file_error, _, _}} = Storage.put(store, "a/b/c", "value")
    assert Storage.get(store, "a/b") == {:ok, "old"}
  end

  test "a writer killed mid-write leaves the old value or the new one", %{
    store: store,
    tmp_dir: dir
  } do
    old = :binary.copy("o", 1_000_000)
    new = List.duplicate(:binary.copy("n", 1_000), 100_000)
    :ok = Storage.put(store, "k", old)

    for delay <- [0, 1, 5, 20] do
      writer = spawn(fn -> Storage.put(store, "k", new) end)
      Process.sleep(delay)
      Process.exit(writer, :kill)
      {:ok, value} = Storage.get(store, "k")
      assert value == old or value == IO.iodata_to_binary(new)
      assert Storage.list(store) == {:ok, ["k"]}
    end

    # Whatever temporary files the killed writers left are hidden dot files next to the key.
    for path <- files(dir) -- [Path.join(dir, "k")] do
      assert Path.basename(path) =~ ~r/\A\.k\.tmp\.[0-9a-f]{16}\z/
    end
  end

  test "directories are not values", %{store: store} do
    :ok = Storage.put(store, "a/b", "v")
    assert Storage.get(store, "a") == {:error, :not_found}
    assert Storage.get(store, "a", {:suffix, 1}) == {:error, :not_found}
    assert Storage.delete(store, "a") == :ok
    assert Storage.get(store, "a/b") == {:ok, "v"}
  end

  test "the backend checks keys itself", %{tmp_dir: dir} do
    {:ok, state} = Filesystem.init(path: Path.join(dir, "inner/root"))

    for key <- ["../x", "a/../../x", "/abs", "a//b", "a\\b"] do
      assert Filesystem.put(state, key, "evil") == {:error, {:invalid_key, key}}
      assert Filesystem.get(state, key, nil) == {:error, {:invalid_key, key}}
      assert Filesystem.delete(state, key) == {:error, {:invalid_key, key}}
    end

    assert files(dir) == []
  end

  test "symlinks that leave the root are not followed", %{tmp_dir: dir} do
    outside = Path.join(dir, "outside")
    File.mkdir_p!(outside)
    File.write!(Path.join(outside, "secret"), "secret")
    {:ok, store} = Storage.new(:filesystem, path: Path.join(dir, "root"))
    root = store.state.root
    File.mkdir_p!(root)
    File.ln_s!(outside, Path.join(root, "link"))
    File.ln_s!(Path.join(outside, "secret"), Path.join(root, "file_link"))
    File.ln_s!("../outside", Path.join(root, "relative_link"))

    for key <- ["link/secret", "file_link", "relative_link/secret", "link/new"] do
      assert Storage.get(store, key) == {:error, {:invalid_key, key}}
      assert Storage.put(store, key, "evil") == {:error, {:invalid_key, key}}
      assert Storage.delete(store, key) == {:error, {:invalid_key, key}}
    end

    assert Storage.list(store) == {:ok, []}
    assert Storage.list(store, "link") == {:error, {:invalid_key, "link"}}
    assert File.ls!(outside) == ["secret"]
    assert File.read!(Path.join(outside, "secret")) == "secret"

    # A tree that is trusted can opt out of the check (and of its cost).
    {:ok, trusting} = Storage.new(:filesystem, path: root, check_symlinks: false)
    assert Storage.get(trusting, "link/secret") == {:ok, "secret"}

    assert Storage.get(trusting, "../outside/secret") ==
             {:error, {:invalid_key, "../outside/secret"}}
  end

  test "symlinks that stay inside the root are followed", %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: dir)
    :ok = Storage.put(store, "real/x", "v")
    File.ln_s!(Path.join(dir, "real"), Path.join(dir, "dir_link"))
    File.ln_s!("real/x", Path.join(dir, "file_link"))
    assert Storage.get(store, "dir_link/x") == {:ok, "v"}
    assert Storage.get(store, "file_link") == {:ok, "v"}
    # Linked files are listed; linked directories are not descended into.
    assert Storage.list(store) == {:ok, ["file_link", "real/x"]}
    # Writes follow them too; a link at the key is replaced by the value (a rename over it).
    assert Storage.put(store, "dir_link/y", ["w", ["x"]]) == :ok
    assert File.read!(Path.join(dir, "real/y")) == "wx"
    assert Storage.put(store, "file_link", "z") == :ok
    assert File.read!(Path.join(dir, "file_link")) == "z"
    assert File.read!(Path.join(dir, "real/x")) == "v"
  end

  test "conditional writes follow symlinks inside the root and refuse those leaving it",
       %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: Path.join(dir, "root"), fsync: true)
    root = store.state.root
    {:ok, _} = Storage.put_if(store, "real/x", "v", :absent)
    File.ln_s!(Path.join(root, "real"), Path.join(root, "dir_link"))
    File.mkdir_p!(Path.join(dir, "outside"))
    File.ln_s!(Path.join(dir, "outside"), Path.join(root, "out_link"))

    {:ok, ["v"], gen} = Storage.get_ranges_with_generation(store, "dir_link/x", [nil])
    assert {:ok, new_gen} = Storage.put_if(store, "dir_link/x", "w", gen)
    assert {:ok, ["w"], ^new_gen} = Storage.get_ranges_with_generation(store, "real/x", [nil])
    assert Storage.put_if(store, "dir_link/x", "u", gen) == {:error, :generation_mismatch}
    assert {:ok, _} = Storage.put_if(store, "dir_link/y", "y", :absent)
    assert File.read!(Path.join(root, "real/y")) == "y"

    assert Storage.put_if(store, "out_link/z", "evil", :absent) ==
             {:error, {:invalid_key, "out_link/z"}}

    assert File.ls!(Path.join(dir, "outside")) == []
    # no temporary file stays behind a refused write
    assert File.ls!(Path.join(root, "real")) |> Enum.sort() == ["x", "y"]
  end

  test "conditional deletes follow symlinks inside the root and refuse those leaving it",
       %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: Path.join(dir, "root"))
    root = store.state.root
    {:ok, gen} = Storage.put_if(store, "real/x", "v", :absent)
    File.ln_s!(Path.join(root, "real"), Path.join(root, "dir_link"))
    File.mkdir_p!(Path.join(dir, "outside"))
    File.write!(Path.join(dir, "outside/z"), "keep")
    File.ln_s!(Path.join(dir, "outside"), Path.join(root, "out_link"))

    assert Storage.delete_if(store, "out_link/z", gen) ==
             {:error, {:invalid_key, "out_link/z"}}

    assert File.read!(Path.join(dir, "outside/z")) == "keep"
    # a directory or a missing key is never the generation
    assert Storage.delete_if(store, "real", gen) == {:error, :generation_mismatch}
    assert Storage.delete_if(store, "real/missing/x", gen) == {:error, :generation_mismatch}
    assert Storage.delete_if(store, "dir_link/x", gen) == :ok
    assert File.ls!(Path.join(root, "real")) == []
  end

  test "the store root may itself be reached through a symlink", %{tmp_dir: dir} do
    File.mkdir_p!(Path.join(dir, "real_root"))
    File.ln_s!(Path.join(dir, "real_root"), Path.join(dir, "root_link"))
    {:ok, store} = Storage.new(:filesystem, path: Path.join(dir, "root_link"))
    :ok = Storage.put(store, "a/b", "v")
    assert File.read!(Path.join(dir, "real_root/a/b")) == "v"
    assert Storage.list(store) == {:ok, ["a/b"]}
  end

  test "zarr-python reads what we wrote and we read what it wrote", %{store: store, tmp_dir: dir} do
    :ok = Storage.put(store, "c/0.1", <<1, 2, 3>>)

    out =
      ExZarr.Test.Python.run!(
        """
        import asyncio, sys
        from zarr.storage import LocalStore
        from zarr.core.buffer import default_buffer_prototype as p
        async def main():
            s = LocalStore(sys.argv[1])
            v = await s.get("c/0.1", p())
            await s.set("from/python", p().buffer.from_bytes(b"hello"))
            print(v.to_bytes().hex())
        asyncio.run(main())
        """,
        [dir]
      )

    assert String.trim(out) == "010203"
    assert Storage.get(store, "from/python") == {:ok, "hello"}
    assert Storage.get(store, "from/python", {:suffix, 2}) == {:ok, "lo"}
  end
end
