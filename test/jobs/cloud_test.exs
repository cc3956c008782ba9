defmodule ExZarr.Jobs.CloudTest do
  # Jobs on two :peer nodes over arrays in S3 (MinIO): every node reaches the store itself.
  use ExUnit.Case, async: false

  alias ExZarr.Array
  alias ExZarr.Jobs
  alias ExZarr.Test.{JobsFuns, MinIO, Peers}

  setup_all do
    minio = MinIO.start!()
    on_exit(fn -> MinIO.stop(minio) end)
    %{minio: minio}
  end

  defp s3(minio, path), do: [storage: :s3] ++ MinIO.store_opts(minio, "jobs", path)

  test "map_blocks, reduce_blocks and a rechunking copy on 2 peers over MinIO", %{minio: minio} do
    # (a temporary folder of their own: without temp_store:, an intermediate array goes in
    # the target, in MinIO)
    peer_tmp = ExZarr.Test.Tmp.path("exzarr_peer_tmp_")

    File.mkdir_p!(peer_tmp)
    on_exit(fn -> File.rm_rf!(peer_tmp) end)
    peers = Peers.start!(2, env: [{"TMPDIR", peer_tmp}])
    data = :crypto.strong_rand_bytes(60 * 40)

    {:ok, src} =
      ExZarr.create(s3(minio, "src.zarr") ++ [shape: {60, 40}, chunks: {60, 2}, dtype: :uint8])

    :ok = Array.set_slice(src, data, start: {0, 0}, stop: {60, 40})

    {:ok, dst} =
      ExZarr.create(s3(minio, "dst.zarr") ++ [shape: {60, 40}, chunks: {5, 40}, dtype: :uint8])

    assert {:ok, report} =
             Jobs.map_blocks(src, dst, {JobsFuns, :add, [3]}, nodes: peers, max_concurrency: 2)

    assert report.units == 12 and report.failed == 0 and report.nodes_lost == []
    assert Enum.sort(Map.keys(report.by_node)) == Enum.sort(peers)
    plus3 = for <<b <- data>>, into: <<>>, do: <<rem(b + 3, 256)>>
    assert Array.get_slice!(dst, start: {0, 0}, stop: {60, 40}) == plus3

    sum = for <<b <- data>>, reduce: 0, do: (acc -> acc + b)
    assert {:ok, ^sum} = Jobs.reduce_blocks(src, {JobsFuns, :sum, []}, &+/2, nodes: peers)

    # column chunks to row chunks under a small max_memory: the intermediate array is in
    # MinIO too, where both peers reach it
    assert {:ok, copy, %{plan: :intermediate} = report} =
             Jobs.copy_with_report(
               src,
               s3(minio, "rows.zarr") ++ [chunks: {1, 40}, zarr_format: 2],
               nodes: peers,
               max_memory: 2_000,
               temp_store: s3(minio, "tmp")
             )

    assert Enum.all?(report.stages, &(map_size(&1.by_node) == 2))
    assert copy.metadata.chunks == {1, 40} and copy.metadata.zarr_format == 2
    assert Array.get_slice!(copy, start: {0, 0}, stop: {60, 40}) == data
    {:ok, tmp} = ExZarr.Storage.new(:s3, MinIO.store_opts(minio, "jobs", "tmp"))
    assert {:ok, []} = ExZarr.Storage.list(tmp, "")

    # without temp_store: inside the target, in MinIO too; removed afterwards
    {:ok, rows2} = ExZarr.Storage.new(:s3, MinIO.store_opts(minio, "jobs", "rows2.zarr"))

    temp_keys = fn ->
      rows2 |> ExZarr.Storage.list("") |> elem(1) |> Enum.filter(&(&1 =~ "exzarr_rechunk"))
    end

    look = fn _progress ->
      unless Process.get(:looked) do
        Process.put(:looked, true)
        send(self(), {:during, temp_keys.()})
      end
    end

    assert {:ok, copy, %{plan: :intermediate}} =
             Jobs.copy_with_report(src, s3(minio, "rows2.zarr") ++ [chunks: {1, 40}],
               nodes: peers,
               max_memory: 2_000,
               on_progress: look
             )

    assert_received {:during, [".exzarr_rechunk_" <> _ | _]}
    assert Array.get_slice!(copy, start: {0, 0}, stop: {60, 40}) == data
    assert temp_keys.() == []
  end
end
