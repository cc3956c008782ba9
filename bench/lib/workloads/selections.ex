defmodule ExZarr.Bench.Workloads.Selections do
  @moduledoc """
  Workload 9: selections beyond boxes. The 2-D float64 array of workload 2 (4096^2 by default)
  in square 512^2 chunks, zstd 3: a `[::8, ::8]` read, 500 random rows by orthogonal
  selection, and a boolean mask along axis 0 keeping a third of the rows; the sharded uint8
  volume of workload 5: 10,000 random points by coordinate selection. Every library writes
  its own stores (untimed) and reads them (zarr-python with steps, `oindex` and `vindex`;
  tensorstore with strides, `oindex` and `vindex`; zarrs' strict pipeline supports none of
  them: no zarrs cells); the reads' digests are compared. Each read is timed `repeats` times a
  round (after the warm-up).
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Array
  alias ExZarr.Bench.{Table, Workload}
  alias ExZarr.Bench.Workloads.{Sharded, Slicing}

  @profiles %{
    default: %{n: 4096, square: 512, step: 8, rows: 500, points: 10_000, runs: 3, repeats: 5},
    quick: %{n: 2048, square: 256, step: 8, rows: 500, points: 10_000, runs: 2, repeats: 3},
    smoke: %{n: 256, square: 64, step: 8, rows: 50, points: 500, runs: 1, repeats: 2}
  }
  @ops [
    {"field", "step", "[::8, ::8]"},
    {"field", "rows", "random rows (orthogonal)"},
    {"field", "mask", "mask along axis 0, a third of the rows"},
    {"volume", "points", "random points of the sharded volume (coordinates)"}
  ]

  @impl true
  def id, do: 9

  @impl true
  def title, do: "Selections: steps, orthogonal rows, an axis mask, points of a sharded volume"

  @impl true
  def datasets(ctx),
    do: [Slicing.dataset(Workload.config(ctx, @profiles).n) | Sharded.datasets(ctx)]

  @impl true
  def run(ctx) do
    if Workload.codec?("blosc"),
      do: Workload.requiring("zstd", fn -> do_run(ctx, Workload.config(ctx, @profiles)) end),
      else: {:skip, "needs the blosc codec, not in ExZarr yet"}
  end

  defp do_run(ctx, conf) do
    task = task(ctx, conf)
    results = Workload.each_lib(ctx, "selections", task, &exzarr/1)
    n = conf.n
    vol = Sharded.layout(ctx)

    title =
      "9. {#{n}, #{n}} float64 in #{conf.square}^2 chunks; #{conf.points} points of the " <>
        "{#{Enum.join(vol.shape, ", ")}} sharded volume"

    table =
      Enum.reduce(@ops, Table.new(title, ctx.libs, unit: "ms"), fn {group, op, label}, t ->
        label =
          case op do
            "rows" -> "#{conf.rows} #{label}"
            "points" -> "#{conf.points} #{label}"
            "step" -> String.replace(label, "8", Integer.to_string(conf.step))
            _ -> label
          end

        Workload.time_row(t, results, group, op, label)
      end)

    [table]
  end

  defp task(ctx, conf) do
    %{n: n, rows: rows, points: points} = conf
    vol = Sharded.layout(ctx)
    [vn | _] = vol.shape
    :rand.seed(:exsss, {9, 9, 9})

    %{
      workload: "selections",
      runs: conf.runs,
      repeats: conf.repeats,
      field: %{
        raw: Map.fetch!(ctx.data, Slicing.dataset(n).name),
        shape: [n, n],
        chunks: [conf.square, conf.square],
        dtype: "float64",
        compressor: %{id: "zstd", level: 3}
      },
      volume: %{
        raw: Map.fetch!(ctx.data, vol.dataset),
        shape: vol.shape,
        chunks: vol.chunks,
        shards: vol.shards,
        dtype: "uint8",
        compressor: vol.compressor
      },
      step: conf.step,
      rows: Enum.map(1..rows, fn _ -> :rand.uniform(n) - 1 end),
      mask: Enum.map(0..(n - 1), &(rem(&1, 3) == 0)),
      points: for(_ <- 1..points, do: for(_ <- 1..3, do: :rand.uniform(vn) - 1))
    }
  end

  # -- ExZarr side (mirrors `selections` in bench/peers/peer.py) ------------------------------

  defp exzarr(task) do
    field = store(task.store_root, "field", task.field)
    volume = store(task.store_root, "volume", task.volume)
    points = Enum.map(task.points, &List.to_tuple/1)

    reads = [
      {"field", "step", fn -> Array.get_slice!(field, step: {task.step, task.step}) end},
      {"field", "rows", fn -> Array.get_orthogonal!(field, {task.rows, :all}) end},
      {"field", "mask", fn -> Array.get_orthogonal!(field, {task.mask, :all}) end},
      {"volume", "points", fn -> Array.get_coordinates!(volume, points) end}
    ]

    rows =
      for {group, op, read} <- reads do
        {samples, digest} =
          Workload.measure(task.repeats, fn -> [read.()] end, check: &Workload.digest/1)

        %{group: group, op: op, samples: samples, digest: digest}
      end

    %{rows: rows}
  end

  # The array written from its raw input (untimed), opened afresh for the reads.
  defp store(root, name, spec) do
    path = Path.join(root, name)
    File.rm_rf!(path)
    extra = if spec[:shards], do: [shards: List.to_tuple(spec.shards)], else: []
    a = Workload.create(path, spec.shape, spec.chunks, spec.dtype, spec.compressor, extra)
    :ok = Array.set_slice(a, File.read!(spec.raw))
    ExZarr.open!(path: path)
  end
end
