defmodule ExZarr.Bench.Workloads.ZstdLevels do
  @moduledoc """
  Workload 4: zstd levels 1..9 on sensor-like float64 data (a slowly drifting reading with a
  daily cycle, kept to 0.01): compression ratio, encode MB/s (a full write: encode + store) and
  decode MB/s (a full read), all with one worker so the numbers are per core: ExZarr with
  `max_concurrency: 1`, the peers with their concurrency set to 1. Then the same with the
  numcodecs array->bytes codecs in place of `bytes` + zstd: pcodec (level 8) and zfp (accuracy
  0.01, and reversible), in every library that has them (zarr-python both; zarrs pcodec;
  tensorstore neither). Each write and read is timed `repeats` times a round, after the warm-up.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Table, Workload}

  @profiles %{
    default: %{n: 4_194_304, chunk: 524_288, levels: Enum.to_list(1..9), runs: 3, repeats: 3},
    quick: %{n: 1_048_576, chunk: 262_144, levels: Enum.to_list(1..9), runs: 2, repeats: 2},
    smoke: %{n: 65_536, chunk: 16_384, levels: [1, 9], runs: 1, repeats: 1}
  }

  # {label, numcodecs config}: the array->bytes codecs measured after the zstd levels.
  @array_codecs [
    {"pcodec level 8", %{"id" => "pcodec", "level" => 8}},
    {"zfpy accuracy 0.01", %{"id" => "zfpy", "mode" => 4, "tolerance" => 0.01}},
    {"zfpy reversible", %{"id" => "zfpy", "mode" => 4, "tolerance" => -1}}
  ]

  @impl true
  def id, do: 4

  @impl true
  def title,
    do: "zstd levels, pcodec and zfp on sensor-like float64: ratio, encode and decode MB/s"

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
      repeats: conf.repeats,
      levels: conf.levels,
      array_codecs: for({name, config} <- array_codecs(), do: %{name: name, config: config}),
      concurrency: 1
    }

    results = Workload.each_lib(ctx, "zstd_levels", task, &exzarr/1)
    bytes = conf.n * 8
    mb = bytes / 1.0e6
    what = "#{Table.format(mb)} MB in #{div(conf.n, conf.chunk)} chunks, 1 worker"

    ratio =
      Table.new("4. compression ratio (#{what})", ctx.libs,
        unit: "x",
        better: :higher,
        compare: :none
      )

    encode = Table.new("4. encode: full write (#{what})", ctx.libs, unit: "MB/s", better: :higher)

    decode = Table.new("4. decode: full read (#{what})", ctx.libs, unit: "MB/s", better: :higher)

    groups = Enum.map(conf.levels, &"level #{&1}") ++ Enum.map(array_codecs(), &elem(&1, 0))

    Enum.reduce(groups, [ratio, encode, decode], fn group, [r, e, d] ->
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

  # The array codecs ExZarr has (all of them once the NIF has zfp and pcodec).
  defp array_codecs,
    do: Enum.filter(@array_codecs, &Workload.codec?("numcodecs." <> elem(&1, 1)["id"]))

  defp exzarr(task) do
    data = File.read!(task.raw)

    levels =
      for level <- task.levels,
          do: {"level #{level}", "level#{level}", [compressor: %{id: "zstd", level: level}]}

    codecs =
      for {%{name: name, config: config}, i} <- Enum.with_index(task.array_codecs) do
        {id, conf} = Map.pop(config, "id")

        {name, "codec#{i}",
         compressor: nil, codecs: [%{name: "numcodecs." <> id, configuration: conf}]}
      end

    rows =
      Enum.flat_map(levels ++ codecs, fn {group, dir, opts} ->
        path = Path.join(task.store_root, dir)
        {comp, extra} = Keyword.pop(opts, :compressor)
        write = fn -> Workload.create(path, task.shape, task.chunks, task.dtype, comp, extra) end

        {writes, nil} =
          Workload.measure(
            task.repeats,
            fn -> :ok = ExZarr.Array.set_slice(write.(), data, max_concurrency: 1) end,
            before: fn -> File.rm_rf!(path) end
          )

        array = ExZarr.open!(path: path)
        read = fn -> [ExZarr.Array.get_slice!(array, max_concurrency: 1)] end
        {reads, digest} = Workload.measure(task.repeats, read, check: &Workload.digest/1)
        stored = Workload.stored_bytes(path)

        [
          %{group: group, op: "encode", samples: writes, digest: nil, stored_bytes: stored},
          %{group: group, op: "decode", samples: reads, digest: digest, stored_bytes: stored}
        ]
      end)

    %{rows: rows}
  end
end
