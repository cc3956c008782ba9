defmodule ExZarr.NodeTest do
  use ExUnit.Case, async: true

  alias ExZarr.{Metadata, Node, Storage}
  alias ExZarr.Metadata.Group, as: GroupMetadata

  doctest ExZarr.Node

  defp store do
    {:ok, store} = Storage.new(:memory, [])
    store
  end

  defp meta(format, shape \\ {4, 6}) do
    {:ok, meta} = Metadata.new(shape: shape, chunks: {2, 3}, dtype: :int16, zarr_format: format)

    meta
  end

  for format <- [2, 3] do
    @format format

    test "v#{format}: an array written is read back, found by detection or by its format" do
      s = store()
      :ok = Node.write_array_metadata(s, "a/b", meta(@format))
      assert Node.exists?(s, "a/b")
      refute Node.exists?(s, "a")

      assert {:ok, {:array, read}} = Node.read_node(s, "a/b")
      assert read.shape == {4, 6} and read.zarr_format == @format
      assert {:ok, {:array, _}} = Node.read_node(s, "a/b", zarr_format: @format)
      assert Node.read_node(s, "a/b", zarr_format: 5 - @format) == {:error, :not_found}
      assert Node.read_node(s, "nothing") == {:error, :not_found}
    end

    test "v#{format}: a resize keeps the stored attributes; update_shape returns old and new" do
      s = store()
      :ok = Node.write_array_metadata(s, "a", meta(@format))
      {:ok, {:array, stored}} = Node.read_node(s, "a")

      assert {:ok, %Metadata{attributes: %{"k" => 1}}} =
               Node.change_attributes(s, "a", {:array, stored}, {:set, %{k: 1}})

      :ok = Node.write_array_metadata(s, "a", meta(@format, {8, 6}))
      assert {:ok, {:array, %{shape: {8, 6}, attributes: %{"k" => 1}}}} = Node.read_node(s, "a")

      assert Node.update_shape(s, "a", fn {n, m} -> {:ok, {n + 2, m}} end) ==
               {:ok, {{8, 6}, {10, 6}}}

      assert {:error, _} = Node.update_shape(s, "a", fn _ -> {:ok, {1}} end)
      assert {:ok, {:array, %{shape: {10, 6}, attributes: %{"k" => 1}}}} = Node.read_node(s, "a")
    end

    test "v#{format}: a group is created once; nodes are listed through groups only" do
      s = store()
      assert Node.create_group_if_absent(s, "", @format) == :ok
      assert Node.create_group_if_absent(s, "", @format) == {:error, :exists}
      :ok = Node.create_group_if_absent(s, "g", @format)
      :ok = Node.write_array_metadata(s, "g/x", meta(@format))
      :ok = Node.write_array_metadata(s, "y", meta(@format))
      # An array below a folder that is no group is not a node of the hierarchy.
      :ok = Node.write_array_metadata(s, "loose/z", meta(@format))

      assert {:ok, {:group, %GroupMetadata{zarr_format: @format}}} = Node.read_node(s, "g")
      assert Node.list_nodes(s, "", @format) == {:ok, ["g", "g/x", "y"]}
      assert Node.list_nodes(s, "g", @format) == {:ok, ["x"]}
      assert Node.list_nodes(s, "", 5 - @format) == {:ok, []}
    end
  end

  test "decode_node reads documents from any getter (consolidated metadata)" do
    docs = %{"zarr.json" => %{"zarr_format" => 3, "node_type" => "group"}}

    get = fn name ->
      Map.fetch(docs, name) |> then(&if(&1 == :error, do: {:ok, nil}, else: &1))
    end

    assert {:ok, {:group, %GroupMetadata{zarr_format: 3}}} = Node.decode_node(get, [])
  end

  test "broken documents are errors naming them, never crashes" do
    s = store()
    :ok = Storage.put(s, "a/zarr.json", "{")
    assert {:error, {:invalid_json, "a/zarr.json", _}} = Node.read_node(s, "a")
    :ok = Storage.put(s, "b/zarr.json", ~s({"zarr_format": 3, "node_type": "array"}))
    assert {:error, {:invalid_metadata, _}} = Node.read_node(s, "b")
  end

  test "prefixes and node paths are checked" do
    for good <- ["", "a", "a/b"], do: assert(Node.check_prefix(good) == :ok)

    for bad <- ["/a", "a/../b", "a//b", ".."],
        do: assert(Node.check_prefix(bad) == {:error, {:invalid_prefix, bad}})

    assert Node.normalize_path("") == {:ok, ""}
    assert Node.normalize_path("a\\b") == {:ok, "a/b"}

    for bad <- ["...", "__x", <<0xFF>>, "a\0b"],
        do: assert({:error, {:invalid_node_name, _}} = Node.normalize_path(bad))

    assert Node.normalize_path(:a) == {:error, {:invalid_node_name, :a}}
  end

  test "delete_tree removes the node and everything below it, nothing else" do
    s = store()
    :ok = Node.write_array_metadata(s, "a", meta(3))
    :ok = Node.write_array_metadata(s, "ab", meta(3))
    :ok = Storage.put(s, "a/c/0/0", "x")
    assert Node.delete_tree(s, "a") == :ok
    refute Node.exists?(s, "a")
    assert Node.exists?(s, "ab")
  end

  describe "array_keys/3" do
    test "sorts an array's keys into documents, chunks of its grid and others" do
      {:ok, a} =
        ExZarr.create(
          shape: {4, 4},
          chunks: {2, 2},
          dtype: :uint8,
          storage: :memory,
          prefix: "g/a"
        )

      :ok = ExZarr.Array.set_slice(a, :binary.copy(<<1>>, 16), start: {0, 0}, stop: {4, 4})

      for key <- ["g/a/c/2/0", "g/a/c/0", "g/a/0.0", "g/a/notes.txt", "g/ab/c/0/0", "g/a.txt"],
          do: :ok = Storage.put(a.storage, key, "x")

      assert {:ok, keys} = Node.array_keys(a.storage, "g/a", a.metadata)
      assert keys.documents == ["zarr.json"]
      assert Enum.sort(keys.chunks) == for(i <- 0..1, j <- 0..1, do: {"c/#{i}/#{j}", {i, j}})
      assert Enum.sort(keys.others) == ["0.0", "c/0", "c/2/0", "notes.txt"]
    end
  end
end
