defmodule ExZarr.BadInput.ImproperListsTest do
  @moduledoc """
  Improper lists (`[a | b]`) wherever a list enters from a caller: codecs and filters of
  `ExZarr.create/1`, structured fields, chunk edges, attribute values and keys to delete,
  byte ranges, the HTTP store's headers, a job's nodes. Each is an
  `{:error, _}`, never a FunctionClauseError from walking the list, and nothing is written.
  """
  use ExUnit.Case, async: true

  alias ExZarr.{Array, Storage}

  @base [shape: {4}, chunks: {2}, dtype: :int32, storage: :memory]

  test "codecs and filters of create, in both formats" do
    for format <- [2, 3] do
      opts = [zarr_format: format] ++ @base

      assert {:error, _} =
               ExZarr.create(opts ++ [codecs: [%{"name" => "bytes"} | %{"name" => "zstd"}]])

      assert {:error, _} = ExZarr.create(opts ++ [filters: [%{id: "delta", dtype: "<i4"} | :x]])
    end
  end

  test "attribute values, at any depth, on create and on update" do
    {:ok, a} = ExZarr.create(@base ++ [attributes: %{"keep" => 1}])

    for bad <- [[1 | 2], [1, [2 | 3]], %{"x" => [[] | "y"]}] do
      assert {:error, _} = ExZarr.create(@base ++ [attributes: %{"a" => bad}])
      assert {:error, _} = Array.set_attributes(a, %{"a" => bad})
      assert {:error, _} = Array.update_attributes(a, %{"a" => bad})
    end

    {:ok, a} = ExZarr.open(storage: a.storage)
    assert Array.attributes(a) == %{"keep" => 1}
  end

  test "attribute keys to delete, on arrays and groups" do
    {:ok, a} = ExZarr.create(@base ++ [attributes: %{"keep" => 1}])
    {:ok, g} = ExZarr.create_group(storage: :memory, attributes: %{"keep" => 1})

    for keys <- [["keep" | "x"], ["a", "keep" | :b]] do
      assert {:error, {:invalid_attribute_keys, ^keys}} = Array.delete_attributes(a, keys)
      assert {:error, {:invalid_attribute_keys, ^keys}} = ExZarr.Group.delete_attributes(g, keys)
    end

    {:ok, a} = ExZarr.open(storage: a.storage)
    assert Array.attributes(a) == %{"keep" => 1}
  end

  test "structured fields, rectilinear chunk edges and byte ranges" do
    for fields <- [
          [{"a", :int8, :little, {}} | {"b", :int8, :little, {}}],
          [:x],
          [{"a", :int8, nil, {}}, "b"]
        ] do
      assert {:error, {:invalid_option, :dtype, _}} =
               ExZarr.create(Keyword.put(@base, :dtype, {:structured, fields}))
    end

    assert {:error, {:invalid_option, :chunks, _}} =
             ExZarr.create(Keyword.put(@base, :chunks, {[1, 3 | 0]}) ++ [zarr_format: 3])

    {:ok, store} = Storage.new(:memory, [])
    :ok = Storage.put(store, "k", "0123456789")
    assert {:error, {:invalid_ranges, _}} = Storage.get_ranges(store, "k", [{0, 1} | {1, 1}])
    assert {:ok, ["0", "1"]} = Storage.get_ranges(store, "k", [{0, 1}, {1, 1}])
  end

  test "the HTTP store's headers" do
    for headers <- [[{"a", "b"} | :x], [{"a", "b"}, {"c", "d"} | {"e", "f"}]] do
      assert {:error, {:invalid_option, :headers, _}} =
               Storage.new(:http, url: "http://127.0.0.1:1/a", headers: headers)
    end
  end
end
