defmodule ExZarr.Interop.RectilinearTest do
  @moduledoc """
  Rectilinear chunk grids with the Python peers, both ways: arrays ExZarr writes, read by each
  peer; arrays each peer writes, read by ExZarr; data compared exactly. The newest
  zarr-python (3.4.2, with `array.rectilinear_chunks` on) must do both, grids of shards
  included. A peer that does not know the grid (zarr-python 3.1.6 with or without the zarrs
  pipeline, tensorstore) must refuse it, naming the grid when reading, never read or write
  other data.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.{Grids, RectilinearPeers}

  @moduletag :interop
  @moduletag :tmp_dir

  # Edges that sum to the shape, runs, shards; and (ExZarr only: zarr-python writes no such
  # grid) an edge past the end and a regular axis.
  @both [
    %{shape: {10, 7}, chunks: {[3, 3, 4], [2, 5]}, fill_value: -1},
    %{shape: {10, 6}, chunks: {[4, 2, 4], 6}, inner: {2, 3}, fill_value: -1}
  ]
  @ours %{shape: {10, 7}, chunks: {[1, 2, 7, 4], 3}, fill_value: -1}

  defp data(%{shape: shape}),
    do: for(i <- 1..ExZarr.Shape.product(shape)//1, into: <<>>, do: <<i * 3 - 50::32-little>>)

  defp create(path, array) do
    grid =
      if inner = array[:inner],
        do: [shards: array.chunks, chunks: inner],
        else: [chunks: array.chunks]

    ExZarr.create(
      [path: path, shape: array.shape, dtype: :int32, fill_value: array.fill_value] ++ grid
    )
  end

  for {peer, knows?} <- RectilinearPeers.peers() do
    describe peer do
      unless RectilinearPeers.python(peer), do: @describetag(skip: "#{peer} is not installed")
      @describetag peer: peer
      @describetag knows: knows?

      test "reads ExZarr's rectilinear arrays or refuses the grid", ctx do
        for {array, k} <- Enum.with_index([@ours | @both]) do
          path = Path.join(ctx.tmp_dir, "ex#{k}.zarr")
          {:ok, a} = create(path, array)
          :ok = ExZarr.Array.set_slice(a, data(array))

          case RectilinearPeers.read(ctx.peer, path) do
            {:ok, got} ->
              assert got == data(array)

            {:refused, why} ->
              refute ctx.knows, why
              assert why =~ ~r/rectilinear/i
          end
        end
      end

      test "writes rectilinear arrays ExZarr reads, or refuses to write them", ctx do
        for {array, k} <- Enum.with_index(@both) do
          path = Path.join(ctx.tmp_dir, "peer#{k}.zarr")

          case RectilinearPeers.write(ctx.peer, path, array, data(array)) do
            :ok ->
              assert {:ok, a} = ExZarr.open(path: path)
              edges = &Grids.edges(&1, array.shape)
              assert edges.(a.metadata.chunks) == edges.(array.chunks)
              assert ExZarr.Array.get_slice(a) == {:ok, data(array)}

            {:refused, why} ->
              refute ctx.knows, why
              refute File.exists?(Path.join([path, "c"]))
          end
        end
      end
    end
  end
end
