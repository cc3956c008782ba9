defmodule Mix.Tasks.Zarr.Tree do
  @shortdoc "Prints the hierarchy of a Zarr group"

  @moduledoc """
  Prints the hierarchy below the Zarr group at a path or URL, one line per node, arrays with
  their shape and data type, like zarr-python's `Group.tree()` (see `ExZarr.tree/1`). An
  array prints as its one line.

      mix zarr.tree data/tree.zarr
      mix zarr.tree gs://bucket/tree.zarr --endpoint http://127.0.0.1:4443

  #{Mix.Zarr.store_doc()}
  """
  use Mix.Task

  @impl true
  def run(args) do
    {url, store_opts, _opts} = Mix.Zarr.parse!(args, [], "zarr.tree")

    case Mix.Zarr.open!(url, store_opts) do
      %ExZarr.Group{} = group ->
        case ExZarr.tree(group) do
          {:ok, text} -> Mix.shell().info(String.trim_trailing(text))
          {:error, reason} -> Mix.raise("#{url}: #{Mix.Zarr.message(reason)}")
        end

      %ExZarr.Array{metadata: meta} = array ->
        shape = python_tuple(Tuple.to_list(meta.shape))
        Mix.shell().info("/#{array.prefix} #{shape} #{ExZarr.DType.name(meta.dtype)}")
    end
  end

  # As in the tree printout (zarr-python's): (4,) and (100, 100).
  defp python_tuple([one]), do: "(#{one},)"
  defp python_tuple(dims), do: "(" <> Enum.join(dims, ", ") <> ")"
end
