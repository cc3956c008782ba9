defmodule ExZarr.Storage.FilesystemReadTest do
  # The native read path of the filesystem store (ExZarr.Native.read_file/4) and
  # ExZarr.Storage.get_ranges/3.
  use ExUnit.Case, async: true

  alias ExZarr.{Native, Storage}

  @moduletag :tmp_dir

  setup %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: dir)
    :ok = Storage.put(store, "a/b/c", "0123456789")
    %{store: store, root: store.state.root}
  end

  test "ranges are clamped to the value as in zarr-python", %{store: store} do
    assert Storage.get(store, "a/b/c", {2, 3}) == {:ok, "234"}
    assert Storage.get(store, "a/b/c", {8, 5}) == {:ok, "89"}
    assert Storage.get(store, "a/b/c", {20, 4}) == {:ok, ""}
    assert Storage.get(store, "a/b/c", {:suffix, 3}) == {:ok, "789"}
    assert Storage.get(store, "a/b/c", {:suffix, 30}) == {:ok, "0123456789"}
    assert Storage.get(store, "a/b/c", {0, 2 ** 70}) == {:ok, "0123456789"}
    assert Storage.get(store, "a/b/c", {2 ** 70, 1}) == {:ok, ""}
  end

  test "get_ranges reads several ranges of one value, in order", %{store: store} do
    ranges = [{5, 2}, {0, 1}, {:suffix, 2}, {9, 10}, {20, 1}, nil]

    assert Storage.get_ranges(store, "a/b/c", ranges) ==
             {:ok, ["56", "0", "89", "9", "", "0123456789"]}

    assert Storage.get_ranges(store, "a/b/c", []) == {:ok, []}
    assert Storage.get_ranges(store, "a/b/x", [{0, 1}]) == {:error, :not_found}
    assert Storage.get_ranges(store, "a/b", [{0, 1}]) == {:error, :not_found}
    assert Storage.get_ranges(store, "a/b/c", [{-1, 1}]) == {:error, {:invalid_range, {-1, 1}}}
    assert Storage.get_ranges(store, "../x", [{0, 1}]) == {:error, {:invalid_key, "../x"}}
  end

  test "get_ranges works on stores without a native multi-range read" do
    {:ok, mem} = Storage.new(:memory, [])
    :ok = Storage.put(mem, "k", "abcdef")

    assert Storage.get_ranges(mem, "k", [{1, 2}, {:suffix, 1}, {4, 9}]) ==
             {:ok, ["bc", "f", "ef"]}

    assert Storage.get_ranges(mem, "missing", [{0, 1}, {1, 1}]) == {:error, :not_found}
  end

  test "symlinks met on the way are checked, then followed when they stay inside", %{
    store: store,
    tmp_dir: dir
  } do
    File.ln_s!(Path.join(dir, "a"), Path.join(dir, "dir_link"))
    File.ln_s!("b/c", Path.join(dir, "a/file_link"))
    outside = Path.join(Path.dirname(dir), Path.basename(dir) <> "_outside")
    File.mkdir_p!(outside)
    File.write!(Path.join(outside, "secret"), "secret")
    File.ln_s!(outside, Path.join(dir, "out_link"))

    assert Storage.get_ranges(store, "dir_link/b/c", [{0, 2}, {:suffix, 1}]) ==
             {:ok, ["01", "9"]}

    assert Storage.get(store, "a/file_link", {1, 1}) == {:ok, "1"}

    assert Storage.get_ranges(store, "out_link/secret", [{0, 1}]) ==
             {:error, {:invalid_key, "out_link/secret"}}

    assert Storage.get(store, "out_link/secret") == {:error, {:invalid_key, "out_link/secret"}}
  end

  test "the native read refuses symlinks with nofollow and bad keys", %{root: root, tmp_dir: dir} do
    File.ln_s!(Path.join(dir, "a"), Path.join(dir, "dir_link"))
    assert Native.read_file(root, "dir_link/b/c", nil, true) == {:error, :symlink}
    assert Native.read_file(root, "dir_link/b/c", nil, false) == {:ok, "0123456789"}
    assert Native.read_file(root, "a/b/c", [{1, 1}, {:suffix, 1}], true) == {:ok, ["1", "9"]}

    for key <- ["a/../a/b/c", "a//b/c", "./a/b/c", "a/b/c/", "", "a/\0/c"] do
      assert Native.read_file(root, key, nil, true) == {:error, :einval}, inspect(key)
    end

    assert Native.read_file(root, "a/b", nil, true) == {:error, :eisdir}
    assert Native.read_file(root, "a/b/c/d", nil, true) == {:error, :enotdir}
    assert Native.read_file(root, "nope", nil, true) == {:error, :enoent}

    assert Native.read_file(root, String.duplicate("x", 5000), nil, true) ==
             {:error, :enametoolong}

    assert_raise ArgumentError, fn -> Native.read_file(root, "a/b/c", {:bad, 1}, true) end
    assert_raise ArgumentError, fn -> Native.read_file(root, "a/b/c", [{0, 1} | :x], true) end
  end

  test "special files are refused without blocking", %{store: store, tmp_dir: dir} do
    {_, 0} = System.cmd("mkfifo", [Path.join(dir, "fifo")])
    assert {:error, {:file_error, :einval, _}} = Storage.get(store, "fifo")
  end
end
