defmodule Mix.Tasks.Zarr.TreeTest do
  # Mix.shell/0 is global.
  use ExUnit.Case, async: false

  alias ExZarr.Test.MixTask

  @moduletag :tmp_dir

  defp tree(args), do: MixTask.run(Mix.Tasks.Zarr.Tree, args)

  test "prints the hierarchy with shapes and data types, as ExZarr.tree/1", %{tmp_dir: dir} do
    {:ok, root} = ExZarr.create_group(path: dir, zarr_format: 2)
    {:ok, _} = ExZarr.Group.create_array(root, "labels/x", shape: {4}, dtype: :uint8)
    {:ok, _} = ExZarr.Group.create_array(root, "raw", shape: {100, 100}, dtype: :uint16)
    {:ok, _} = ExZarr.Group.create_group(root, "empty")

    assert {0, text, ""} = tree([dir])

    assert text ==
             String.trim_trailing("""
             /
             ├── empty
             ├── labels
             │   └── x (4,) uint8
             └── raw (100, 100) uint16
             """)

    assert {:ok, text <> "\n"} == ExZarr.tree(path: dir)

    assert {0, "/labels\n└── x (4,) uint8", ""} = tree([dir, "--prefix", "labels"])

    assert {0, "/raw (100, 100) uint16", ""} = tree([dir, "--prefix", "raw"])
    assert {0, "/labels/x (4,) uint8", ""} = tree(["file://" <> dir, "--prefix", "labels/x"])
  end

  test "errors name the URL and what is wrong", %{tmp_dir: dir} do
    assert {1, "", err} = tree([Path.join(dir, "none")])
    assert err =~ "#{Path.join(dir, "none")}: no Zarr array or group there"
    assert {1, "", err} = tree([dir, "--zarr-format", "4"])
    assert err =~ dir
    assert {1, "", err} = tree([])
    assert err =~ "mix help zarr.tree"
  end
end
