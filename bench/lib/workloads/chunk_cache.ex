defmodule ExZarr.Bench.Workloads.ChunkCache do
  @moduledoc """
  Workload 8: decoded-chunk caches. A 2-D float64 array (4096 x 4096 by default) in square
  512 x 512 chunks, zstd level 3, read as sliding 100 x 100 windows with 50% overlap (a
  raster with a stride of 50 over the top-left 1024 x 1024): without a cache every window
  decodes the chunks it touches again; with one each chunk is decoded once.

  Rows: the windows read cold (a fresh handle, and a fresh, empty cache) and warm (again, on
  the handle and cache of a previous pass), without a cache and with one. ExZarr uses
  `chunk_cache:` (an `ExZarr.ChunkCache` of 256 MiB), tensorstore a `cache_pool` of the same
  size, zarr-python its experimental `CacheStore` (in memory, same size; it caches the stored
  bytes, so every read still decodes); zarrs has no cache of its own (no cache rows).
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Table, Workload}
  alias ExZarr.Bench.Workloads.Slicing

  @profiles %{
    default: %{n: 4096, chunk: 512, area: 1024, runs: 3},
    quick: %{n: 2048, chunk: 256, area: 512, runs: 2},
    smoke: %{n: 256, chunk: 64, area: 256, runs: 1}
  }
  @window 100
  @stride 50
  @cache_bytes 256 * 1024 * 1024
  @cache __MODULE__.Cache

  @impl true
  def id, do: 8

  @impl true
  def title, do: "Decoded-chunk cache: sliding 100x100 windows (50% overlap), cold and warm"

  @impl true
  def datasets(ctx), do: [Slicing.dataset(Workload.config(ctx, @profiles).n)]

  @impl true
  def run(ctx),
    do: Workload.requiring("zstd", fn -> do_run(ctx, Workload.config(ctx, @profiles)) end)

  defp do_run(ctx, conf) do
    task = task(ctx, conf)
    results = Workload.each_lib(ctx, "chunk_cache", task, &exzarr/1)

    title =
      "8. #{length(task.windows)} windows of 100x100 over {#{conf.n}, #{conf.n}} in " <>
        "{#{conf.chunk}, #{conf.chunk}} chunks, zstd 3"

    rows = [
      {"none", "cold", "no cache, cold"},
      {"none", "warm", "no cache, warm"},
      {"cache", "cold", "cache, cold"},
      {"cache", "warm", "cache, warm"}
    ]

    table = Table.new(title, ctx.libs, unit: "ms")

    [
      Enum.reduce(rows, table, fn {group, op, label}, t ->
        Workload.time_row(t, results, group, op, label)
      end)
    ]
  end

  defp task(ctx, conf) do
    last = conf.area - @window

    %{
      workload: "chunk_cache",
      raw: Map.fetch!(ctx.data, Slicing.dataset(conf.n).name),
      shape: [conf.n, conf.n],
      chunks: [conf.chunk, conf.chunk],
      dtype: "float64",
      compressor: %{id: "zstd", level: 3},
      runs: conf.runs,
      window: [@window, @window],
      windows: for(r <- 0..last//@stride, c <- 0..last//@stride, do: [r, c]),
      cache_bytes: @cache_bytes
    }
  end

  # -- ExZarr side (mirrors `chunk_cache` in bench/peers/peer.py) ------------------------------

  defp exzarr(task) do
    %{shape: shape, chunks: chunks, dtype: dtype, compressor: comp, runs: runs} = task
    path = task.store
    File.rm_rf!(path)

    :ok =
      ExZarr.Array.set_slice(
        Workload.create(path, shape, chunks, dtype, comp),
        File.read!(task.raw)
      )

    [h, w] = task.window
    windows = for [r, c] <- task.windows, do: [start: {r, c}, stop: {r + h, c + w}]
    read_all = fn -> Enum.map(windows, &ExZarr.Array.get_slice!(Process.get(:array), &1)) end

    rows =
      for {group, open} <- [{"none", fn -> [] end}, {"cache", fn -> fresh_cache(task) end}],
          {op, before} <- [{"cold", true}, {"warm", false}] do
        reopen = fn -> Process.put(:array, ExZarr.open!([path: path] ++ open.())) end
        if not before, do: reopen.()
        opts = [check: &Workload.digest/1] ++ if(before, do: [before: reopen], else: [])
        {samples, digest} = Workload.measure(runs, read_all, opts)
        %{group: group, op: op, samples: samples, digest: digest}
      end

    stop_cache()
    %{rows: rows}
  end

  # A new, empty cache (the previous one stopped).
  defp fresh_cache(task) do
    stop_cache()
    {:ok, _} = ExZarr.ChunkCache.start_link(name: @cache, max_bytes: task.cache_bytes)
    [chunk_cache: @cache]
  end

  defp stop_cache do
    case Process.whereis(@cache) do
      nil ->
        :ok

      pid ->
        Process.unlink(pid)
        ref = Process.monitor(pid)
        Process.exit(pid, :shutdown)

        receive do
          {:DOWN, ^ref, _, _, _} -> :ok
        end
    end
  end
end
