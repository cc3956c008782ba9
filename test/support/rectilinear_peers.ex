defmodule ExZarr.Test.RectilinearPeers do
  @moduledoc """
  The Python peers on rectilinear chunk grids (`test/interop/rectilinear_peers.py`): each reads
  an int32 array, or writes one on a grid given as ExZarr writes `chunk_shapes`, or refuses
  with its error. A new peer is one more entry in `peers/0` and one more branch in the script.

  `zarr-python-newest` is the newest zarr-python release (3.4.2 has the grid, experimental,
  behind `array.rectilinear_chunks`), in its own venv: `EXZARR_PYTHON_NEWEST`, else
  `ExZarr.Test.Python.executable(:newest)` where that exists; absent where neither does.
  """

  alias ExZarr.Test.Python

  @script Path.expand("../interop/rectilinear_peers.py", __DIR__)

  @doc """
  The peers the script knows, each with whether it must know the grid (`true`: a refusal is a
  failure) or may refuse it.
  """
  @spec peers() :: [{String.t(), boolean()}]
  def peers,
    do: [
      {"zarr-python", false},
      {"zarrs", false},
      {"tensorstore", false},
      {"zarr-python-newest", true}
    ]

  @doc "The python that runs a peer, or nil when the peer is not installed."
  @spec python(String.t()) :: String.t() | nil
  def python("zarr-python-newest") do
    case System.get_env("EXZARR_PYTHON_NEWEST") do
      path when is_binary(path) and path != "" -> path
      _ -> newest_from_setup()
    end
  end

  def python(_peer), do: Python.executable()

  # (the newest venv is known to ExZarr.Test.Python once it takes a venv argument)
  defp newest_from_setup do
    if Code.ensure_loaded?(Python) and function_exported?(Python, :executable, 1),
      do: apply(Python, :executable, [:newest])
  end

  @doc "The whole array at `path` as the peer reads it (int32 little-endian), or its refusal."
  @spec read(String.t(), String.t()) :: {:ok, binary()} | {:refused, String.t()}
  def read(peer, path) do
    out = path <> ".#{peer}.bin"

    with :ok <- run(peer, ["read", peer, path, out]) do
      {:ok, File.read!(out)}
    end
  end

  @doc """
  Has the peer create an int32 array at `path` of `shape` on the grid `chunks` (an
  `ExZarr.Metadata` `chunks` tuple: shards when `inner` gives the inner chunk shape) with
  `fill_value`, and write `data` into it; or its refusal.
  """
  @spec write(String.t(), String.t(), map(), binary()) :: :ok | {:refused, String.t()}
  def write(peer, path, %{shape: shape, chunks: chunks, fill_value: fill} = array, data) do
    %{"configuration" => %{"chunk_shapes" => axes}} = ExZarr.ChunkGrid.to_json(chunks)

    spec = %{
      "shape" => Tuple.to_list(shape),
      "chunk_shapes" => axes,
      "fill_value" => fill,
      "inner" => if(inner = array[:inner], do: Tuple.to_list(inner))
    }

    input = path <> ".in.bin"
    File.write!(input, data)
    run(peer, ["write", peer, path, ExZarr.Test.Interop.encode_json(spec), input])
  end

  defp run(peer, args) do
    case System.cmd(python(peer), ["-c", File.read!(@script) | args], stderr_to_stdout: true) do
      {_, 0} -> :ok
      {why, 3} -> {:refused, String.trim(why)}
      {out, status} -> raise "rectilinear_peers.py (#{peer}) exited #{status}:\n#{out}"
    end
  end
end
