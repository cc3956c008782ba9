defmodule ExZarr.Bench.Workloads.Sharded do
  @moduledoc """
  Workload 5, after the zarrita sharding benchmark: a uint8 volume like electron microscopy
  (512^3 by default, 1024^3 with `--large`) stored in 256^3 shards of 32^3 inner chunks, blosc
  lz4. Full write, full read, and the latency of each of 200 random 32^3 cutouts (the same
  positions for every library; the median is reported), plus bytes on disk and file count.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Table, Workload}

  @profiles %{
    default: %{n: 512, shard: 256, inner: 32, cutouts: 200, runs: 3},
    quick: %{n: 256, shard: 128, inner: 32, cutouts: 200, runs: 1},
    smoke: %{n: 64, shard: 32, inner: 16, cutouts: 20, runs: 1}
  }
  @cutout 32
  @warm_cutouts 10
  @compressor %{id: "blosc", cname: "lz4", clevel: 5, shuffle: 1, blocksize: 0, typesize: 1}

  @impl true
  def id, do: 5

  @impl true
  def title, do: "Sharded uint8 volume, blosc lz4: write, read, random 32^3 cutouts"

  @impl true
  def datasets(ctx), do: [dataset(config(ctx).n)]

  defp dataset(n),
    do: %{name: "volume_#{n}", kind: "volume", shape: [n, n, n], dtype: "uint8", seed: 5}

  @doc """
  The volume's dataset name and stored layout in the ctx's profile (shape, inner chunks,
  shards, compressor); workload 7 reads the same volume over HTTP.
  """
  @spec layout(ExZarr.Bench.Workload.ctx()) :: map()
  def layout(ctx) do
    %{n: n, shard: shard, inner: inner} = config(ctx)

    %{
      dataset: dataset(n).name,
      shape: [n, n, n],
      chunks: [inner, inner, inner],
      shards: [shard, shard, shard],
      compressor: @compressor
    }
  end

  defp config(ctx) do
    conf = Workload.config(ctx, @profiles)
    if ctx.large, do: %{conf | n: 1024}, else: conf
  end

  @impl true
  def run(ctx) do
    cond do
      not Workload.codec?("sharding_indexed") ->
        {:skip, "needs the sharding_indexed codec, not registered in ExZarr yet"}

      not Workload.codec?("blosc") ->
        {:skip, "needs the blosc codec, not in ExZarr yet"}

      true ->
        {:ok, do_run(ctx, config(ctx))}
    end
  end

  @doc """
  `count` random #{@cutout}^3 cutouts of a volume of side `n` (corners drawn from `seed`), as
  a task's `cutouts`, `cutout_shape` and `warm_cutouts` (see `cutout_row/2`).
  """
  @spec cutout_task(pos_integer(), pos_integer(), integer()) :: map()
  def cutout_task(n, count, seed) do
    :rand.seed(:exsss, {seed, 10, 20})
    cutouts = for _ <- 1..count, do: for(_ <- 1..3, do: :rand.uniform(n - @cutout + 1) - 1)
    %{cutouts: cutouts, cutout_shape: [@cutout, @cutout, @cutout], warm_cutouts: @warm_cutouts}
  end

  defp do_run(ctx, conf) do
    %{n: n, shard: shard, inner: inner} = conf

    task =
      Map.merge(cutout_task(n, conf.cutouts, 5), %{
        workload: "sharded",
        raw: Map.fetch!(ctx.data, dataset(n).name),
        shape: [n, n, n],
        chunks: [inner, inner, inner],
        shards: [shard, shard, shard],
        dtype: "uint8",
        compressor: @compressor,
        runs: conf.runs
      })

    results = Workload.each_lib(ctx, "sharded", task, &exzarr/1)

    what =
      "{#{n}, #{n}, #{n}} uint8 (#{Table.format(n ** 3 / 1.0e6)} MB), shards #{shard}^3, inner chunks #{inner}^3"

    times = Table.new("5. #{what}", ctx.libs, unit: "ms")

    times =
      [
        {"write_full", "full write"},
        {"read_full", "full read"},
        {"cutout", "#{@cutout}^3 cutout (median latency)"}
      ]
      |> Enum.reduce(times, fn {op, label}, t ->
        cells =
          Map.new(results, fn {lib, r} ->
            {lib, Workload.median_ms(Workload.find(r, "volume", op))}
          end)

        t = Table.add_row(t, label, cells)

        if note = Workload.digest_note(results, "volume", op),
          do: Table.add_note(t, note),
          else: t
      end)

    storage =
      Table.new("5. storage of the same volume", ctx.libs,
        unit: "MB on disk / files",
        compare: :none
      )

    write_row = fn key ->
      Map.new(results, fn {lib, r} ->
        {lib, (row = Workload.find(r, "volume", "write_full")) && row[key]}
      end)
    end

    mb = write_row.(:stored_bytes) |> Map.new(fn {lib, b} -> {lib, b && b / 1.0e6} end)

    storage =
      storage
      |> Table.add_row("MB on disk (chunks and shards)", mb)
      |> Table.add_row("files (metadata included)", write_row.(:files))

    [times, storage]
  end

  # -- ExZarr side (mirrors `sharded` in bench/peers/peer.py) ----------------------------------

  defp exzarr(task) do
    data = File.read!(task.raw)
    path = task.store

    create = fn ->
      Workload.create(path, task.shape, task.chunks, task.dtype, task.compressor,
        shards: List.to_tuple(task.shards)
      )
    end

    {writes, nil} =
      Workload.measure(task.runs, fn -> :ok = ExZarr.Array.set_slice(create.(), data) end,
        before: fn -> File.rm_rf!(path) end
      )

    write = %{
      group: "volume",
      op: "write_full",
      samples: writes,
      digest: nil,
      stored_bytes: Workload.stored_bytes(path),
      files: Workload.file_count(path)
    }

    array = ExZarr.open!(path: path)

    {reads, digest} =
      Workload.measure(task.runs, fn -> [ExZarr.Array.get_slice!(array)] end,
        check: &Workload.digest/1
      )

    %{
      rows: [
        write,
        %{group: "volume", op: "read_full", samples: reads, digest: digest},
        cutout_row(array, task)
      ]
    }
  end

  @doc """
  The `cutout` row of a task (ExZarr side): each of `task.cutouts` (corners, of
  `task.cutout_shape`) read from `array` and timed, after the first `task.warm_cutouts`
  untimed; the digest is of all their data.
  """
  @spec cutout_row(ExZarr.Array.t(), map()) :: map()
  def cutout_row(array, task) do
    [d, h, w] = task.cutout_shape
    boxes = for [z, y, x] <- task.cutouts, do: [start: {z, y, x}, stop: {z + d, y + h, x + w}]
    Enum.each(Enum.take(boxes, task.warm_cutouts), &ExZarr.Array.get_slice!(array, &1))

    {latencies, outs} =
      Enum.map(boxes, fn box -> Workload.timed(fn -> ExZarr.Array.get_slice!(array, box) end) end)
      |> Enum.unzip()

    %{group: "volume", op: "cutout", samples: latencies, digest: Workload.digest(outs)}
  end
end
