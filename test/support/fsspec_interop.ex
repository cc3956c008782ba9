defmodule ExZarr.Test.FsspecInterop do
  @moduledoc """
  zarr-python on an object store through its fsspec filesystem (gcsfs for GCS, adlfs for
  Azure) and ExZarr reading each other's arrays there: a v2 array (zlib), a v3 array and a
  sharded v3 array, written by one side and read whole and in part by the other.

      FsspecInterop.both_ways("gs://bucket/interop", %{"endpoint_url" => ..., "token" => "anon"},
                              fn path -> store_at_path end)
  """
  import ExUnit.Assertions

  alias ExZarr.Array

  # argv: base URL, fsspec storage options (JSON), "write" | "read".
  @script """
  import os, sys, json
  # gcsfs would first ask a gRPC control API for the bucket's layout (no emulator has it)
  os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"
  import numpy as np, numcodecs, zarr
  from zarr.storage import FsspecStore
  base, options, mode = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]

  if base.startswith("abfs://"):
      # adlfs hands a suffix read (the shard index) to Azure as a negative offset, which Blob
      # storage has no form for; ask for the size and read from there instead.
      import adlfs
      cat_file = adlfs.AzureBlobFileSystem._cat_file
      async def suffix_aware(self, path, start=None, end=None, **kwargs):
          if start is not None and start < 0:
              start = max((await self._info(path))["size"] + start, 0)
          return await cat_file(self, path, start=start, end=end, **kwargs)
      adlfs.AzureBlobFileSystem._cat_file = suffix_aware

  arrays = {
      "v2": (dict(zarr_format=2, shape=(7, 4), chunks=(3, 3), dtype="int16",
                  compressors=numcodecs.Zlib(level=1)),
             np.arange(28, dtype="int16").reshape(7, 4) * 3),
      "v3": (dict(zarr_format=3, shape=(6, 5), chunks=(4, 3), dtype="float32"),
             np.arange(30, dtype="float32").reshape(6, 5) / 4),
      "sharded": (dict(zarr_format=3, shape=(16, 12), chunks=(4, 3), shards=(8, 6), dtype="uint16"),
                  np.arange(192, dtype="uint16").reshape(16, 12) * 5),
  }
  for name, (spec, data) in arrays.items():
      store = FsspecStore.from_url(f"{base}/{name}", storage_options=options, read_only=mode == "read")
      if mode == "write":
          zarr.create_array(store, overwrite=True, fill_value=0, **spec)[...] = data
      else:
          a = zarr.open_array(store, mode="r")
          print("RESULT", json.dumps({"name": name, "format": a.metadata.zarr_format,
                                      "whole": bool((a[...] == data).all()),
                                      "part": bool((a[1:6, 2:4] == data[1:6, 2:4]).all())}))
  """

  # The same arrays on the Elixir side: {name, create options, shape, data}.
  defp arrays do
    [
      {"v2", [zarr_format: 2, chunks: {3, 3}, dtype: :int16, compressor: %{id: "zlib", level: 1}],
       {7, 4}, for(i <- 0..27, into: <<>>, do: <<i * 3::little-signed-16>>)},
      {"v3", [zarr_format: 3, chunks: {4, 3}, dtype: :float32], {6, 5},
       for(i <- 0..29, into: <<>>, do: <<i / 4::little-float-32>>)},
      {"sharded", [zarr_format: 3, chunks: {4, 3}, shards: {8, 6}, dtype: :uint16], {16, 12},
       for(i <- 0..191, into: <<>>, do: <<i * 5::little-16>>)}
    ]
  end

  @doc """
  zarr-python writes the arrays under `"<url>/from_py"` and ExZarr reads them through
  `store_at.("from_py/<name>")`; ExZarr writes them through `store_at.("from_ex/<name>")` and
  zarr-python reads them under `"<url>/from_ex"`. `options` are the filesystem's.
  """
  @spec both_ways(String.t(), map(), (String.t() -> ExZarr.Storage.t())) :: :ok
  def both_ways(url, options, store_at) do
    options = :jiffy.encode(options)
    ExZarr.Test.Python.run!(@script, [url <> "/from_py", options, "write"])

    for {name, _opts, {_rows, cols} = shape, data} <- arrays() do
      {:ok, array} = ExZarr.open(storage: store_at.("from_py/" <> name))
      assert Array.get_slice(array, start: {0, 0}, stop: shape) == {:ok, data}, name
      row = fn r -> binary_part(data, (r * cols + 2) * item(array), 2 * item(array)) end
      part = for r <- 1..5, into: <<>>, do: row.(r)
      assert Array.get_slice(array, start: {1, 2}, stop: {6, 4}) == {:ok, part}, name
    end

    for {name, opts, shape, data} <- arrays() do
      {:ok, array} =
        ExZarr.create(
          [storage: store_at.("from_ex/" <> name), shape: shape, fill_value: 0] ++ opts
        )

      :ok = Array.set_slice(array, data, start: {0, 0}, stop: shape)
    end

    out = ExZarr.Test.Python.run!(@script, [url <> "/from_ex", options, "read"])

    results =
      for "RESULT " <> json <- String.split(out, "\n"), do: :jiffy.decode(json, [:return_maps])

    assert results == [
             %{"name" => "v2", "format" => 2, "whole" => true, "part" => true},
             %{"name" => "v3", "format" => 3, "whole" => true, "part" => true},
             %{"name" => "sharded", "format" => 3, "whole" => true, "part" => true}
           ],
           out

    :ok
  end

  defp item(array), do: ExZarr.DType.itemsize(array.metadata.dtype)
end
