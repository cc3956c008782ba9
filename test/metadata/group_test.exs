defmodule ExZarr.Metadata.GroupTest do
  use ExUnit.Case, async: true

  alias ExZarr.JSON
  alias ExZarr.Metadata.Group

  doctest ExZarr.Metadata.Group

  defp decode_documents(%Group{zarr_format: 3} = group) do
    [{"zarr.json", json}] = Group.to_documents(group)
    {:ok, doc} = JSON.decode(json)
    Group.decode_v3(doc)
  end

  defp decode_documents(%Group{zarr_format: 2} = group) do
    [{".zgroup", zgroup}, {".zattrs", zattrs}] = Group.to_documents(group)
    {:ok, zgroup} = JSON.decode(zgroup)
    {:ok, zattrs} = JSON.decode(zattrs)
    Group.decode_v2(zgroup, zattrs)
  end

  test "groups round trip through their documents, attributes with null and NaN too" do
    attributes = %{"a" => [1, nil, 2.5], "n" => :nan, "nested" => %{"x" => "é"}}
    consolidated = %{"x/zarr.json" => %{"zarr_format" => 3, "node_type" => "group"}}

    for group <- [
          %Group{zarr_format: 3},
          %Group{zarr_format: 3, attributes: attributes},
          %Group{zarr_format: 3, consolidated: consolidated},
          %Group{zarr_format: 2, attributes: attributes}
        ] do
      assert decode_documents(group) == {:ok, group}
    end
  end

  test "a v3 group refuses unknown keys unless they need not be understood" do
    doc = %{"zarr_format" => 3, "node_type" => "group"}
    assert {:ok, _} = Group.decode_v3(Map.put(doc, "x", %{"must_understand" => false}))

    assert Group.decode_v3(Map.put(doc, "x", %{"must_understand" => true})) ==
             {:error, {:unsupported_extension, "x"}}

    assert Group.decode_v3(Map.put(doc, "x", 1)) == {:error, {:unsupported_extension, "x"}}
  end

  test "documents that are not groups are errors naming the problem" do
    assert Group.decode_v3(%{"zarr_format" => 3, "node_type" => "array"}) ==
             {:error, :not_a_group}

    for bad <- [%{}, %{"zarr_format" => 2, "node_type" => "group"}, [], nil] do
      assert {:error, {:invalid_metadata, _}} = Group.decode_v3(bad)
    end

    doc = %{"zarr_format" => 3, "node_type" => "group", "attributes" => [1]}
    assert {:error, {:invalid_metadata, _}} = Group.decode_v3(doc)

    assert {:error, {:invalid_metadata, _}} = Group.decode_v2(%{"zarr_format" => 3}, nil)
    assert {:error, {:invalid_metadata, _}} = Group.decode_v2(%{"zarr_format" => 2}, "x")

    assert {:ok, %Group{zarr_format: 2, attributes: %{}}} =
             Group.decode_v2(%{"zarr_format" => 2}, nil)
  end
end
