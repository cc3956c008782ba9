defmodule Mix.Tasks.Zarr.ValidateTest do
  # Mix.shell/0 and the captured stderr are global.
  use ExUnit.Case, async: false

  import ExUnit.CaptureIO
  alias ExZarr.{Array, Storage}
  alias ExZarr.Test.{MixTask, Python}

  @moduletag :tmp_dir

  defp validate(args), do: MixTask.run(Mix.Tasks.Zarr.Validate, args)

  defp create!(dir, name, opts) do
    path = Path.join(dir, name)
    {:ok, a} = ExZarr.create([path: path] ++ opts)
    {path, a}
  end

  test "sound arrays and groups pass with status 0", %{tmp_dir: dir} do
    {path, a} = create!(dir, "a.zarr", shape: {40, 30}, chunks: {10, 10}, dtype: :float64)
    :ok = Array.set_slice(a, :binary.copy(<<1.5::float-64-little>>, 20 * 30), stop: {20, 30})
    assert {0, out, ""} = validate([path, "--no-progress"])
    assert out == "OK: 1 node, 6 stored chunks checked, no problem found"

    {:ok, g} = ExZarr.create_group(path: Path.join(dir, "g.zarr"), zarr_format: 2)
    {:ok, b} = ExZarr.Group.create_array(g, "x/b", shape: {8}, chunks: {3}, dtype: :int16)
    :ok = Array.set_slice(b, :binary.copy(<<7, 0>>, 8))

    {:ok, s} = ExZarr.Group.create_array(g, "s", shape: {8}, chunks: {4}, dtype: :string)

    :ok = Array.set_slice(s, ~w(a bb ccc d e f g h))
    assert {0, out, ""} = validate([Path.join(dir, "g.zarr")])
    assert out == "OK: 4 nodes, 5 stored chunks checked, no problem found"
  end

  test "a chunk that does not decode, or decodes to the wrong size, is reported", %{
    tmp_dir: dir
  } do
    {path, a} =
      create!(dir, "a.zarr",
        shape: {8},
        chunks: {4},
        dtype: :uint8,
        compressor: %{id: "zstd", level: 1}
      )

    :ok = Array.set_slice(a, :binary.list_to_bin(Enum.to_list(1..8)))
    :ok = Storage.put(a.storage, "c/1", "not zstd at all")
    assert {1, "", err} = validate([path])
    assert err =~ ~r"^c/1: does not decode: .*zstd"m
    assert err =~ "1 problem in 1 node, 2 stored chunks"

    {path, raw} =
      create!(dir, "raw.zarr", shape: {8}, chunks: {4}, dtype: :uint16, compressor: nil)

    :ok = Array.set_slice(raw, :binary.copy(<<1, 0>>, 8))
    :ok = Storage.put(raw.storage, "c/0", <<1, 2, 3>>)
    assert {1, "", err} = validate([path])
    assert err =~ ~r"^c/0: "m
    refute err =~ "c/1:"
  end

  test "keys outside the chunk grid are reported, each one", %{tmp_dir: dir} do
    {path, a} = create!(dir, "a.zarr", shape: {10, 10}, chunks: {5, 5}, dtype: :uint8)
    :ok = Array.set_slice(a, :binary.copy(<<1>>, 100))

    for key <- ["c/2/0", "c/0/7", "c/3", "c/x/0", "stray.txt"],
        do: :ok = Storage.put(a.storage, key, "z")

    assert {1, "", err} = validate([path])

    for key <- ["c/2/0", "c/0/7", "c/3", "c/x/0", "stray.txt"],
        do: assert(err =~ "#{key}: a key outside the chunk grid")

    assert err =~ "5 problems in 1 node, 4 stored chunks"
  end

  test "a shard whose index points outside it, or whose index checksum is wrong", %{
    tmp_dir: dir
  } do
    {path, a} =
      create!(dir, "s.zarr", shape: {16}, chunks: {4}, shards: {8}, dtype: :uint8, compressor: nil)

    :ok = Array.set_slice(a, :binary.list_to_bin(Enum.to_list(1..16)))
    assert {0, _, ""} = validate([path])

    # shard c/0 holds two inner chunks of 4 bytes, then its index: 2 x (offset, length) + crc32c
    index = <<0::64-little, 4::64-little, 1000::64-little, 4::64-little>>
    crc = ExZarr.Native.crc32c(index)
    :ok = Storage.put(a.storage, "c/0", <<1, 2, 3, 4, 5, 6, 7, 8>> <> index <> <<crc::32-little>>)
    {:ok, shard1} = Storage.get(a.storage, "c/1")
    <<body::binary-size(byte_size(shard1) - 1), last>> = shard1
    :ok = Storage.put(a.storage, "c/1", body <> <<Bitwise.bxor(last, 0xFF)>>)

    assert {1, "", err} = validate([path])
    assert err =~ ~r"^c/0: does not decode: .*sharding"m
    assert err =~ ~r"^c/1: does not decode: .*checksum"m
  end

  test "a node whose metadata does not conform is reported; its siblings are still checked", %{
    tmp_dir: dir
  } do
    root = Path.join(dir, "g.zarr")
    {:ok, g} = ExZarr.create_group(path: root)
    {:ok, good} = ExZarr.Group.create_array(g, "good", shape: {4}, chunks: {2}, dtype: :uint8)
    :ok = Array.set_slice(good, <<1, 2, 3, 4>>)
    {:ok, _} = ExZarr.Group.create_array(g, "bad", shape: {4}, dtype: :uint8)
    File.write!(Path.join(root, "bad/zarr.json"), ~s({"zarr_format": 3, "node_type": "array"}))

    assert {1, "", err} = validate([root])
    assert err =~ ~r"^/bad: "m
    assert err =~ "1 problem in 3 nodes, 2 stored chunks"

    # the node itself cannot be opened: nothing to check, status 1
    File.write!(Path.join(root, "zarr.json"), "{not json")
    assert {1, "", err} = validate([root])
    assert err =~ root
  end

  test "progress is drawn on stderr with --progress, never with --no-progress", %{
    tmp_dir: dir
  } do
    {path, a} = create!(dir, "a.zarr", shape: {64}, chunks: {2}, dtype: :uint8, compressor: nil)
    :ok = Array.set_slice(a, :binary.copy(<<1>>, 64))

    drawn = capture_io(:stderr, fn -> assert {0, _, _} = validate([path, "--progress"]) end)
    assert drawn =~ "[##############################] 32/32 chunks"
    assert drawn =~ ~r/\r\[#* *\] \d+\/32 chunks/

    quiet = capture_io(:stderr, fn -> assert {0, _, _} = validate([path, "--no-progress"]) end)
    assert quiet == ""
  end

  test "bad command lines", %{tmp_dir: dir} do
    assert {1, "", err} = validate([])
    assert err =~ "takes one URL or path"
    assert {1, "", err} = validate([dir, "--bogus"])
    assert err =~ "--bogus"
    assert {1, "", err} = validate([Path.join(dir, "nothing.zarr")])
    assert err =~ "no Zarr array or group there"
    assert {1, "", err} = validate([dir, "--endpoint", "http://x"])
    assert err =~ "--endpoint does not apply to this store"
    # an option value the task cannot take: the task's name and the option, not a tuple
    path = Path.join(dir, "a.zarr")
    {:ok, _} = ExZarr.create(shape: {2}, dtype: :uint8, storage: :filesystem, path: path)
    assert {1, "", err} = validate([path, "--max-concurrency", "0"])
    assert err == "zarr.validate: max concurrency cannot be 0"
  end

  test "ExZarr.Validate checks its options" do
    {:ok, a} = ExZarr.create(shape: {4}, dtype: :uint8)

    assert ExZarr.Validate.run(a, max_concurrency: 0) ==
             {:error, {:invalid_option, :max_concurrency, 0}}

    assert ExZarr.Validate.run(a, progress: :yes) == {:error, {:invalid_option, :progress, :yes}}
    assert ExZarr.Validate.run(a, colour: 1) == {:error, {:unknown_option, :colour}}
    assert {:error, {:invalid_argument, _, :x}} = ExZarr.Validate.run(:x)
    assert {:ok, %{nodes: 1, chunks: 0, problems: []}} = ExZarr.Validate.run(a)
  end

  test "what zarr-python writes (v2, v3, sharded, strings) validates", %{tmp_dir: dir} do
    Python.run!(
      """
      import sys, numpy as np, zarr
      root = zarr.open_group(sys.argv[1], mode="w", zarr_format=3)
      root.create_array("f", shape=(30, 20), chunks=(7, 6), dtype="f4")[:] = np.arange(600, dtype="f4").reshape(30, 20)
      s = root.create_array("s", shape=(64, 64), chunks=(8, 8), shards=(32, 32), dtype="u2")
      s[:40, :] = 3
      root.create_array("t", shape=(5,), chunks=(2,), dtype=str)[:] = ["a", "bb", "", "dddd", "e"]
      v2 = zarr.open_group(sys.argv[2], mode="w", zarr_format=2)
      v2.create_array("x", shape=(10,), chunks=(3,), dtype="i8")[:] = np.arange(10)
      """,
      [Path.join(dir, "v3.zarr"), Path.join(dir, "v2.zarr")]
    )

    assert {0, out, ""} = validate([Path.join(dir, "v3.zarr")])
    assert out == "OK: 4 nodes, 27 stored chunks checked, no problem found"
    assert {0, out, ""} = validate([Path.join(dir, "v2.zarr")])
    assert out == "OK: 2 nodes, 4 stored chunks checked, no problem found"
  end
end
