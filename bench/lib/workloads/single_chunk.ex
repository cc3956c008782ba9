defmodule ExZarr.Bench.Workloads.SingleChunk do
  @moduledoc """
  Workload 1, the memray-array measurement: a ~100 MB float64 array stored as one chunk,
  written and then read back, each operation in a fresh OS process (a new `elixir` for ExZarr,
  a new `python` for each peer), uncompressed and with zstd level 3.

  Reported per operation: wall time, and peak memory above the process's baseline expressed as
  extra copies of the array, `(peak - baseline) / array size - 1`. The baseline is taken after
  the library is loaded and warmed up on a tiny array and before the input is loaded (writes)
  or the read starts, so the one copy that must exist (the input, or the array read) is the
  `- 1`. Memory is the OS resident set (`VmHWM`), the same for every library; for ExZarr the
  BEAM's own allocator total (`:erlang.memory(:total)`, sampled every millisecond) is shown too.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Memory, Table, Workload}

  @profiles %{
    default: %{shape: [3200, 4096], runs: 3},
    quick: %{shape: [1600, 4096], runs: 1},
    smoke: %{shape: [64, 256], runs: 1}
  }
  @variants [{"none", nil, "uncompressed"}, {"zstd", %{id: "zstd", level: 3}, "zstd 3"}]
  @beam "ExZarr (BEAM alloc)"

  @impl true
  def id, do: 1

  @impl true
  def title, do: "Single-chunk float64 array: write, then read in a fresh process"

  @impl true
  def datasets(ctx), do: [dataset(Workload.config(ctx, @profiles))]

  defp dataset(conf) do
    [rows, cols] = conf.shape
    %{name: "field_#{rows}x#{cols}", kind: "field", shape: conf.shape, dtype: "float64", seed: 1}
  end

  @impl true
  def run(ctx) do
    conf = Workload.config(ctx, @profiles)
    raw = Map.fetch!(ctx.data, dataset(conf).name)

    {variants, skipped} =
      Enum.split_with(@variants, fn {id, _, _} -> id == "none" or Workload.codec?(id) end)

    base = %{workload: "single_chunk", raw: raw, shape: conf.shape, dtype: "float64"}

    # Runs are interleaved across libraries, so that a burst of load on a shared machine
    # hits every library alike rather than all the runs of one.
    results =
      for {group, comp, _} <- variants,
          run <- 1..conf.runs,
          lib <- ctx.libs,
          op <- ["write", "read"] do
        task = Map.merge(base, %{group: group, op: op, compressor: comp || :null})
        store = Path.join([ctx.store_root, lib, "single_#{group}"])
        task = Map.put(task, :store, store)
        ctx.log.("  #{lib} #{group} #{op} (run #{run})")
        {lib, Workload.run_one(ctx, lib, task, &spawn_child(ctx, &1))}
      end

    tables = tables(ctx.libs, variants, results, base)

    notes =
      for {id, _, _} <- skipped, do: "#{id}: skipped, the codec is not registered in ExZarr yet."

    {:ok, Enum.map(tables, fn t -> Enum.reduce(notes, t, &Table.add_note(&2, &1)) end)}
  end

  defp tables(libs, variants, results, base) do
    by_lib = Enum.group_by(results, &elem(&1, 0), &elem(&1, 1))
    [rows, cols] = base.shape
    mb = Table.format(rows * cols * 8 / 1.0e6)

    ops =
      for {group, _, name} <- variants, op <- ["write", "read"], do: {group, op, "#{op}, #{name}"}

    time =
      Enum.reduce(
        ops,
        Table.new("1. one #{mb} MB chunk {#{rows}, #{cols}}: time", libs, unit: "ms"),
        fn
          {group, op, label}, t ->
            cells = Map.new(by_lib, fn {lib, rs} -> {lib, ms(matching(rs, group, op))} end)
            t |> Table.add_row(label, cells) |> note_digests(by_lib, group, op)
        end
      )

    copies_table =
      Table.new(
        "1. one #{mb} MB chunk: extra copies of the array in memory",
        [hd(libs), @beam | tl(libs)],
        unit: "(peak RSS - baseline) / size - 1",
        compare: :difference,
        peers: tl(libs)
      )

    copies =
      Enum.reduce(ops, copies_table, fn {group, op, label}, t ->
        cells =
          Map.new(by_lib, fn {lib, rs} ->
            {lib, copies(matching(rs, group, op), :baseline_bytes, :peak_bytes)}
          end)

        beam =
          copies(
            matching(by_lib["ExZarr"] || [], group, op),
            :beam_baseline_bytes,
            :beam_peak_bytes
          )

        Table.add_row(t, label, Map.put(cells, @beam, beam))
      end)

    [time, Table.add_note(copies, copies_note())]
  end

  defp copies_note do
    "Peak resident memory (VmHWM) of the process above its baseline, in copies of the array beyond " <>
      "the one that must exist (memray-array's measure; RSS counts touched pages, so a buffer " <>
      "allocated at the compressed-size bound but only partly written counts for what was written). " <>
      "`#{@beam}` is `:erlang.memory(:total)` sampled every ms."
  end

  defp matching(results, group, op) do
    for %{rows: [%{group: ^group, op: ^op}]} = r <- results, do: r
  end

  defp ms([]), do: nil

  defp ms(results),
    do: Workload.median_ms(%{samples: Enum.flat_map(results, &hd(&1.rows).samples)})

  defp copies([], _base, _peak), do: nil

  defp copies(results, base, peak) do
    values = for r <- results, is_number(r[base]), do: (r[peak] - r[base]) / r.array_bytes - 1
    if values == [], do: nil, else: Workload.median(%{samples: values})
  end

  defp note_digests(table, by_lib, group, op) do
    per_lib = Map.new(by_lib, fn {lib, rs} -> {lib, List.first(matching(rs, group, op))} end)
    per_lib = Map.reject(per_lib, fn {_, r} -> is_nil(r) end)

    case Workload.digest_note(per_lib, group, op) do
      nil -> table
      note -> Table.add_note(table, note)
    end
  end

  # -- ExZarr side: a fresh `elixir` OS process per operation ---------------------------------

  @doc """
  Runs one task (a write or a read, see `child/1`) in a fresh `elixir` OS process and returns
  its result (also used by workload 14).
  """
  @spec spawn_child(Workload.ctx(), map()) :: Workload.result()
  def spawn_child(ctx, task) do
    file = Path.join(ctx.tmp, "child-#{System.unique_integer([:positive])}.json")
    File.write!(file, :jiffy.encode(task))
    ebin = Path.join(:code.lib_dir(:ex_zarr), "ebin")
    bench_ebin = __MODULE__ |> :code.which() |> to_string() |> Path.dirname()
    main = "ExZarr.Bench.main([\"--child\", #{inspect(file)}])"

    try do
      case System.cmd(
             System.find_executable("elixir"),
             ["-pa", ebin, "-pa", bench_ebin, "-e", main],
             stderr_to_stdout: true
           ) do
        {out, 0} ->
          line = out |> String.split("\n", trim: true) |> List.last()
          Workload.normalize({:ok, :jiffy.decode(line, [:return_maps])})

        {out, status} ->
          {:error, {:child_failed, status, out |> String.split("\n") |> Enum.take(-8)}}
      end
    after
      File.rm(file)
    end
  end

  @doc """
  The measurement inside the fresh process (called by `bench/run.exs --child TASK.json`):
  warms ExZarr up on a tiny array with the same codec, takes the baseline, does the one
  operation, and prints the JSON result.
  """
  @spec child(map()) :: :ok
  def child(task) do
    {:ok, _} = Application.ensure_all_started(:ex_zarr)
    %{"store" => store, "shape" => shape, "dtype" => dtype, "compressor" => comp} = task
    warm_up(store <> ".warm", dtype, comp)
    if task["op"] == "write", do: File.rm_rf!(store)
    :erlang.garbage_collect()
    Memory.reset_peak()
    baseline = Memory.rss()
    beam_baseline = :erlang.memory(:total)
    sampler = Memory.start_sampler()

    {seconds, data} =
      case task["op"] do
        "write" ->
          data = File.read!(task["raw"])

          {s, :ok} =
            Workload.timed(fn ->
              ExZarr.Array.set_slice(Workload.create(store, shape, shape, dtype, comp), data)
            end)

          {s, data}

        "read" ->
          Workload.timed(fn -> ExZarr.Array.get_slice!(ExZarr.open!(path: store)) end)
      end

    beam_peak = Memory.stop_sampler(sampler)
    peak = Memory.peak_rss()
    digest = if task["op"] == "read", do: Workload.digest([data]), else: :null

    IO.puts(
      :jiffy.encode(%{
        rows: [%{group: task["group"], op: task["op"], samples: [seconds], digest: digest}],
        baseline_bytes: baseline,
        peak_bytes: peak,
        beam_baseline_bytes: beam_baseline,
        beam_peak_bytes: beam_peak,
        array_bytes: byte_size(data)
      })
    )
  end

  defp warm_up(path, dtype, comp) do
    File.rm_rf!(path)
    small = Workload.create(path, [8, 8], [8, 8], dtype, comp)
    :ok = ExZarr.Array.set_slice(small, :binary.copy(<<1.0::float-64-little>>, 64))
    ExZarr.Array.get_slice!(ExZarr.open!(path: path))
    File.rm_rf!(path)
  end
end
