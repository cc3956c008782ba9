defmodule ExZarr.Storage.Filesystem.TempFilesTest do
  # Temporary files of writes that never reached their rename (the OS process was killed).
  use ExUnit.Case, async: true

  alias ExZarr.Storage
  alias ExZarr.Storage.Filesystem
  alias ExZarr.Storage.Filesystem.TempFiles

  doctest TempFiles

  @moduletag :tmp_dir

  # A leftover as the native write names it: ".<name>.tmp.<16 hex digits>", `age` seconds old.
  defp leftover(dir, name, age) do
    File.mkdir_p!(dir)
    hex = Base.encode16(:crypto.strong_rand_bytes(8), case: :lower)
    path = Path.join(dir, ".#{name}.tmp.#{hex}")
    File.write!(path, :crypto.strong_rand_bytes(1000))
    File.touch!(path, System.os_time(:second) - age)
    path
  end

  defp temp_files(dir) do
    Path.wildcard(Path.join(dir, "**/.*.tmp.*"), match_dot: true) |> Enum.sort()
  end

  defp array(opts) do
    {:ok, a} =
      ExZarr.create([shape: {8, 8}, chunks: {2, 2}, dtype: :uint8, compressor: nil] ++ opts)

    :ok = ExZarr.Array.set_slice(a, :binary.copy(<<7>>, 64), start: {0, 0}, stop: {8, 8})
    a
  end

  test "create(overwrite: true) removes every leftover below the node", %{tmp_dir: dir} do
    array(path: dir, prefix: "a")
    array(path: dir, prefix: "b")
    old = leftover(Path.join(dir, "a/c/1"), "1", 3600)
    fresh = leftover(Path.join(dir, "a/c/9"), "0", 0)
    meta = leftover(Path.join(dir, "a"), "zarr.json", 0)
    sibling = leftover(Path.join(dir, "b/c/0"), "0", 3600)
    assert temp_files(dir) == Enum.sort([old, fresh, meta, sibling])

    {:ok, _} = ExZarr.create(path: dir, prefix: "a", overwrite: true, shape: {2}, dtype: :int8)

    assert temp_files(dir) == [sibling]
    # The folders of the old chunks are gone with them.
    refute File.exists?(Path.join(dir, "a/c"))
    assert File.exists?(Path.join(dir, "b/c/0/0"))
  end

  test "overwriting the root node cleans the whole store but keeps its folder", %{tmp_dir: dir} do
    array(path: dir)
    leftover(Path.join(dir, "c/0"), "1", 3600)
    leftover(dir, "zarr.json", 0)
    {:ok, _} = ExZarr.create(path: dir, overwrite: true, shape: {2}, dtype: :int8)
    assert temp_files(dir) == []
    assert File.ls!(dir) == ["zarr.json"]
  end

  test "deleting a group member removes its leftovers", %{tmp_dir: dir} do
    {:ok, root} = ExZarr.create_group(path: dir)
    {:ok, _} = ExZarr.Group.create_array(root, "x", shape: {4}, chunks: {2}, dtype: :int8)
    leftover(Path.join(dir, "x/c"), "5", 0)
    {:ok, _} = ExZarr.Group.delete(root, "x")
    assert temp_files(dir) == []
    refute File.exists?(Path.join(dir, "x"))
  end

  test "a resize removes stale leftovers where it deletes chunks, not live writes",
       %{tmp_dir: dir} do
    a = array(path: dir)
    stale = leftover(Path.join(dir, "c/3"), "3", 3600)
    in_flight = leftover(Path.join(dir, "c/3"), "2", 0)
    untouched = leftover(Path.join(dir, "c/0"), "0", 3600)

    {:ok, _} = ExZarr.Array.resize(a, {4, 8})

    refute File.exists?(stale)
    assert File.exists?(in_flight)
    # No chunk of c/0 was deleted, so its folder was not read.
    assert File.exists?(untouched)
  end

  test "deleting a key removes stale leftovers in its folder", %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: dir)
    :ok = Storage.put(store, "g/k", "v")
    stale = leftover(Path.join(dir, "g"), "never-written", 3600)
    :ok = Storage.delete(store, "g/k")
    refute File.exists?(stale)
  end

  test "delete_prefix keeps symlinks that are not values, and what they point to",
       %{tmp_dir: dir} do
    root = Path.join(dir, "store")
    outside = Path.join(dir, "outside")
    File.mkdir_p!(outside)
    File.write!(Path.join(outside, "precious"), "keep")
    {:ok, store} = Storage.new(:filesystem, path: root)
    :ok = Storage.put(store, "n/zarr.json", "{}")
    File.ln_s!(outside, Path.join(root, "n/link"))
    leftover(Path.join(root, "n"), "zarr.json", 0)

    assert Storage.delete_prefix(store, "n") == :ok
    assert File.read!(Path.join(outside, "precious")) == "keep"
    assert File.ls!(Path.join(root, "n")) == ["link"]
    assert Storage.list(store) == {:ok, []}
  end

  describe "sweep_temp_files/2" do
    test "removes leftovers older than the given age, recursively", %{tmp_dir: dir} do
      {:ok, store} = Storage.new(:filesystem, path: dir)
      :ok = Storage.put(store, "a/b/c", "value")
      old = leftover(Path.join(dir, "a/b"), "c", 7200)
      older = leftover(dir, "zarr.json", 7200)
      recent = leftover(Path.join(dir, "a"), "x", 30)

      assert Filesystem.sweep_temp_files(dir, older_than: 3600) == {:ok, 2}
      refute File.exists?(old) or File.exists?(older)
      # The default age (a minute) keeps a write that may still be running.
      assert Filesystem.sweep_temp_files(store) == {:ok, 0}
      assert File.exists?(recent)
      assert Filesystem.sweep_temp_files("file://" <> dir, older_than: 0) == {:ok, 1}
      assert temp_files(dir) == []
      assert Storage.get(store, "a/b/c") == {:ok, "value"}
    end

    test "does not follow symlinks", %{tmp_dir: dir} do
      elsewhere = Path.join(dir, "elsewhere")
      kept = leftover(elsewhere, "k", 7200)
      File.mkdir_p!(Path.join(dir, "store"))
      File.ln_s!(elsewhere, Path.join(dir, "store/link"))
      assert Filesystem.sweep_temp_files(Path.join(dir, "store"), older_than: 0) == {:ok, 0}
      assert File.exists?(kept)
    end

    test "bad options are errors", %{tmp_dir: dir} do
      assert Filesystem.sweep_temp_files(dir, older: 5) == {:error, {:unknown_option, :older}}

      assert Filesystem.sweep_temp_files(dir, older_than: -1) ==
               {:error, {:invalid_option, :older_than, -1}}

      assert Filesystem.sweep_temp_files("s3://b/x") == {:error, {:unsupported_url_scheme, "s3"}}

      assert Filesystem.sweep_temp_files(Path.join(dir, "missing")) == {:ok, 0}
    end
  end

  describe "temp_name?/1, sweep/2, sweep_stale_once/1" do
    test "only the names of a write's temporary file count" do
      assert TempFiles.temp_name?(".c.tmp.0123456789abcdef")
      assert TempFiles.temp_name?("..zarray.tmp.0123456789abcdef")

      for other <- [
            "c.tmp.0123456789abcdef",
            ".c.tmp.0123456789ABCDEF",
            ".c.tmp.0123",
            ".tmp.0123456789abcdef",
            ".c.tmp.0123456789abcdef0",
            "0"
          ] do
        refute TempFiles.temp_name?(other), other
      end
    end

    test "sweep removes leftovers by age, recursively, and counts them", %{tmp_dir: dir} do
      old = leftover(Path.join(dir, "a/b"), "0", 3600)
      new = leftover(dir, "1", 0)
      File.write!(Path.join(dir, "a/keep"), "v")

      assert TempFiles.sweep(dir, 600) == {:ok, 1}
      refute File.exists?(old)
      assert File.exists?(new)
      assert TempFiles.sweep(dir, 0) == {:ok, 1}
      assert temp_files(dir) == []
      assert File.read!(Path.join(dir, "a/keep")) == "v"
    end

    test "sweep_stale_once sweeps a folder's stale leftovers, then not again for a while",
         %{tmp_dir: dir} do
      stale = leftover(dir, "0", TempFiles.stale_after() + 10)
      fresh = leftover(dir, "1", 0)
      below = leftover(Path.join(dir, "sub"), "2", TempFiles.stale_after() + 10)

      assert TempFiles.sweep_stale_once(dir) == :ok
      refute File.exists?(stale)
      assert File.exists?(fresh) and File.exists?(below)

      again = leftover(dir, "3", TempFiles.stale_after() + 10)
      assert TempFiles.sweep_stale_once(dir) == :ok
      assert File.exists?(again)
      assert TempFiles.sweep_stale_once(Path.join(dir, "missing")) == :ok
    end
  end
end
