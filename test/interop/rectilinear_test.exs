defmodule ExZarr.Interop.RectilinearTest do
  @moduledoc """
  Rectilinear chunk grids with the Python peers, both ways: arrays ExZarr writes, read by each
  peer; an array each peer writes, read by ExZarr; data compared exactly. The newest
  zarr-python (3.4.2, with `array.rectilinear_chunks` on) must do both. A peer that does not
  know the grid (zarr-python 3.1.6 with or without the zarrs pipeline, tensorstore) must refuse
  it, naming the grid when reading, never read or write other data.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{Grids, RectilinearPeers}

  @moduletag :interop
  @moduletag :tmp_dir

  # Edges that sum to the shape, runs, and (ExZarr only: zarr-python writes no such grid) an
  # edge past the end and a regular axis.
  @both %{shape: {10, 7}, chunks: {[3, 3, 4], [2, 5]}, fill_value: -1}
  @ours %{shape: {10, 7}, chunks: {[1, 2, 7, 4], 3}, fill_value: -1}
  @data for(i <- 0..69, into: <<>>, do: <<i * 3 - 50::32-little>>)

  for {peer, knows?} <- RectilinearPeers.peers() do
    describe peer do
      unless RectilinearPeers.python(peer), do: @describetag(skip: "#{peer} is not installed")
      @describetag peer: peer
      @describetag knows: knows?

      test "reads ExZarr's rectilinear arrays or refuses the grid", ctx do
        for {array, k} <- Enum.with_index([@both, @ours]) do
          path = Path.join(ctx.tmp_dir, "ex#{k}.zarr")

          {:ok, a} =
            ExZarr.create(
              path: path,
              shape: array.shape,
              chunks: array.chunks,
              dtype: :int32,
              fill_value: array.fill_value,
              compressor: %{id: "zstd"}
            )

          :ok = ExZarr.Array.set_slice(a, @data)

          case RectilinearPeers.read(ctx.peer, path) do
            {:ok, got} ->
              assert got == @data

            {:refused, why} ->
              refute ctx.knows, why
              assert why =~ ~r/rectilinear/i
          end
        end
      end

      test "writes a rectilinear array ExZarr reads, or refuses to write one", ctx do
        path = Path.join(ctx.tmp_dir, "peer.zarr")

        case RectilinearPeers.write(ctx.peer, path, @both, @data) do
          :ok ->
            assert {:ok, a} = ExZarr.open(path: path)

            assert Grids.edges(a.metadata.chunks, @both.shape) ==
                     Grids.edges(@both.chunks, @both.shape)

            assert ExZarr.Array.get_slice(a) == {:ok, @data}

          {:refused, why} ->
            refute ctx.knows, why
            refute File.exists?(Path.join([path, "c"]))
        end
      end
    end
  end
end
