defmodule ExZarr.Interop.RectilinearTest do
  @moduledoc """
  Rectilinear chunk grids with the Python peers, both ways: an array ExZarr writes, read by
  each peer; an array each peer writes, read by ExZarr; data compared exactly. A peer that
  does not know the grid must refuse it (naming the chunk grid when reading), never read or
  write other data. None of zarr-python 3.1.6 (with or without the zarrs pipeline) and
  tensorstore knows the grid today; the refusals are checked so that a peer gaining it shows.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.RectilinearPeers

  @moduletag :interop
  @moduletag :tmp_dir

  @array %{shape: {10, 7}, chunks: {[3, 3, 4], [2, 5]}, fill_value: -1}
  @data for(i <- 0..69, into: <<>>, do: <<i * 3 - 50::32-little>>)

  for peer <- RectilinearPeers.peers() do
    @tag peer: peer
    test "#{peer} reads ExZarr's rectilinear array or refuses the grid", %{
      tmp_dir: dir,
      peer: peer
    } do
      path = Path.join(dir, "ex.zarr")

      {:ok, a} =
        ExZarr.create(
          path: path,
          shape: @array.shape,
          chunks: @array.chunks,
          dtype: :int32,
          fill_value: @array.fill_value
        )

      :ok = ExZarr.Array.set_slice(a, @data)

      case RectilinearPeers.read(peer, path) do
        {:ok, got} -> assert got == @data
        {:refused, why} -> assert why =~ ~r/rectilinear/i
      end
    end

    @tag peer: peer
    test "ExZarr reads #{peer}'s rectilinear array, or #{peer} refuses to write one", %{
      tmp_dir: dir,
      peer: peer
    } do
      path = Path.join(dir, "peer.zarr")

      case RectilinearPeers.write(peer, path, @array, @data) do
        :ok ->
          assert {:ok, a} = ExZarr.open(path: path)
          assert a.metadata.chunks == @array.chunks
          assert ExZarr.Array.get_slice(a) == {:ok, @data}

        {:refused, _why} ->
          refute File.exists?(Path.join([path, "c"]))
      end
    end
  end
end
