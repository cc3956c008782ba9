defmodule ExZarr.Bench.Workloads.Concurrency do
  @moduledoc """
  Workload 3: read every chunk of a square-chunked zstd array on its own, with 1, 2, 4 and 8
  chunks in flight: time, speedup over one worker and parallel efficiency (speedup / workers).

  ExZarr reads through `ExZarr.Array.chunk_stream(array, parallel: c, ordered: false)`. The
  peers read each chunk's box (`array[chunk_slices]`) from a pool of `c` Python threads, in a
  process whose library-internal concurrency is also set to `c` (zarr-python `async.concurrency`
  and `threading.max_workers`, zarrs `chunk_concurrent_maximum`, tensorstore
  `data_copy_concurrency`/`file_io_concurrency`), one process per level.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Table, Workload}
  alias ExZarr.Bench.Workloads.Slicing

  @profiles %{
    default: %{n: 4096, chunk: 512, levels: [1, 2, 4, 8], runs: 3},
    quick: %{n: 2048, chunk: 256, levels: [1, 2, 4, 8], runs: 2},
    smoke: %{n: 256, chunk: 64, levels: [1, 2], runs: 1}
  }

  @impl true
  def id, do: 3

  @impl true
  def title, do: "Chunk-by-chunk reads at concurrency 1, 2, 4, 8 (zstd 3)"

  @impl true
  def datasets(ctx), do: [Slicing.dataset(Workload.config(ctx, @profiles).n)]

  @impl true
  def run(ctx),
    do: Workload.requiring("zstd", fn -> [do_run(ctx, Workload.config(ctx, @profiles))] end)

  defp do_run(ctx, conf) do
    %{n: n, chunk: chunk, levels: levels} = conf
    nchunks = div(n + chunk - 1, chunk) ** 2

    task = %{
      workload: "concurrency",
      raw: Map.fetch!(ctx.data, Slicing.dataset(n).name),
      shape: [n, n],
      chunks: [chunk, chunk],
      dtype: "float64",
      compressor: %{id: "zstd", level: 3},
      runs: conf.runs,
      levels: levels
    }

    # Rounds as in Workload.each_lib/4; the store is written in the first round only.
    results =
      Workload.rounds(ctx, conf.runs, fn round, lib ->
        store = Path.join([ctx.store_root, lib, "concurrency"])
        task = Map.merge(task, %{store: store, runs: 1, create: round == 1})

        if lib == "ExZarr",
          do: Workload.run_one(ctx, lib, task, &exzarr/1),
          else: per_level(ctx, lib, task, levels)
      end)

    mb = Table.format(chunk * chunk * 8 / 1.0e6)

    title =
      "3. #{nchunks} chunks of {#{chunk}, #{chunk}} (#{mb} MB) of {#{n}, #{n}}, read one by one"

    table = Table.new(title, ctx.libs, unit: "ms (speedup, efficiency)")

    Enum.reduce(levels, table, fn c, t ->
      op = "c#{c}"

      times =
        Map.new(results, fn {lib, r} ->
          {lib, Workload.median_ms(Workload.find(r, "chunks", op))}
        end)

      base =
        Map.new(results, fn {lib, r} ->
          {lib, Workload.median_ms(Workload.find(r, "chunks", "c1"))}
        end)

      texts = for {lib, t} <- times, is_number(t), into: %{}, do: {lib, text(t, base[lib], c)}
      Table.add_row(t, "#{c} in flight", times, texts)
    end)
  end

  defp text(t, t1, c) when is_number(t1) do
    speedup = t1 / t

    "#{Table.format(t)} (#{:erlang.float_to_binary(speedup, decimals: 2)}x, #{round(100 * speedup / c)}%)"
  end

  defp text(t, _t1, _c), do: Table.format(t)

  defp per_level(ctx, lib, task, levels) do
    rows =
      Enum.reduce_while(levels, [], fn c, acc ->
        level_task =
          task |> Map.drop([:levels]) |> Map.merge(%{concurrency: c, create: acc == []})

        case Workload.run_one(ctx, lib, level_task, &exzarr/1) do
          %{rows: rows} -> {:cont, acc ++ rows}
          error -> {:halt, error}
        end
      end)

    if is_list(rows), do: %{rows: rows}, else: rows
  end

  # -- ExZarr side ----------------------------------------------------------------------------

  defp exzarr(task) do
    if task.create do
      File.rm_rf!(task.store)
      array = Workload.create(task.store, task.shape, task.chunks, task.dtype, task.compressor)
      :ok = ExZarr.Array.set_slice(array, File.read!(task.raw))
    end

    array = ExZarr.open!(path: task.store)

    rows =
      for c <- task.levels do
        stream = fn ->
          array |> ExZarr.Array.chunk_stream(parallel: c, ordered: false) |> Stream.run()
        end

        {samples, nil} = Workload.measure(task.runs, stream)
        %{group: "chunks", op: "c#{c}", samples: samples, digest: nil}
      end

    %{rows: rows}
  end
end
