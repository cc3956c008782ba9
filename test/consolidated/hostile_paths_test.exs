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
end
