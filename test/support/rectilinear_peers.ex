defmodule ExZarr.Test.RectilinearPeers do
  @moduledoc """
  The Python peers on rectilinear chunk grids (`test/interop/rectilinear_peers.py`): each reads
  an int32 array, or writes one on a grid given as ExZarr writes `chunk_shapes`, or refuses
  with its error. A new peer (a newer zarr-python, zarrs_tools) is one more name in `peers/0`
  and one more branch in the script.
  """

  alias ExZarr.Test.Python

  @script Path.expand("../interop/rectilinear_peers.py", __DIR__)

  @doc "The peers the script knows."
  @spec peers() :: [String.t()]
  def peers, do: ["zarr-python", "zarrs", "tensorstore"]

  @doc "The whole array at `path` as the peer reads it (int32 little-endian), or its refusal."
  @spec read(String.t(), String.t()) :: {:ok, binary()} | {:refused, String.t()}
  def read(peer, path) do
    out = path <> ".#{peer}.bin"

    with :ok <- run(["read", peer, path, out]) do
      {:ok, File.read!(out)}
    end
  end

  @doc """
  Has the peer create an int32 array at `path` of `shape` on the grid `chunks` (an
  `ExZarr.Metadata` `chunks` tuple) with `fill_value`, and write `data` into it; or its refusal.
  """
  @spec write(String.t(), String.t(), map(), binary()) :: :ok | {:refused, String.t()}
  def write(peer, path, %{shape: shape, chunks: chunks, fill_value: fill}, data) do
    %{"configuration" => %{"chunk_shapes" => axes}} = ExZarr.ChunkGrid.to_json(chunks)
    spec = %{"shape" => Tuple.to_list(shape), "chunk_shapes" => axes, "fill_value" => fill}
    input = path <> ".in.bin"
    File.write!(input, data)
    run(["write", peer, path, ExZarr.Test.Interop.encode_json(spec), input])
  end

  defp run(args) do
    case Python.run(File.read!(@script), args) do
      {:ok, _} -> :ok
      {:error, {3, why}} -> {:refused, String.trim(why)}
      {:error, {status, out}} -> raise "rectilinear_peers.py exited #{status}:\n#{out}"
    end
  end
end
