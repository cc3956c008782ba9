defmodule ExZarr.Bench.Workloads.Slicing do
  @moduledoc """
  Workload 2: a 2-D float64 array (4096 x 4096 by default) stored with row, column and square
  chunks, zstd level 3. For each chunking: a full write, a full read, 100 reads of random
  100 x 100 regions (the same regions for every library), a row slab and a column slab read.
  Every library writes its own store from the same raw input and reads its own store back;
  the reads' SHA-256 digests are compared across libraries. The slabs, reads of a few
  milliseconds, are timed `repeats` times a round (after the warm-up), the full writes
  `write_repeats` times (ExZarr's and the best peer's differ by a few percent, and with one
  write a round the column-chunk write's ratio ranged 0.93-1.03 over three runs), the rest
  once.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Table, Workload}

  @profiles %{
    default: %{
      n: 4096,
      row: 128,
      square: 512,
      regions: 100,
      slab: 256,
      runs: 3,
      repeats: 5,
      write_repeats: 3
    },
    quick: %{
      n: 2048,
      row: 64,
      square: 256,
      regions: 100,
      slab: 128,
      runs: 2,
      repeats: 3,
      write_repeats: 2
    },
    smoke: %{
      n: 256,
      row: 32,
      square: 64,
      regions: 10,
      slab: 32,
      runs: 1,
      repeats: 2,
      write_repeats: 1
    }
  }
  @region 100
  @ops [
    {"write_full", "full write"},
    {"read_full", "full read"},
    {"regions", "random 100x100 regions"},
    {"row_slab", "row slab"},
    {"col_slab", "column slab"}
  ]

  @impl true
  def id, do: 2

  @impl true
  def title, do: "2-D float64 array, zstd 3: full, region and slab reads per chunking"

  @impl true
  def datasets(ctx), do: [dataset(Workload.config(ctx, @profiles).n)]

  @doc "The raw 2-D field dataset of side `n` (shared with workload 3)."
  @spec dataset(pos_integer()) :: map()
  def dataset(n),
    do: %{name: "field_#{n}x#{n}", kind: "field", shape: [n, n], dtype: "float64", seed: 2}

  @impl true
  def run(ctx),
    do: Workload.requiring("zstd", fn -> do_run(ctx, Workload.config(ctx, @profiles)) end)

  defp do_run(ctx, conf) do
    task = task(ctx, conf)
    results = Workload.each_lib(ctx, "slicing", task, &exzarr/1)

    for %{name: group, chunks: chunks} <- task.chunkings do
      title = "2. #{group} chunks {#{Enum.join(chunks, ", ")}} of {#{conf.n}, #{conf.n}}"

      Enum.reduce(@ops, Table.new(title, ctx.libs, unit: "ms"), fn {op, label}, t ->
        label = if op == "regions", do: "#{conf.regions} #{label}", else: label
        Workload.time_row(t, results, group, op, label)
      end)
    end
  end

  defp task(ctx, conf) do
    n = conf.n
    :rand.seed(:exsss, {2, 4, 8})

    regions =
      for _ <- 1..conf.regions,
          do: [:rand.uniform(n - @region + 1) - 1, :rand.uniform(n - @region + 1) - 1]

    at = div(n, 4) + 1

    %{
      workload: "slicing",
      raw: Map.fetch!(ctx.data, dataset(n).name),
      shape: [n, n],
      dtype: "float64",
      compressor: %{id: "zstd", level: 3},
      runs: conf.runs,
      repeats: conf.repeats,
      write_repeats: conf.write_repeats,
      chunkings: [
        %{name: "row", chunks: [conf.row, n]},
        %{name: "column", chunks: [n, conf.row]},
        %{name: "square", chunks: [conf.square, conf.square]}
      ],
      region_shape: [@region, @region],
      regions: regions,
      row_slab: [[at, 0], [at + conf.slab, n]],
      col_slab: [[0, at], [n, at + conf.slab]]
    }
  end

  # -- ExZarr side (mirrors `slicing` in bench/peers/peer.py) ----------------------------------

  defp exzarr(task) do
    data = File.read!(task.raw)
    %{shape: shape, dtype: dtype, compressor: comp, runs: runs} = task
    [h, w] = task.region_shape
    regions = for [r, c] <- task.regions, do: [start: {r, c}, stop: {r + h, c + w}]
    slab = fn [start, stop] -> [start: List.to_tuple(start), stop: List.to_tuple(stop)] end

    rows =
      Enum.flat_map(task.chunkings, fn %{name: group, chunks: chunks} ->
        path = Path.join(task.store_root, group)

        {writes, nil} =
          Workload.measure(
            task.write_repeats,
            fn ->
              :ok =
                ExZarr.Array.set_slice(Workload.create(path, shape, chunks, dtype, comp), data)
            end,
            before: fn -> File.rm_rf!(path) end
          )

        array = ExZarr.open!(path: path)

        reads =
          for {op, selections, times} <- [
                {"read_full", [[]], runs},
                {"regions", regions, runs},
                {"row_slab", [slab.(task.row_slab)], task.repeats},
                {"col_slab", [slab.(task.col_slab)], task.repeats}
              ] do
            reads(array, group, op, selections, times)
          end

        [%{group: group, op: "write_full", samples: writes, digest: nil} | reads]
      end)

    %{rows: rows}
  end

  # `selections` read together, timed `times` times after a warm-up.
  defp reads(array, group, op, selections, times) do
    read = fn -> Enum.map(selections, &ExZarr.Array.get_slice!(array, &1)) end
    {samples, digest} = Workload.measure(times, read, check: &Workload.digest/1)
    %{group: group, op: op, samples: samples, digest: digest}
  end
end
