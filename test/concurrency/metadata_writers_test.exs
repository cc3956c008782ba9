defmodule ExZarr.MetadataWritersTest do
  @moduledoc """
  Metadata changes are read-modify-writes of the stored documents (`ExZarr.Node`): writers
  holding older handles, or writing at the same time, never undo each other's changes.
  """
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Group, Node, Storage}

  defp memory do
    {:ok, store} = Storage.new(:memory, owner: self())
    store
  end

  defp json(store, key) do
    {:ok, bin} = Storage.get(store, key)
    :jiffy.decode(bin, [:return_maps])
  end

  for format <- [2, 3] do
    test "v#{format}: concurrent attribute updates from stale handles all land" do
      store = memory()
      {:ok, group} = Group.create(store, "g", zarr_format: unquote(format))

      {:ok, array} =
        ExZarr.create(storage: store, prefix: "a", shape: {4}, zarr_format: unquote(format))

      for node <- [group, array] do
        update =
          if match?(%Group{}, node),
            do: &Group.update_attributes/2,
            else: &Array.update_attributes/2

        1..30
        |> Task.async_stream(&update.(node, %{"k#{&1}" => &1}), max_concurrency: 10)
        |> Enum.each(fn {:ok, {:ok, _}} -> :ok end)
      end

      expected = Map.new(1..30, &{"k#{&1}", &1})
      {:ok, group} = ExZarr.open_group(storage: store, prefix: "g")
      {:ok, array} = ExZarr.open(storage: store, prefix: "a")
      assert Group.attributes(group) == expected
      assert Array.attributes(array) == expected
    end

    test "v#{format}: a resize from an older handle keeps attributes set meanwhile" do
      store = memory()

      {:ok, old} =
        ExZarr.create(
          storage: store,
          prefix: "a",
          shape: {4},
          chunks: {2},
          zarr_format: unquote(format)
        )

      {:ok, other} = ExZarr.open(storage: store, prefix: "a")
      {:ok, other} = Array.set_attributes(other, %{"units" => "K"})
      {:ok, resized} = Array.resize(old, {10})
      assert resized.metadata.shape == {10}
      {:ok, fresh} = ExZarr.open(storage: store, prefix: "a")
      assert fresh.metadata.shape == {10}
      assert Array.attributes(fresh) == %{"units" => "K"}
      # and an attribute change from a handle older than the resize keeps the new shape
      {:ok, _} = Array.update_attributes(other, %{"more" => 1})
      {:ok, fresh} = ExZarr.open(storage: store, prefix: "a")
      assert fresh.metadata.shape == {10}
      assert Array.attributes(fresh) == %{"units" => "K", "more" => 1}
    end

    test "v#{format}: concurrent shape updates each get their own region" do
      store = memory()

      {:ok, _} =
        ExZarr.create(storage: store, prefix: "a", shape: {0, 3}, zarr_format: unquote(format))

      regions =
        1..20
        |> Task.async_stream(fn _ ->
          Node.update_shape(store, "a", fn {n, m} -> {:ok, {n + 2, m}} end)
        end)
        |> Enum.map(fn {:ok, {:ok, {{old, 3}, {new, 3}}}} -> {old, new} end)

      assert Enum.sort(regions) == for(i <- 0..19, do: {2 * i, 2 * i + 2})
      {:ok, array} = ExZarr.open(storage: store, prefix: "a")
      assert array.metadata.shape == {40, 3}
    end

    test "v#{format}: groups created at once make their common ancestors once" do
      store = memory()
      {:ok, root} = ExZarr.create_group(storage: store, zarr_format: unquote(format))

      1..12
      |> Task.async_stream(&Group.create_group(root, "x/y/g#{&1}"), max_concurrency: 12)
      |> Enum.each(fn {:ok, {:ok, %Group{}}} -> :ok end)

      {:ok, members} = Group.members(root, recursive: true)
      paths = Enum.map(members, &elem(&1, 0))
      assert paths == Enum.sort(["x", "x/y" | for(i <- 1..12, do: "x/y/g#{i}")])
    end
  end

  test "shape updates: errors for what is not an array or not a shape" do
    store = memory()
    {:ok, _} = ExZarr.create(storage: store, prefix: "a", shape: {2, 2})
    {:ok, _} = Group.create(store, "g")
    assert Node.update_shape(store, "none", &{:ok, &1}) == {:error, :not_found}
    assert Node.update_shape(store, "g", &{:ok, &1}) == {:error, {:not_an_array, "g"}}

    assert Node.update_shape(store, "a", fn _ -> {:ok, {1}} end) ==
             {:error, {:invalid_shape, {1}}}

    assert Node.update_shape(store, "a", fn _ -> {:ok, {1, -1}} end) ==
             {:error, {:invalid_shape, {1, -1}}}

    assert Node.update_shape(store, "a", fn _ -> {:error, :no} end) == {:error, :no}
    assert %{"shape" => [2, 2]} = json(store, "a/zarr.json")
  end

  test "an attribute change on a node whose documents are gone is an error, not a rebirth" do
    store = memory()
    {:ok, array} = ExZarr.create(storage: store, prefix: "a", shape: {2})
    :ok = Storage.delete(store, "a/zarr.json")
    assert Array.update_attributes(array, %{"x" => 1}) == {:error, :not_found}
    assert Storage.get(store, "a/zarr.json") == {:error, :not_found}
  end

  for format <- [2, 3] do
    test "v#{format}: consolidated metadata and attributes changed from different handles" do
      store = memory()
      {:ok, root} = ExZarr.create_group(storage: store, zarr_format: unquote(format))
      {:ok, _} = Group.create_array(root, "a", shape: {3})
      # `root` does not know of the consolidation another handle makes
      {:ok, consolidated} = ExZarr.consolidate(storage: store)
      assert consolidated.metadata.consolidated != nil
      {:ok, _} = Group.update_attributes(root, %{"title" => "t"})

      {:ok, fresh} = ExZarr.open_group(storage: store)
      assert Group.attributes(fresh) == %{"title" => "t"}
      assert Map.keys(fresh.metadata.consolidated) != []
      assert {:ok, [{"a", %Array{}}]} = Group.members(fresh)

      # deleting a member from a handle that has consolidated metadata keeps the attributes
      {:ok, _} = Group.delete(consolidated, "a")
      {:ok, fresh} = ExZarr.open_group(storage: store)
      assert Group.attributes(fresh) == %{"title" => "t"}
      assert Group.members(fresh) == {:ok, []}
    end
  end
end
