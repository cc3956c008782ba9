defmodule ExZarr.Bench.Workloads.HTTP do
  @moduledoc """
  Workload 7: the sharded volume of workload 5 (same data, shards, inner chunks and codec),
  written once by ExZarr (untimed) and served by nginx on 127.0.0.1 (`ExZarr.Bench.Nginx`);
  every library reads that one store over plain HTTP: full reads with 16 requests in flight,
  then the latency of each of 50 random 32^3 cutouts after 10 untimed ones (each fetches
  shard indexes and inner chunks with ranged GETs).

  ExZarr opens the `http://` URL (`ExZarr.Storage.HTTPStore`); zarr-python and zarr-python +
  zarrs use fsspec's http filesystem (`FsspecStore`, aiohttp); tensorstore its `http`
  kvstore. Concurrency: ExZarr `max_concurrency:` (its sharded reads keep 16 in flight),
  zarr-python `async.concurrency`, zarrs `chunk_concurrent_maximum`, tensorstore
  `http_request_concurrency`, all 16.

  Skipped, with the reason, when nginx cannot be installed (`scripts/install-nginx`).
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Nginx, Table, Workload}
  alias ExZarr.Bench.Workloads.Sharded

  @profiles %{
    default: %{cutouts: 50, runs: 3},
    quick: %{cutouts: 50, runs: 1},
    smoke: %{cutouts: 10, runs: 1}
  }
  @concurrency 16

  @impl true
  def id, do: 7

  @impl true
  def title, do: "HTTP: the sharded volume served by nginx, full reads and random 32^3 cutouts"

  @impl true
  def datasets(ctx), do: Sharded.datasets(ctx)

  @impl true
  def run(ctx) do
    layout = Sharded.layout(ctx)
    root = Path.join(ctx.store_root, "http")
    dir = Path.join(Path.dirname(ctx.store_root), "nginx")

    with {:codecs, true} <- {:codecs, Enum.all?(~w(sharding_indexed blosc), &Workload.codec?/1)},
         :ok <- write_volume(Path.join(root, "volume.zarr"), layout, ctx),
         {:ok, server} <- Nginx.start(root, dir) do
      try do
        {:ok, do_run(ctx, layout, server.url <> "/volume.zarr")}
      after
        Nginx.stop(server)
        File.rm_rf!(root)
        File.rm_rf!(dir)
      end
    else
      {:codecs, false} -> {:skip, "needs the sharding_indexed and blosc codecs"}
      {:error, reason} -> {:skip, "needs nginx: #{reason}"}
    end
  end

  defp write_volume(path, layout, ctx) do
    File.rm_rf!(path)

    array =
      Workload.create(path, layout.shape, layout.chunks, "uint8", layout.compressor,
        shards: List.to_tuple(layout.shards)
      )

    ExZarr.Array.set_slice(array, File.read!(Map.fetch!(ctx.data, layout.dataset)))
  end

  defp do_run(ctx, layout, url) do
    conf = Workload.config(ctx, @profiles)
    [n | _] = layout.shape
    ctx.log.("  nginx serving #{url}")

    task =
      Map.merge(Sharded.cutout_task(n, conf.cutouts, 7), %{
        workload: "http",
        url: url,
        concurrency: @concurrency,
        runs: conf.runs
      })

    results = Workload.each_lib(ctx, "http", task, &exzarr/1)
    [shard | _] = layout.shards
    [inner | _] = layout.chunks

    what =
      "{#{n}, #{n}, #{n}} uint8 (#{Table.format(n ** 3 / 1.0e6)} MB) over HTTP, " <>
        "shards #{shard}^3, inner chunks #{inner}^3"

    table =
      Enum.reduce(
        [{"read_full", "full read"}, {"cutout", "32^3 cutout (median latency)"}],
        Table.new("7. #{what}", ctx.libs, unit: "ms"),
        fn {op, label}, t ->
          cells =
            Map.new(results, fn {lib, r} ->
              {lib, Workload.median_ms(Workload.find(r, "volume", op))}
            end)

          t = Table.add_row(t, label, cells)
          note = Workload.digest_note(results, "volume", op)
          if note, do: Table.add_note(t, note), else: t
        end
      )

    [table]
  end

  # -- ExZarr side (mirrors `http` in bench/peers/peer.py) -------------------------------------

  defp exzarr(task) do
    array = ExZarr.open!(task.url)
    read = fn -> [ExZarr.Array.get_slice!(array, max_concurrency: task.concurrency)] end
    {reads, digest} = Workload.measure(task.runs, read, check: &Workload.digest/1)

    %{
      rows: [
        %{group: "volume", op: "read_full", samples: reads, digest: digest},
        Sharded.cutout_row(array, task)
      ]
    }
  end
end
