defmodule ExZarr.Storage.FilesystemCwdTest do
  # Changes the current directory of the VM, so it must not run beside other tests (nor while
  # test files are still being loaded by relative path).
  use ExUnit.Case, async: false

  alias ExZarr.Storage

  @moduletag :tmp_dir

  test "relative paths resolve against the current directory when the store opens", %{
    tmp_dir: dir
  } do
    {:ok, relative} = File.cd!(dir, fn -> Storage.new(:filesystem, path: "rel") end)
    assert relative.state.root == Path.join(dir, "rel")
    :ok = Storage.put(relative, "k", "v")
    assert File.read!(Path.join(dir, "rel/k")) == "v"
  end
end
