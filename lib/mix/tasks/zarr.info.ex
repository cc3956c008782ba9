defmodule Mix.Tasks.Zarr.Info do
  @shortdoc "Prints what an array or group is and how it is stored"

  @moduledoc """
  Prints the facts about the Zarr array or group at a path or URL, like zarr-python's
  `info_complete()`: format, shape, chunk and shard shape, data type, fill value, codecs,
  dimension names, attributes, and the stored picture (chunks initialized of the grid, bytes
  stored, compression ratio). See `ExZarr.info/1`.

      mix zarr.info data/a.zarr
      mix zarr.info s3://bucket/a.zarr --endpoint http://127.0.0.1:9000 --json
      mix zarr.info https://example.org/image.zarr --prefix 0

  Options:

    * `--json` - one JSON document instead of text (tuples as arrays, `NaN` as a string)

  Counting the stored bytes asks the store for the size of every stored chunk (one `stat`
  or `HEAD` each), as zarr-python does.

  #{Mix.Zarr.store_doc()}
  """
  use Mix.Task

  @impl true
  def run(args) do
    {url, store_opts, opts} = Mix.Zarr.parse!(args, [json: :boolean], "zarr.info")
    node = Mix.Zarr.open!(url, store_opts)

    case ExZarr.info(node) do
      {:ok, info} ->
        text = if opts[:json], do: ExZarr.Info.to_json(info), else: ExZarr.Info.format(info)
        Mix.shell().info(String.trim_trailing(text))

      {:error, reason} ->
        Mix.raise("#{url}: #{Mix.Zarr.message(reason)}")
    end
  end
end
