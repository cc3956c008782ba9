defmodule ExZarr.Consolidated.HostilePathsTest do
  @moduledoc """
  Consolidated metadata naming nodes by paths that are not keys below the group ("." makes the
  group its own member, so listing the tree never ended; "..", "/abs", "a//b" leave it or
  alias it) is refused when the group is opened. Found by the fuzzer (test/fuzz).
  """
  use ExUnit.Case, async: true

  alias ExZarr.{Consolidated, Storage}
  alias ExZarr.Fuzz.Json

  @bad_paths [".", "..", "../x", "a/..", "a/./b", "/abs", "a//b", "a/", "a\\b", <<0xFF>>]

  for path <- @bad_paths do
    @tag path: path
    test "v3 inline consolidated metadata with the node path #{inspect(path)}", %{path: path} do
      group = %{"zarr_format" => 3, "node_type" => "group", "attributes" => %{}}
      inline = %{"kind" => "inline", "must_understand" => false, "metadata" => %{path => group}}
      assert {:error, {:invalid_metadata, _}} = Consolidated.from_v3(inline)

      {:ok, store} = Storage.new(:memory, [])
      doc = Map.put(group, "consolidated_metadata", inline)
      :ok = Storage.put(store, "zarr.json", Json.encode(doc))
      assert {:error, _} = ExZarr.open_group(storage: store)
    end

    @tag path: path
    test "v2 .zmetadata with the node path #{inspect(path)}", %{path: path} do
      zmetadata = %{
        "zarr_consolidated_format" => 1,
        "metadata" => %{
          ".zgroup" => %{"zarr_format" => 2},
          (path <> "/.zgroup") => %{"zarr_format" => 2}
        }
      }

      assert {:error, {:invalid_metadata, _}} = Consolidated.from_v2(zmetadata)

      {:ok, store} = Storage.new(:memory, [])
      :ok = Storage.put(store, ".zgroup", ~s({"zarr_format": 2}))
      :ok = Storage.put(store, ".zmetadata", Json.encode(zmetadata))
      assert {:error, _} = ExZarr.open_group(storage: store)
    end
  end

  test "nested paths below the group are read" do
    group = %{"zarr_format" => 3, "node_type" => "group"}
    inline = %{"kind" => "inline", "metadata" => %{"a" => group, "a/b" => group}}
    assert {:ok, entries} = Consolidated.from_v3(inline)
    assert Map.keys(entries) |> Enum.sort() == ["a/b/zarr.json", "a/zarr.json"]
  end

  # A consolidated group of `n` subgroups, each with an array and a subgroup of its own.
  defp wide_tree(n) do
    group = %{"zarr_format" => 3, "node_type" => "group", "attributes" => %{}}

    array = %{
      "zarr_format" => 3,
      "node_type" => "array",
      "shape" => [2],
      "data_type" => "uint8",
      "chunk_grid" => %{"name" => "regular", "configuration" => %{"chunk_shape" => [2]}},
      "chunk_key_encoding" => %{"name" => "default"},
      "fill_value" => 0,
      "codecs" => [%{"name" => "bytes"}]
    }

    metadata =
      for i <- 1..n,
          {path, doc} <- [{"g#{i}", group}, {"g#{i}/a", array}, {"g#{i}/s", group}],
          into: %{},
          do: {path, doc}

    {:ok, store} = Storage.new(:memory, [])
    inline = %{"kind" => "inline", "must_understand" => false, "metadata" => metadata}

    :ok =
      Storage.put(
        store,
        "zarr.json",
        Json.encode(Map.put(group, "consolidated_metadata", inline))
      )

    {:ok, root} = ExZarr.open_group(storage: store)
    root
  end

  test "the members of a group with many consolidated entries are found in linear time" do
    # Each member group scanned every entry for its subtree (and got a copy of all of them
    # in a task): 8,000 members took a minute; 30,000 entries now take well under one.
    root = wide_tree(10_000)
    {time, {:ok, members}} = :timer.tc(fn -> ExZarr.Group.members(root, recursive: true) end)
    assert length(members) == 30_000
    assert time < 20_000_000, "members took #{div(time, 1000)} ms"
  end

  test "members opened together carry the same subtrees as members opened one by one" do
    root = wide_tree(3)
    {:ok, members} = ExZarr.Group.members(root, recursive: true)

    for {path, node} <- members do
      assert {:ok, ^node} = ExZarr.Group.open(root, path)
    end

    {:ok, g1} = ExZarr.Group.open(root, "g1")
    assert Map.keys(g1.metadata.consolidated) |> Enum.sort() == ["a/zarr.json", "s/zarr.json"]
  end
end
