defmodule ExZarr.GroupTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Group

  alias ExZarr.{Array, Group, Storage}

  defp root(opts \\ []) do
    {:ok, group} = ExZarr.create_group(Keyword.merge([storage: :memory], opts))
    group
  end

  defp keys(group) do
    {:ok, keys} = Storage.list(group.storage)
    keys
  end

  defp json(group, key) do
    {:ok, bin} = Storage.get(group.storage, key)
    :jiffy.decode(bin, [:return_maps])
  end

  describe "creating" do
    test "v3 writes zarr.json for the group and every parent of a nested child" do
      g = root(attributes: %{"title" => "t"})
      assert {:ok, %Array{prefix: "a/b/c"}} = Group.create_array(g, "a/b/c", shape: {3})

      assert json(g, "zarr.json") ==
               %{"zarr_format" => 3, "node_type" => "group", "attributes" => %{"title" => "t"}}

      for parent <- ["a", "a/b"] do
        assert %{"node_type" => "group", "zarr_format" => 3} = json(g, parent <> "/zarr.json")
      end

      assert %{"node_type" => "array"} = json(g, "a/b/c/zarr.json")
    end

    test "v2 writes .zgroup and .zattrs for every ancestor, including above a prefix" do
      {:ok, sub} = ExZarr.create_group(storage: :memory, prefix: "x/y", zarr_format: 2)
      assert {:ok, %Group{prefix: "x/y/z"}} = Group.create_group(sub, "z")

      for group <- ["", "x/", "x/y/", "x/y/z/"] do
        assert json(sub, group <> ".zgroup") == %{"zarr_format" => 2}
        assert json(sub, group <> ".zattrs") == %{}
      end
    end

    test "children take the group's format and refuse another" do
      g = root(zarr_format: 2)
      assert {:ok, %Array{metadata: %{zarr_format: 2}}} = Group.create_array(g, "a", shape: {2})

      assert {:error, {:invalid_option, :zarr_format, _}} =
               Group.create_array(g, "b", shape: {2}, zarr_format: 3)
    end

    test "an existing node is an error unless overwrite is given" do
      g = root()
      {:ok, a} = Group.create_array(g, "a", shape: {4}, chunks: {2}, dtype: :uint8)
      :ok = Array.set_slice(a, <<1, 2, 3, 4>>)

      assert {:error, {:already_exists, "a"}} = Group.create_group(g, "a")
      assert {:ok, %Group{}} = Group.create_group(g, "a", overwrite: true)
      refute Enum.any?(keys(g), &String.starts_with?(&1, "a/c/"))
      assert {:error, {:already_exists, ""}} = ExZarr.create_group(storage: g.storage)
    end

    test "a node cannot be created inside an array" do
      g = root()
      {:ok, _} = Group.create_array(g, "a", shape: {2})
      assert {:error, {:parent_is_array, "a"}} = Group.create_group(g, "a/b")
      assert {:error, {:parent_is_array, "a"}} = Group.create_array(g, "a/b/c", shape: {2})
    end

    test "node names are checked" do
      g = root()

      for bad <- ["", "/", "..", "a/./b", "__meta", "a/__x", <<255>>] do
        assert {:error, {:invalid_node_name, _}} = Group.create_group(g, bad), inspect(bad)
      end

      assert {:error, {:invalid_node_name, 5}} = Group.create_group(g, 5)
      assert {:ok, %Group{prefix: "a/b"}} = Group.create_group(g, "/a//b/")
      assert {:ok, %Group{prefix: "x.y/_z"}} = Group.create_group(g, "x.y/_z")
    end

    test "bad attributes and formats are errors, not crashes" do
      assert {:error, {:invalid_attributes, _}} =
               ExZarr.create_group(storage: :memory, attributes: %{"a" => {1, 2}})

      assert {:error, {:invalid_attributes, [1]}} =
               ExZarr.create_group(storage: :memory, attributes: [1])

      assert {:error, {:invalid_option, :zarr_format, 4}} =
               ExZarr.create_group(storage: :memory, zarr_format: 4)
    end
  end

  describe "opening" do
    for format <- [2, 3] do
      test "open/1 opens a group or an array, whichever is there (v#{format})" do
        g = root(zarr_format: unquote(format), attributes: %{"k" => [1, %{"n" => nil}]})
        {:ok, _} = Group.create_array(g, "g/arr", shape: {5, 2}, dtype: :int16)

        assert {:ok, %Group{prefix: "", metadata: meta}} = ExZarr.open(storage: g.storage)
        assert meta.zarr_format == unquote(format)
        assert meta.attributes == %{"k" => [1, %{"n" => nil}]}
        assert {:ok, %Group{prefix: "g"}} = ExZarr.open(storage: g.storage, prefix: "g")

        assert {:ok, %Array{prefix: "g/arr", metadata: %{shape: {5, 2}}}} =
                 ExZarr.open(storage: g.storage, prefix: "g/arr")

        assert {:error, :not_found} = ExZarr.open(storage: g.storage, prefix: "nope")

        assert {:error, {:not_a_group, "g/arr"}} =
                 ExZarr.open_group(storage: g.storage, prefix: "g/arr")
      end
    end

    test "open_group with the wrong zarr_format finds nothing" do
      g = root(zarr_format: 2)
      assert {:error, :not_found} = ExZarr.open_group(storage: g.storage, zarr_format: 3)
      assert {:ok, %Group{}} = ExZarr.open_group(storage: g.storage, zarr_format: 2)
    end

    test "Access returns the child array or group, or nil" do
      g = root()
      {:ok, _} = Group.create_array(g, "a/b", shape: {3})

      assert %Group{prefix: "a"} = g["a"]
      assert %Array{prefix: "a/b"} = g["a/b"]
      assert %Array{prefix: "a/b"} = g["a"]["b"]
      assert g["missing"] == nil
      assert g["../etc"] == nil
      assert get_in(g, ["a", "b"]).metadata.shape == {3}
      assert_raise ArgumentError, fn -> pop_in(g, ["a"]) end
    end

    test "Access raises ExZarr.Error for a child whose metadata is damaged (it is not missing)" do
      g = root()
      {:ok, _} = Group.create_array(g, "a", shape: {3})
      :ok = ExZarr.Storage.put(g.storage, "a/zarr.json", "{damaged")

      assert_raise ExZarr.Error, ~r/invalid_json/, fn -> g["a"] end
      assert {:error, {:invalid_json, "a/zarr.json", _}} = Group.open(g, "a")
    end

    test "open/3 of a missing member names it; \"\" is the group itself" do
      g = root()
      assert {:error, {:not_found, "x/y"}} = Group.open(g, "x/y")
      assert {:ok, ^g} = Group.open(g, "")
      assert_raise ExZarr.Error, fn -> Group.open!(g, "x") end
    end
  end

  describe "members and tree" do
    setup do
      g = root()
      {:ok, _} = Group.create_array(g, "b/x", shape: {4}, dtype: :float32)
      {:ok, _} = Group.create_array(g, "a", shape: {2, 3}, dtype: :uint8)
      {:ok, _} = Group.create_group(g, "b/c/d")
      {:ok, _} = Group.create_array(g, "s", shape: {}, dtype: :bool)
      %{g: g}
    end

    test "members lists direct children, or everything with recursive: true", %{g: g} do
      assert {:ok, [{"a", %Array{}}, {"b", %Group{}}, {"s", %Array{}}]} = Group.members(g)
      assert {:ok, ["a", "b", "s"]} = Group.list(g)

      assert {:ok, nodes} = Group.members(g, recursive: true)
      assert Enum.map(nodes, &elem(&1, 0)) == ["a", "b", "b/c", "b/c/d", "b/x", "s"]
      assert {:ok, [{"c", %Group{}}, {"x", %Array{}}]} = Group.members(g["b"])
    end

    test "tree prints like zarr-python", %{g: g} do
      assert {:ok, text} = Group.tree(g)

      assert text == """
             /
             ├── a (2, 3) uint8
             ├── b
             │   ├── c
             │   │   └── d
             │   └── x (4,) float32
             └── s () bool
             """

      assert {:ok, "/b/c\n└── d\n"} = ExZarr.tree(g["b/c"])
      assert ExZarr.tree(storage: g.storage) == {:ok, text}
    end

    test "stray metadata stored inside an array is not a member", %{g: g} do
      :ok =
        Storage.put(g.storage, "a/junk/zarr.json", ~s({"zarr_format": 3, "node_type": "group"}))

      assert {:ok, nodes} = Group.members(g, recursive: true)
      refute Enum.any?(nodes, fn {path, _} -> path == "a/junk" end)
    end

    test "delete removes a member and everything stored under it", %{g: g} do
      {:ok, x} = Group.open(g, "b/x")
      :ok = Array.set_slice(x, <<1.0::float-32-little, 2.0::float-32-little, 0::64>>)
      :ok = Storage.put(g.storage, "bb/keep", "1")

      assert {:ok, ^g} = Group.delete(g, "b")
      assert Enum.sort(keys(g)) == ["a/zarr.json", "bb/keep", "s/zarr.json", "zarr.json"]
      assert {:error, {:not_found, "b"}} = Group.delete(g, "b")
      assert {:error, {:invalid_node_name, ""}} = Group.delete(g, "")
    end
  end

  describe "attributes" do
    for format <- [2, 3] do
      test "group attributes are set, updated, deleted and persisted (v#{format})" do
        g = root(zarr_format: unquote(format), attributes: %{"a" => 1, "b" => 2})
        value = %{"list" => [1, 2.5, "x", true, nil, %{"deep" => [[]]}], "unit" => "micrometer"}

        assert {:ok, g} = Group.update_attributes(g, %{c: value, b: :two})
        assert Group.attributes(g) == %{"a" => 1, "b" => "two", "c" => value}
        assert {:ok, g} = Group.delete_attributes(g, ["a", :missing])
        reopened = ExZarr.open_group!(storage: g.storage)
        assert Group.attributes(reopened) == %{"b" => "two", "c" => value}

        assert {:ok, g} = Group.set_attributes(g, %{"only" => 0})
        assert Group.attributes(ExZarr.open_group!(storage: g.storage)) == %{"only" => 0}
        assert {:error, {:invalid_attributes, _}} = Group.set_attributes(g, %{"pid" => self()})
        assert Group.attributes(ExZarr.open_group!(storage: g.storage)) == %{"only" => 0}
      end

      test "array attributes are set, updated, deleted and persisted (v#{format})" do
        g = root(zarr_format: unquote(format))
        {:ok, a} = Group.create_array(g, "arr", shape: {2}, attributes: %{"keep" => true})

        assert {:ok, a} = Array.update_attributes(a, %{"scale" => [0.5, 1.0]})
        assert {:ok, a} = Array.delete_attributes(a, ["keep"])
        assert Array.attributes(a) == %{"scale" => [0.5, 1.0]}
        assert Array.attributes(g["arr"]) == %{"scale" => [0.5, 1.0]}
        assert {:ok, a} = Array.set_attributes(a, %{})
        assert Array.attributes(g["arr"]) == %{}
        assert g["arr"].metadata.shape == a.metadata.shape
      end
    end

    test "v2 attributes live in .zattrs, v3 attributes in zarr.json" do
      g2 = root(zarr_format: 2)
      {:ok, a2} = Group.create_array(g2, "arr", shape: {2})
      {:ok, _} = Array.set_attributes(a2, %{"u" => "K"})
      {:ok, _} = Group.set_attributes(g2, %{"t" => 1})
      assert json(g2, "arr/.zattrs") == %{"u" => "K"}
      assert json(g2, ".zattrs") == %{"t" => 1}
      assert json(g2, ".zgroup") == %{"zarr_format" => 2}

      g3 = root()
      {:ok, a3} = Group.create_array(g3, "arr", shape: {2})
      {:ok, _} = Array.set_attributes(a3, %{"u" => "K"})
      {:ok, _} = Group.set_attributes(g3, %{"t" => 1})
      assert json(g3, "arr/zarr.json")["attributes"] == %{"u" => "K"}
      assert json(g3, "zarr.json")["attributes"] == %{"t" => 1}
      refute "arr/.zattrs" in keys(g3)
    end
  end

  test "a v3 group document with an unknown required field is refused" do
    {:ok, store} = Storage.new(:memory, [])
    doc = ~s({"zarr_format": 3, "node_type": "group", "novel": {"x": 1}})
    :ok = Storage.put(store, "zarr.json", doc)
    assert {:error, {:unsupported_extension, "novel"}} = ExZarr.open_group(storage: store)

    optional = ~s({"zarr_format": 3, "node_type": "group", "novel": {"must_understand": false}})
    :ok = Storage.put(store, "zarr.json", optional)
    assert {:ok, %Group{}} = ExZarr.open_group(storage: store)
  end

  test "malformed node documents are errors, never crashes" do
    documents = [
      {"zarr.json", "[1]"},
      {"zarr.json", "{"},
      {"zarr.json", ~s({"node_type": "group"})},
      {"zarr.json", ~s({"zarr_format": 3, "node_type": "group", "attributes": 5})},
      {"zarr.json",
       ~s({"zarr_format": 3, "node_type": "group", "consolidated_metadata": {"kind": "inline", "metadata": {"a": 1}}})},
      {"zarr.json", ~s({"zarr_format": 3, "node_type": "group", "consolidated_metadata": 7})},
      {".zgroup", ~s({"zarr_format": 3})},
      {".zgroup", "null"},
      {".zmetadata", ~s({"zarr_consolidated_format": 1, "metadata": []})},
      {".zmetadata", ~s({"zarr_consolidated_format": 1, "metadata": {"a/.zarray": 5}})}
    ]

    for {name, body} <- documents do
      {:ok, store} = Storage.new(:memory, [])
      :ok = Storage.put(store, name, body)
      assert {:error, _} = ExZarr.open_group(storage: store), inspect({name, body})
      assert {:error, _} = ExZarr.open(storage: store), inspect({name, body})
    end

    # A broken entry in otherwise sound consolidated metadata shows when the member is opened.
    {:ok, store} = Storage.new(:memory, [])

    zmeta =
      ~s({"zarr_consolidated_format": 1, "metadata": {".zgroup": {"zarr_format": 2}, "a/.zarray": 5}})

    :ok = Storage.put(store, ".zmetadata", zmeta)
    {:ok, g} = ExZarr.open_group(storage: store)
    assert {:error, {:member, "a", {:invalid_metadata, _}}} = Group.members(g)
    assert {:error, {:member, "a", _}} = Group.tree(g)
    assert_raise ExZarr.Error, ~r/invalid_metadata/, fn -> g["a"] end
  end

  test "a group on the filesystem round trips through open/1" do
    dir = ExZarr.Test.Tmp.path("exzarr-group-")
    on_exit(fn -> File.rm_rf!(dir) end)

    {:ok, g} = ExZarr.create_group(path: dir, zarr_format: 2)
    {:ok, a} = Group.create_array(g, "x/y", shape: {3}, dtype: :uint8)
    :ok = Array.set_slice(a, <<1, 2, 3>>)

    assert File.exists?(Path.join(dir, "x/.zgroup"))
    {:ok, %Group{} = g} = ExZarr.open(path: dir)
    assert Array.get_slice(g["x/y"]) == {:ok, <<1, 2, 3>>}
  end
end
