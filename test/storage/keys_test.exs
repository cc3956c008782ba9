defmodule ExZarr.Storage.KeysTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Keys

  doctest ExZarr.Storage.Keys

  test "join keeps the root key as it is and joins with one slash" do
    assert Keys.join("", "c/0") == "c/0"
    assert Keys.join("g", "zarr.json") == "g/zarr.json"
    assert Keys.join("g/a", "c/0/1") == "g/a/c/0/1"
  end
end
