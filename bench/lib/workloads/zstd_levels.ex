defmodule ExZarr.Bench.Workloads.ZstdLevels do
  @moduledoc """
  Workload 4: zstd levels 1..9 on sensor-like float64 data (a slowly drifting reading with a
  daily cycle, kept to 0.01): compression ratio, encode MB/s (a full write: encode + store) and
  decode MB/s (a full read), all with one worker so the numbers are per core: ExZarr with
  `max_concurrency: 1`, the peers with their concurrency set to 1.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Table, Workload}

  @profiles %{
    default: %{n: 4_194_304, chunk: 524_288, levels: Enum.to_list(1..9), runs: 3},
    quick: %{n: 1_048_576, chunk: 262_144, levels: Enum.to_list(1..9), runs: 2},
    smoke: %{n: 65_536, chunk: 16_384, levels: [1, 9], runs: 1}
  }

  @impl true
  def id, do: 4

  @impl true
  def title, do: "zstd levels on sensor-like float64: ratio, encode and decode MB/s"

  @impl true
  def datasets(ctx), do: [dataset(Workload.config(ctx, @profiles).n)]

  defp dataset(n),
    do: %{name: "sensor_#{n}", kind: "sensor", shape: [n], dtype: "float64", seed: 4}

  @impl true
  def run(ctx),
    do: Workload.requiring("zstd", fn -> do_run(ctx, Workload.config(ctx, @profiles)) end)

  defp do_run(ctx, conf) do
    task = %{
      workload: "zstd_levels",
      raw: Map.fetch!(ctx.data, dataset(conf.n).name),
      shape: [conf.n],
      chunks: [conf.chunk],
      dtype: "float64",
      runs: conf.runs,
      levels: conf.levels,
      concurrency: 1
    }

    results = Workload.each_lib(ctx, "zstd_levels", task, &exzarr/1)
    bytes = conf.n * 8
    mb = bytes / 1.0e6
    what = "#{Table.format(mb)} MB in #{div(conf.n, conf.chunk)} chunks, 1 worker"

    ratio =
      Table.new("4. zstd compression ratio (#{what})", ctx.libs,
        unit: "x",
        better: :higher,
        compare: :none
      )

    encode =
      Table.new("4. zstd encode: full write (#{what})", ctx.libs, unit: "MB/s", better: :higher)

    decode =
      Table.new("4. zstd decode: full read (#{what})", ctx.libs, unit: "MB/s", better: :higher)

    Enum.reduce(conf.levels, [ratio, encode, decode], fn level, [r, e, d] ->
      group = "level #{level}"

      cell = fn op, f ->
        Map.new(results, fn {lib, res} -> {lib, f.(Workload.find(res, group, op))} end)
      end

      speed = fn row -> if m = Workload.median(row), do: mb / m end
      size = fn row -> if row && row.stored_bytes, do: bytes / row.stored_bytes end

      d = Table.add_row(d, group, cell.("decode", speed))

      d =
        case Workload.digest_note(results, group, "decode") do
          nil -> d
          note -> Table.add_note(d, note)
        end

      [
        Table.add_row(r, group, cell.("encode", size)),
        Table.add_row(e, group, cell.("encode", speed)),
        d
      ]
    end)
  end

  # -- ExZarr side (mirrors `zstd_levels` in bench/peers/peer.py) ------------------------------

  defp exzarr(task) do
    data = File.read!(task.raw)

    rows =
      Enum.flat_map(task.levels, fn level ->
        path = Path.join(task.store_root, "level#{level}")
        comp = %{id: "zstd", level: level}
        write = fn -> Workload.create(path, task.shape, task.chunks, task.dtype, comp) end

        {writes, nil} =
          Workload.measure(
            task.runs,
            fn -> :ok = ExZarr.Array.set_slice(write.(), data, max_concurrency: 1) end,
            before: fn -> File.rm_rf!(path) end
          )

        array = ExZarr.open!(path: path)
        read = fn -> [ExZarr.Array.get_slice!(array, max_concurrency: 1)] end
        {reads, digest} = Workload.measure(task.runs, read, check: &Workload.digest/1)
        stored = Workload.stored_bytes(path)
        group = "level #{level}"

        [
          %{group: group, op: "encode", samples: writes, digest: nil, stored_bytes: stored},
          %{group: group, op: "decode", samples: reads, digest: digest, stored_bytes: stored}
        ]
      end)

    %{rows: rows}
  end
end
