defmodule ExZarr.Bench.Workloads.RechunkEngines do
  @moduledoc """
  The second half of workload 12: `ExZarr.Jobs` (1 node, 2 `:peer` nodes) against Dask
  (`dask.distributed` LocalCluster, 2 worker processes of 1 thread) and Cubed (its processes
  executor, 2 workers) on the same array: rechunk rows to columns, map_blocks of `x * 2 + 1`,
  peak memory per process, and the rechunk and map_blocks with one worker killed mid-job; and
  rechunker (0.5.4, zarr 2, its own venv) for the rechunk only, on a zarr 2 copy of the same
  data, executed by Dask on the same kind of cluster. The Python side is `engines` and
  `rechunker` in bench/peers/peer.py.
  """

  alias ExZarr.Bench.{Table, Workload}

  @rechunker "rechunker, Dask 2 workers"
  @columns [
    "ExZarr, 1 node",
    "ExZarr, 2 :peer nodes",
    "Dask, 2 workers",
    "Cubed, 2 processes",
    @rechunker
  ]

  # {label, ExZarr rows (1 node, 2 nodes), peer.py group of the Dask and Cubed rows, their op}
  # (rechunker's row: group "rechunker", op "rechunk"; it has no map_blocks)
  @jobs [
    {"rechunk", "rechunk", ["direct, 1 node", "direct, 2 :peer nodes"], "rechunk"},
    {"map_blocks (x * 2 + 1)", "map_blocks", ["map_blocks, 1 node", "map_blocks, 2 :peer nodes"],
     "map_blocks"}
  ]

  @doc """
  Runs the Dask, Cubed and rechunker side of `task` (the rechunk task of workload 12) and
  returns the time and memory tables, from them and from ExZarr's result (`exzarr`).
  """
  @spec tables(Workload.ctx(), map(), Workload.result(), String.t()) :: [Table.t()]
  def tables(ctx, task, exzarr, what) do
    # 12b and 12c on the filesystem, 12d and 12e on MinIO
    [time_id, memory_id] = if task[:s3], do: ["12d", "12e"], else: ["12b", "12c"]
    ctx.log.("  Dask and Cubed")

    python =
      task
      |> Map.merge(%{
        workload: "engines",
        store_root: Path.join(ctx.store_root, "engines"),
        # Cubed's bound per task (it plans its rechunk's intermediate arrays from it)
        cubed_mem: "#{max(div(task.max_memory * 8, 1_000_000), 100)}MB"
      })
      |> then(&Workload.run_one(ctx, "zarr-python", &1, fn _ -> {:error, :python_only} end))

    ctx.log.("  rechunker")

    rechunker =
      task
      |> Map.merge(%{workload: "rechunker", store_root: Path.join(ctx.store_root, "rechunker")})
      |> then(&Workload.run_one(ctx, "rechunker", &1, fn _ -> {:error, :python_only} end))

    [
      time_table(exzarr, python, rechunker, "#{time_id}. #{what}"),
      memory_table(exzarr, python, rechunker, "#{memory_id}. #{what}")
    ]
  end

  defp time_table(exzarr, python, rechunker, what) do
    table =
      Table.new("#{what}: ExZarr.Jobs, Dask, Cubed and rechunker", @columns,
        unit: "ms",
        compare: :none
      )

    table =
      Enum.reduce(@jobs, table, fn {label, group, [one, two], op}, t ->
        cells = %{
          "ExZarr, 1 node" => ms(exzarr, group, one),
          "ExZarr, 2 :peer nodes" => ms(exzarr, group, two),
          "Dask, 2 workers" => ms(python, "dask", op),
          "Cubed, 2 processes" => ms(python, "cubed", op),
          @rechunker => ms(rechunker, "rechunker", op)
        }

        killed = %{
          "ExZarr, 2 :peer nodes" => ms(exzarr, group, two <> ", 1 killed"),
          "Dask, 2 workers" => ms(python, "dask", op <> ", 1 worker killed"),
          @rechunker => ms(rechunker, "rechunker", op <> ", 1 worker killed")
        }

        t
        |> Table.add_row(label, cells)
        |> Table.add_row("#{label}, 1 worker killed mid-job", killed)
      end)

    table
    |> Table.add_note(efficiency(exzarr, python))
    |> Table.add_note(kills(exzarr, python, rechunker))
    |> Table.add_note(digests(exzarr, python, rechunker))
    |> Table.add_note(errors(python))
    |> Table.add_note(rechunker_note(rechunker))
  end

  defp memory_table(exzarr, python, rechunker, what) do
    table = Table.new("#{what}: peak RSS per OS process", @columns, unit: "MB", compare: :none)

    Enum.reduce(@jobs, table, fn {label, group, [one, two], op}, t ->
      sources = [
        {"ExZarr, 1 node", exzarr_peak(exzarr, group, one)},
        {"ExZarr, 2 :peer nodes", exzarr_peak(exzarr, group, two)},
        {"Dask, 2 workers", python_peak(python, "dask " <> op)},
        {"Cubed, 2 processes", python_peak(python, "cubed " <> op)},
        {@rechunker, python_peak(rechunker, "rechunker " <> op)}
      ]

      peaks = for {col, [_ | _] = p} <- sources, into: %{}, do: {col, p}
      cells = Map.new(peaks, fn {col, p} -> {col, Enum.max(p) / 1.0e6} end)

      texts =
        Map.new(peaks, fn {col, p} ->
          {col, Enum.map_join(p, " / ", &Table.format(&1 / 1.0e6))}
        end)

      Table.add_row(t, label, cells, texts)
    end)
    |> Table.add_note(
      "Per process: the coordinator first (this BEAM; Dask's client, also rechunker's; Cubed's " <>
        "driver), then the workers (the 2 peer BEAMs; the 2 Dask workers). Cubed's worker " <>
        "processes are not measured. The Dask scheduler runs in the client process (LocalCluster)."
    )
  end

  defp exzarr_peak(result, group, op) do
    case Workload.find(result, group, op) do
      %{peak: peak} -> peak
      _ -> nil
    end
  end

  defp python_peak(%{peaks: peaks}, key), do: peaks[key]
  defp python_peak(_error, _key), do: nil

  defp ms(result, group, op), do: Workload.median_ms(Workload.find(result, group, op))

  defp efficiency(exzarr, python) do
    Enum.map_join(@jobs, "; ", fn {label, group, [one, two], op} ->
      [a, b] = Enum.map([one, two], &Workload.median(Workload.find(exzarr, group, &1)))
      dask = Workload.median(Workload.find(python, "dask", op))

      "#{label}: ExZarr on 2 nodes #{ratio(a, b)}x the speed of 1 node (efficiency " <>
        "#{ratio(a, b && b * 2)}), Dask on 2 workers #{ratio(dask, b)}x ExZarr's 2-node time"
    end) <>
      " (every node and worker shares this machine's #{System.schedulers_online()} cores: " <>
      "scaling is bounded)"
  end

  defp ratio(a, b) when is_number(a) and is_number(b) and b > 0, do: Table.format(a / b)
  defp ratio(_a, _b), do: "-"

  defp kills(exzarr, python, rechunker) do
    ours =
      for {_, group, [_, two], _} <- @jobs,
          %{retries: r, nodes_lost: lost, killed_after: s} <-
            [Workload.find(exzarr, group, two <> ", 1 killed")] do
        "#{group}: peer halted at #{Table.format(s * 1000)} ms, nodes lost: #{lost}, units re-run: #{r}"
      end

    dask =
      for {_, _, _, op} <- @jobs,
          %{killed_after: %{^op => s}} <- [rekey(python)],
          do: "#{op}: worker SIGKILLed at #{Table.format(s * 1000)} ms"

    dask =
      dask ++
        for %{killed_after: %{"rechunk" => s}} <- [rechunker],
            do: "rechunker's rechunk: worker SIGKILLed at #{Table.format(s * 1000)} ms"

    "Killed mid-job: ExZarr hands the dead node's units to the other node, which gets all the " <>
      "rest (#{Enum.join(ours, "; ")}); Dask's nanny restarts the worker and the scheduler " <>
      "recomputes the tasks whose results it held, for rechunker's graph too, which runs on " <>
      "the same kind of cluster (#{Enum.join(dask, "; ")}). Cubed is not " <>
      "killed here: with its processes executor a SIGKILLed worker fails the whole job " <>
      "(BrokenProcessPool; tried by hand with Cubed 0.27.0)."
  end

  defp rekey(%{killed_after: k}),
    do: %{
      killed_after: Map.new(k, fn {op, s} -> {String.replace(op, ", 1 worker killed", ""), s} end)
    }

  defp rekey(_error), do: %{}

  defp digests(exzarr, python, rechunker) do
    rows =
      for {_, group, [one, two], op} <- @jobs,
          {result, g, o} <-
            [{exzarr, group, one}, {exzarr, group, two}, {python, "dask", op}] ++
              [{python, "cubed", op}, {exzarr, group, two <> ", 1 killed"}] ++
              [{python, "dask", op <> ", 1 worker killed"}, {rechunker, "rechunker", op}] ++
              [{rechunker, "rechunker", op <> ", 1 worker killed"}],
          row = Workload.find(result, g, o),
          row && row.digest,
          do: {group, row.digest}

    mismatched =
      rows
      |> Enum.group_by(&elem(&1, 0), &elem(&1, 1))
      |> Enum.filter(fn {_, d} -> length(Enum.uniq(d)) > 1 end)

    if mismatched == [],
      do: "Every system wrote the same values (SHA-256 of the arrays read back)",
      else: "**DATA MISMATCH** in #{Enum.map_join(mismatched, ", ", &elem(&1, 0))}"
  end

  defp errors(%{errors: errors}) when map_size(errors) > 0,
    do: "Failed: #{Enum.map_join(errors, "; ", fn {k, v} -> "#{k}: #{v}" end)}"

  defp errors({:error, reason}), do: "Dask and Cubed failed: #{inspect(reason, limit: 10)}"
  defp errors(%{versions: v}), do: "Dask #{v["dask"]}, Cubed #{v["cubed"]}"

  defp rechunker_note({:error, reason}), do: "rechunker failed: #{inspect(reason, limit: 10)}"

  defp rechunker_note(%{version: v}),
    do:
      "#{v}: rechunker.rechunk (max_mem: max_memory per node) of a zarr 2 copy of the same " <>
        "data (chunks and zstd 1 as the source; its own write, untimed), executed by Dask on a " <>
        "LocalCluster of 2 worker processes of 1 thread; the time includes its plan (it creates " <>
        "the target and intermediate arrays). rechunker has no map_blocks."
end
