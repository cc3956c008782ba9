defmodule ExZarr.Storage.GridFSInteropTest do
  # zarr-python arrays moved into and out of GridFS by pymongo's gridfs, on FerretDB.
  use ExUnit.Case, async: false
  @moduletag :interop
  @moduletag timeout: 300_000
  @moduletag :tmp_dir

  alias ExZarr.Array
  alias ExZarr.Test.{FerretDB, Python}

  use FerretDB

  # argv: url, database, bucket, mode, folder. "import": zarr-python writes a v3 group (a
  # plain, an uncompressed one in 320 kB chunks, a sharded one; consolidated) and a v2 array
  # under the folder, and every file goes into GridFS as a file named by its path (one key
  # first in an older revision). "export": every filename's latest revision is written out
  # under the folder and zarr-python checks what ExZarr wrote.
  @script """
  import sys, os, json
  import numpy as np, zarr, pymongo, gridfs
  url, dbname, bucket, mode, root = sys.argv[1:6]
  db = pymongo.MongoClient(url, directConnection=True, serverSelectionTimeoutMS=20000)[dbname]
  fs = gridfs.GridFSBucket(db, bucket_name=bucket)
  a = (np.arange(2000, dtype="<i4") * 3 - 7).reshape(50, 40)
  b = (np.arange(60000, dtype="<f8") / 8).reshape(300, 200)
  c = (np.arange(4096, dtype="<u2") * 5).reshape(64, 64)

  if mode == "import":
      g = zarr.open_group(os.path.join(root, "v3.zarr"), mode="w", zarr_format=3)
      g.attrs["from"] = "zarr-python"
      g.create_array("a", shape=a.shape, chunks=(20, 20), dtype=a.dtype)[...] = a
      g.create_array("b", shape=b.shape, chunks=(200, 200), dtype=b.dtype, compressors=None)[...] = b
      g.create_array("c", shape=c.shape, chunks=(8, 8), shards=(32, 32), dtype=c.dtype)[...] = c
      zarr.consolidate_metadata(os.path.join(root, "v3.zarr"))
      v2 = zarr.open_array(os.path.join(root, "v2.zarr"), mode="w", zarr_format=2, shape=a.shape,
                           chunks=(16, 16), dtype=a.dtype, compressor={"id": "zlib", "level": 1})
      v2[...] = a
      fs.upload_from_stream("py/v2.zarr/.zattrs", b'{"stale": true}')
      for folder, _, files in os.walk(root):
          for name in files:
              path = os.path.join(folder, name)
              with open(path, "rb") as f:
                  fs.upload_from_stream("py/" + os.path.relpath(path, root), f)
      print(json.dumps("imported"))
  else:
      names = sorted({f.filename for f in fs.find()})
      for name in names:
          path = os.path.join(root, name)
          os.makedirs(os.path.dirname(path), exist_ok=True)
          with open(path, "wb") as f:
              f.write(fs.open_download_stream_by_name(name).read())
      base = os.path.join(root, "ex")
      g = zarr.open_group(os.path.join(base, "v3.zarr"), mode="r")
      print(json.dumps({
          "v2": bool((zarr.open_array(os.path.join(base, "v2.zarr"), mode="r")[...] == a).all()),
          "b": bool((g["b"][...] == b).all()),
          "c": bool((g["c"][...] == c).all()),
          "c_cutout": bool((g["c"][5:40, 30:33] == c[5:40, 30:33]).all()),
          "attrs": dict(g.attrs),
          "revisions": db[bucket + ".files"].count_documents({}),
          "names": len(names),
      }))
  """

  defp expected(:a), do: for(i <- 0..1999, into: <<>>, do: <<i * 3 - 7::little-signed-32>>)
  defp expected(:b), do: for(i <- 0..59_999, into: <<>>, do: <<i / 8::little-float-64>>)
  defp expected(:c), do: for(i <- 0..4095, into: <<>>, do: <<i * 5::little-16>>)

  defp python!(ctx, bucket, mode) do
    args = [ctx.server.url, "exzarr", bucket, mode, ctx.tmp_dir]

    @script
    |> Python.run!(args)
    |> String.split("\n", trim: true)
    |> List.last()
    |> :jiffy.decode([:return_maps])
  end

  defp gridfs(ctx, bucket, path),
    do: [storage: :mongo_gridfs, path: path] ++ FerretDB.store_opts(ctx.server, bucket)

  test "an array zarr-python wrote, copied into GridFS by pymongo, reads exactly", ctx do
    assert python!(ctx, "from_python", "import") == "imported"

    {:ok, group} = ExZarr.open_group(gridfs(ctx, "from_python", "py/v3.zarr"))
    assert group.metadata.attributes == %{"from" => "zarr-python"}

    for {name, shape} <- [a: {50, 40}, b: {300, 200}, c: {64, 64}] do
      {:ok, array} = ExZarr.open(gridfs(ctx, "from_python", "py/v3.zarr") ++ [prefix: "#{name}"])

      assert Array.get_slice(array, start: {0, 0}, stop: shape) == {:ok, expected(name)},
             "#{name}"
    end

    {:ok, sharded} = ExZarr.open(gridfs(ctx, "from_python", "py/v3.zarr") ++ [prefix: "c"])
    cutout = for r <- 5..39, c <- 30..32, into: <<>>, do: <<(r * 64 + c) * 5::little-16>>
    assert Array.get_slice(sharded, start: {5, 30}, stop: {40, 33}) == {:ok, cutout}

    # the newest revision of .zattrs, not the stale one uploaded first
    {:ok, v2} = ExZarr.open(gridfs(ctx, "from_python", "py/v2.zarr"))
    assert v2.metadata.zarr_format == 2
    assert Array.get_slice(v2, start: {0, 0}, stop: {50, 40}) == {:ok, expected(:a)}
    {:ok, attrs} = ExZarr.Storage.get(v2.storage, ".zattrs")
    refute attrs =~ "stale"
  end

  test "an array ExZarr wrote into GridFS is copied out by pymongo and opens in zarr-python",
       ctx do
    {:ok, v2} =
      ExZarr.create(
        gridfs(ctx, "from_exzarr", "ex/v2.zarr") ++
          [
            shape: {50, 40},
            chunks: {16, 16},
            dtype: :int32,
            zarr_format: 2,
            compressor: %{id: "zlib", level: 1}
          ]
      )

    :ok = Array.set_slice(v2, expected(:a), start: {0, 0}, stop: {50, 40})

    {:ok, root} =
      ExZarr.create_group(
        gridfs(ctx, "from_exzarr", "ex/v3.zarr") ++ [attributes: %{"from" => "ExZarr"}]
      )

    {:ok, b} =
      ExZarr.Group.create_array(root, "b",
        shape: {300, 200},
        chunks: {200, 200},
        dtype: :float64,
        compressor: nil
      )

    :ok = Array.set_slice(b, expected(:b), start: {0, 0}, stop: {300, 200})
    # written twice: pymongo must find one revision per file
    :ok = Array.set_slice(b, expected(:b), start: {0, 0}, stop: {300, 200})

    {:ok, c} =
      ExZarr.Group.create_array(root, "c",
        shape: {64, 64},
        chunks: {8, 8},
        shards: {32, 32},
        dtype: :uint16
      )

    :ok = Array.set_slice(c, expected(:c), start: {0, 0}, stop: {64, 64})

    result = python!(ctx, "from_exzarr", "export")

    assert %{
             "v2" => true,
             "b" => true,
             "c" => true,
             "c_cutout" => true,
             "attrs" => %{"from" => "ExZarr"}
           } = result

    assert result["revisions"] == result["names"]
  end
end
