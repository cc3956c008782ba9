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

  test "multi_range? tells local stores from object stores, through a cache too", %{
    store: store,
    tmp_dir: dir
  } do
    {:ok, mem} = Storage.new(:memory, [])
    {:ok, s3} = Storage.new(:s3, bucket: "b", access_key_id: "k", secret_access_key: "s")
    {:ok, cached_fs} = Storage.new(ExZarr.Storage.Cache, inner: {:filesystem, path: dir})
    {:ok, cached_s3} = Storage.new(ExZarr.Storage.Cache, inner: s3)

    assert Enum.map([store, mem, s3, cached_fs, cached_s3], &Storage.multi_range?/1) ==
             [true, true, false, true, false]

    Enum.each([cached_fs, cached_s3], &Storage.close/1)
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

  # Reads of more than 1 MiB go to a dirty I/O scheduler (the others run in place when the
  # page cache holds the bytes): both give the same answers.
  test "large reads give the same bytes as small ones", %{store: store, root: root} do
    big = :crypto.strong_rand_bytes(600_000)
    :ok = Storage.put(store, "a/big", big)
    assert Storage.get(store, "a/big") == {:ok, big}
    assert Storage.get(store, "a/big", {1, 300_000}) == {:ok, binary_part(big, 1, 300_000)}

    assert Storage.get_ranges(store, "a/big", [{0, 200_000}, {:suffix, 100_000}, {10, 5}]) ==
             {:ok,
              [
                binary_part(big, 0, 200_000),
                binary_part(big, 500_000, 100_000),
                binary_part(big, 10, 5)
              ]}

    # more than 64 ranges also go to the dirty scheduler
    ranges = for i <- 0..99, do: {i * 6000, 10}
    expected = for {o, n} <- ranges, do: binary_part(big, o, n)
    assert Storage.get_ranges(store, "a/big", ranges) == {:ok, expected}

    assert Native.read_file(root, "a/big/x", nil, true) == {:error, :enotdir}
    assert Native.read_file(root, "a", nil, true) == {:error, :eisdir}
  end

  test "reads over 1 MiB from the page cache (a dirty CPU scheduler) give the same bytes", %{
    store: store
  } do
    big = :crypto.strong_rand_bytes(3 * 1024 * 1024 + 5)
    :ok = Storage.put(store, "a/big3", big)
    # (just written: in the page cache)
    assert Storage.get(store, "a/big3") == {:ok, big}
    assert Storage.get(store, "a/big3", {1, 2_000_000}) == {:ok, binary_part(big, 1, 2_000_000)}

    ranges = for i <- 0..99, do: {i * 30_000, 20_000}
    expected = for {o, n} <- ranges, do: binary_part(big, o, n)
    assert Storage.get_ranges(store, "a/big3", ranges) == {:ok, expected}
    assert {:ok, [^big], _generation} = Storage.get_ranges_with_generation(store, "a/big3", [nil])
  end

  # The ranges of one read are parts of one buffer holding just their bytes (one allocation,
  # nothing between the ranges kept), on both paths, with and without the generation.
  test "ranges come back as parts of one buffer of their bytes", %{store: store} do
    big = :crypto.strong_rand_bytes(3_000_000)
    :ok = Storage.put(store, "a/big", big)

    for ranges <- [
          [{0, 100}, {50, 100}, {2_999_990, 100}, {0, 100}, {5_000_000, 1}],
          [{10, 1_500_000}, {:suffix, 1_200_000}, nil, {7, 0}]
        ] do
      expected = for r <- ranges, do: Storage.Range.slice(big, r)
      total = expected |> Enum.map(&byte_size/1) |> Enum.sum()
      assert {:ok, parts} = Storage.get_ranges(store, "a/big", ranges)
      assert parts == expected

      assert {:ok, ^expected, generation} =
               Storage.get_ranges_with_generation(store, "a/big", ranges)

      assert {:ok, ^expected, ^generation} =
               Storage.get_ranges_with_generation(store, "a/big", ranges, generation)

      for part <- parts,
          byte_size(part) > 64,
          do: assert(:binary.referenced_byte_size(part) == total)
    end
  end

  test "special files are refused without blocking", %{store: store, tmp_dir: dir} do
    {_, 0} = System.cmd("mkfifo", [Path.join(dir, "fifo")])
    assert {:error, {:file_error, :einval, _}} = Storage.get(store, "fifo")
  end
end
