defmodule Mix.Tasks.Zarr.InfoTest do
  # Mix.shell/0 and the environment variables the stores read are global.
  use ExUnit.Case, async: false

  alias ExZarr.Test.MixTask

  @moduletag :tmp_dir

  defp info(args), do: MixTask.run(Mix.Tasks.Zarr.Info, args)

  test "prints the facts of an array; --json prints them as JSON", %{tmp_dir: dir} do
    path = Path.join(dir, "a.zarr")
    a = MixTask.sample_array!(path: path)
    {:ok, facts} = ExZarr.info(a)

    assert {0, text, ""} = info([path])
    assert text == String.trim_trailing(ExZarr.Info.format(facts))

    for line <- [
          "Type               : Array",
          "Data type          : float32",
          "Shape              : {40, 30}",
          "Shard shape        : {20, 30}",
          "Chunk shape        : {5, 10}",
          "Dimension names    : [\"y\", \"x\"]",
          "Attributes         : %{\"units\" => \"K\"}",
          "Chunks initialized : 1 of 2 shards"
        ],
        do: assert(text <> "\n" =~ line <> "\n")

    assert text =~ ~r/^No\. bytes stored   : \d+/m
    assert text =~ ~r/^Storage ratio      : \d+\.\d$/m

    assert {0, json, ""} = info([path, "--json"])
    decoded = :jiffy.decode(json, [:return_maps])

    assert %{
             "node_type" => "array",
             "shape" => [40, 30],
             "chunks" => [5, 10],
             "shards" => [20, 30],
             "chunks_initialized" => 1,
             "chunks_total" => 2,
             "bytes" => 4800,
             "dimension_names" => ["y", "x"]
           } = decoded

    assert decoded["bytes_stored"] == facts.bytes_stored
  end

  test "a group, a node inside a store (--prefix), and errors", %{tmp_dir: dir} do
    {:ok, g} = ExZarr.create_group(path: dir, attributes: %{"title" => "t"})
    {:ok, _} = ExZarr.Group.create_array(g, "a/b", shape: {3}, dtype: :int8)

    assert {0, text, ""} = info([dir])
    assert text =~ "Type         : Group\n"
    assert text =~ "No. members  : 1\n"

    assert {0, text, ""} = info([dir, "--prefix", "a/b"])
    assert text =~ "Name               : /a/b\n"
    assert text =~ "Store              : file://#{dir}/a/b\n"

    assert {1, "", err} = info([dir, "--prefix", "nope"])
    assert err =~ "no Zarr array or group there"
    assert {1, "", err} = info(["gopher://host/a.zarr"])
    assert err =~ "gopher:// is not a store ExZarr opens"
    assert {1, "", err} = info([dir, "--region", "eu-west-1"])
    assert err =~ "--region does not apply to this store"
    assert {1, "", err} = info([dir, dir])
    assert err =~ "takes one URL or path"
    assert {1, "", err} = info([dir, "--header", "no colon"])
    assert err =~ "--header must be"
  end

  test "a zip:// store", %{tmp_dir: dir} do
    zip = Path.join(dir, "a.zip")
    a = MixTask.sample_array!(path: "zip://" <> zip, mode: :write)
    :ok = ExZarr.close(a)

    assert {0, text, ""} = info(["zip://" <> zip])
    assert text =~ "Store              : zip://#{zip}\n"
    assert String.ends_with?(text, "Chunks initialized : 1 of 2 shards")
  end
end
