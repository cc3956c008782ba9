defmodule ExZarr.Storage.FilesystemWriteTest do
  # The native write path of the filesystem store (ExZarr.Native.write_file/5).
  use ExUnit.Case, async: true

  alias ExZarr.{Native, Storage}

  @moduletag :tmp_dir

  defp files(dir), do: dir |> Path.join("**") |> Path.wildcard(match_dot: true) |> Enum.sort()

  test "writes a binary or a list of binaries, making the directories (the root too)", %{
    tmp_dir: dir
  } do
    root = Path.join(dir, "new/root")
    assert Native.write_file(root, "a/b/c", "value", true, false) == :ok
    assert File.read!(Path.join(root, "a/b/c")) == "value"
    assert Native.write_file(root, "a/b/c", ["new ", "value", ""], true, true) == :ok
    assert File.read!(Path.join(root, "a/b/c")) == "new value"
    assert Native.write_file(root, "a/empty", [], true, false) == :ok
    assert File.read!(Path.join(root, "a/empty")) == ""
    assert files(root) == Enum.map(["a", "a/b", "a/b/c", "a/empty"], &Path.join(root, &1))
  end

  test "more buffers than one vectored write takes, and large ones, arrive whole", %{
    tmp_dir: dir
  } do
    parts = for i <- 1..5000, do: :binary.copy(<<rem(i, 251)>>, 100 + rem(i, 7))
    assert Native.write_file(dir, "many", parts, true, false) == :ok
    assert File.read!(Path.join(dir, "many")) == IO.iodata_to_binary(parts)

    big = :crypto.strong_rand_bytes(20_000_000)
    assert Native.write_file(dir, "big", [big, binary_part(big, 5, 10)], true, false) == :ok
    assert File.read!(Path.join(dir, "big")) == big <> binary_part(big, 5, 10)
  end

  test "errors are POSIX reasons and leave no temporary file", %{tmp_dir: dir} do
    :ok = Native.write_file(dir, "a/b", "old", true, false)
    assert Native.write_file(dir, "a", "x", true, false) == {:error, :eisdir}
    assert Native.write_file(dir, "a/b/c", "x", true, false) == {:error, :enotdir}
    assert Native.write_file(dir, "a/b/c/d", "x", true, false) == {:error, :enotdir}

    assert Native.write_file(dir, String.duplicate("n", 250), "x", true, false) ==
             {:error, :enametoolong}

    assert File.read!(Path.join(dir, "a/b")) == "old"
    assert files(dir) == [Path.join(dir, "a"), Path.join(dir, "a/b")]
  end

  test "bad keys and roots are refused before anything is written", %{tmp_dir: dir} do
    for key <- ["a/../b", "../b", "a//b", "./a", "a/.", "a/", "/a", "", "a/\0/c"] do
      assert Native.write_file(dir, key, "x", true, false) == {:error, :einval}, inspect(key)
      assert Native.write_file(dir, key, "x", false, false) == {:error, :einval}, inspect(key)
    end

    for root <- ["", "relative", dir <> "\0x"] do
      assert Native.write_file(root, "k", "x", true, false) == {:error, :einval}, inspect(root)
    end

    assert Native.write_file(dir, String.duplicate("d/", 2100) <> "k", "x", true, false) ==
             {:error, :enametoolong}

    assert files(dir) == []
  end

  test "data that is not a binary or a flat list of binaries raises", %{tmp_dir: dir} do
    for data <- [:atom, 3, ["a" | "b"], [["nested"]], [1, 2], ["a", :b], <<1::3>>, [<<1::3>>]] do
      assert_raise ArgumentError, fn -> Native.write_file(dir, "k", data, true, false) end
    end

    for args <- [{:root, "k"}, {dir, ~c"k"}, {dir, nil}] do
      {root, key} = args
      assert_raise ArgumentError, fn -> Native.write_file(root, key, "x", true, false) end
    end

    assert files(dir) == []
  end

  test "with nofollow, a symlink on the way or at the target is reported, not followed", %{
    tmp_dir: dir
  } do
    root = Path.join(dir, "root")
    outside = Path.join(dir, "outside")
    File.mkdir_p!(root)
    File.mkdir_p!(outside)
    File.write!(Path.join(outside, "secret"), "secret")
    File.ln_s!(outside, Path.join(root, "dir_link"))
    File.ln_s!(Path.join(outside, "secret"), Path.join(root, "file_link"))

    assert Native.write_file(root, "dir_link/new", "x", true, false) == {:error, :symlink}
    assert Native.write_file(root, "dir_link/secret", "x", true, false) == {:error, :symlink}
    assert Native.write_file(root, "file_link", "x", true, false) == {:error, :symlink}
    assert File.ls!(outside) == ["secret"]
    assert File.read!(Path.join(outside, "secret")) == "secret"

    # Without nofollow links are followed on the way; a link at the target is replaced.
    assert Native.write_file(root, "dir_link/new", "x", false, false) == :ok
    assert File.read!(Path.join(outside, "new")) == "x"
    assert Native.write_file(root, "file_link", "y", false, false) == :ok
    assert File.read!(Path.join(root, "file_link")) == "y"
    assert File.read!(Path.join(outside, "secret")) == "secret"
  end

  test "the store turns bad values into errors and keeps the old value", %{tmp_dir: dir} do
    {:ok, store} = Storage.new(:filesystem, path: dir)
    :ok = Storage.put(store, "k", "old")

    for value <- [:bad, ["a", :b], [1 | :x], 2.5, <<1::3>>, ["a", <<1::3>>]] do
      assert Storage.put(store, "k", value) == {:error, {:invalid_value, :not_iodata}}
    end

    assert Storage.put(store, "k", [?n, "e", [~c"w"] | "!"]) == :ok
    assert Storage.get(store, "k") == {:ok, "new!"}
    assert files(dir) == [Path.join(dir, "k")]
  end

  # Random keys and roots (separators, dots, NULs, long names) never crash the VM and never
  # put anything outside the directory under test.
  test "random keys never write outside the root", %{tmp_dir: dir} do
    root = Path.join(dir, "root")
    alphabet = ["a", "b", "/", ".", "..", "\0", "\\", "~", String.duplicate("z", 120)]
    :rand.seed(:exsss, {7, 11, 13})

    for _ <- 1..2000 do
      key = Enum.map_join(1..:rand.uniform(8), fn _ -> Enum.random(alphabet) end)

      case Native.write_file(root, key, key, Enum.random([true, false]), false) do
        :ok -> assert File.read!(Path.join(root, key)) == key
        {:error, reason} -> assert reason in [:einval, :enametoolong, :enotdir, :eisdir]
      end
    end

    assert Enum.all?(files(dir), &String.starts_with?(&1, root))
    refute Enum.any?(files(dir), &(Path.basename(&1) =~ ~r/\.tmp\.[0-9a-f]{16}\z/))
  end

  test "fsync: true writes through new folders, a new root and symlinked folders",
       %{tmp_dir: dir} do
    root = Path.join(dir, "new/root")
    {:ok, store} = Storage.new(:filesystem, path: root, fsync: true)
    :ok = Storage.put(store, "a/b/c/d", ["dur", "able"])
    assert File.read!(Path.join(root, "a/b/c/d")) == "durable"
    :ok = Storage.put(store, "a/b/c/d", "again")
    assert Storage.get(store, "a/b/c/d") == {:ok, "again"}

    File.mkdir_p!(Path.join(root, "real"))
    File.ln_s!(Path.join(root, "real"), Path.join(root, "linked"))
    :ok = Storage.put(store, "linked/x/y", "via link")
    assert File.read!(Path.join(root, "real/x/y")) == "via link"
    refute Enum.any?(files(dir), &(Path.basename(&1) =~ ~r/\.tmp\.[0-9a-f]{16}\z/))

    {:ok, a} =
      ExZarr.create(
        shape: {8, 8},
        chunks: {2, 2},
        dtype: :uint8,
        compressor: nil,
        path: Path.join(dir, "arr"),
        fsync: true
      )

    :ok = ExZarr.Array.set_slice(a, :binary.copy(<<7>>, 64), start: {0, 0}, stop: {8, 8})
    assert ExZarr.Array.get_slice(a) == {:ok, :binary.copy(<<7>>, 64)}
  end
end
