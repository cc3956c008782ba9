defmodule ExZarr.NodeTest do
  use ExUnit.Case, async: true

  alias ExZarr.{Node, Storage}

  doctest ExZarr.Node

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
