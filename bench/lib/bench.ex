defmodule ExZarr.Bench do
  @moduledoc """
  `make bench`: runs every workload with ExZarr and, in the same run on the same data, with
  zarr-python, zarr-python + zarrs and tensorstore (each in its own process), then writes
  `bench/results/latest.md`, `latest.json` and `latest.png` and prints the tables.

      MIX_ENV=prod mix run bench/run.exs [--quick | --smoke] [--only 1,3] [--peers zarrs,tensorstore]
                                         [--runs N] [--large] [--data DIR] [--out DIR]

  `--quick` is a ~2 minute smoke run with smaller arrays, `--smoke` the tiny configuration the
  ExUnit test runs, `--large` makes workload 5's volume 1024^3 and workload 12's field 2 GB. Workloads are modules implementing `ExZarr.Bench.Workload`; a workload whose
  codec ExZarr does not have yet is skipped with the reason printed.
  """

  alias ExZarr.Bench.{Python, Report, Table}
  alias ExZarr.Bench.Workloads.{Concurrency, Sharded, SingleChunk, Slicing, ZstdLevels}
  alias ExZarr.Bench.Workloads.{ChunkCache, ConcurrentWriters, HTTP, ObjectStore, Rechunk}
  alias ExZarr.Bench.Workloads.{Bfloat16, Limits, Selections, TelemetryOverhead}

  @workloads [
    SingleChunk,
    Slicing,
    Concurrency,
    ZstdLevels,
    Sharded,
    ObjectStore,
    HTTP,
    ChunkCache,
    Selections,
    Bfloat16,
    TelemetryOverhead,
    Rechunk,
    ConcurrentWriters,
    Limits
  ]

  @switches [
    quick: :boolean,
    smoke: :boolean,
    large: :boolean,
    only: :string,
    peers: :string,
    runs: :integer,
    data: :string,
    out: :string,
    child: :string
  ]

  @bench_dir Path.expand("..", __DIR__)

  @doc "Entry point of `bench/run.exs` (command-line arguments)."
  @spec main([String.t()]) :: :ok
  def main(argv) do
    case OptionParser.parse(argv, strict: @switches) do
      {[child: file], [], []} ->
        SingleChunk.child(:jiffy.decode(File.read!(file), [:return_maps]))

      {opts, [], []} ->
        case run(opts) do
          {:ok, _} ->
            :ok

          {:error, reason} ->
            IO.puts(:stderr, "bench: #{reason}")
            System.halt(1)
        end

      {_, args, invalid} ->
        IO.puts(
          :stderr,
          "bench: unexpected arguments #{inspect(args ++ Enum.map(invalid, &elem(&1, 0)))}"
        )

        IO.puts(:stderr, @moduledoc)
        System.halt(2)
    end
  end

  @doc """
  Runs the benchmark with parsed options (see the module doc). Returns the report's paths and
  the sections, or `{:error, message}` for bad options or when the data cannot be generated.
  """
  @spec run(keyword()) :: {:ok, map()} | {:error, String.t()}
  def run(opts) do
    started = System.monotonic_time(:millisecond)
    load_before = load_average()

    with {:ok, peers} <- peers(opts[:peers]),
         {:ok, workloads} <- workloads(opts[:only]),
         ctx = context(opts, peers),
         log = ctx.log,
         _ =
           log.("ExZarr bench, profile #{ctx.profile}, libraries: #{Enum.join(ctx.libs, ", ")}"),
         {:ok, data} <- datasets(ctx, workloads) do
      ctx = %{ctx | data: data}
      sections = Enum.map(workloads, &run_workload(ctx, &1))
      File.rm_rf!(ctx.store_root)
      File.rm_rf!(ctx.tmp)
      seconds = (System.monotonic_time(:millisecond) - started) / 1000
      paths = Report.write(ctx.out, meta(ctx, seconds, load_before), sections)
      log.("\nwrote #{paths.md}#{if paths.png, do: " and #{paths.png}"} in #{round(seconds)} s")
      {:ok, Map.put(paths, :sections, sections)}
    end
  end

  defp context(opts, peers) do
    data_dir = Path.expand(opts[:data] || Path.join(@bench_dir, "data"))
    tmp = Path.join(data_dir, "tmp")
    File.mkdir_p!(tmp)

    %{
      profile:
        cond do
          opts[:smoke] -> :smoke
          opts[:quick] -> :quick
          true -> :default
        end,
      runs: opts[:runs],
      large: opts[:large] == true,
      libs: ["ExZarr" | peers],
      data: %{},
      raw_dir: Path.join(data_dir, "raw"),
      store_root: Path.join(data_dir, "stores"),
      tmp: tmp,
      out: Path.expand(opts[:out] || Path.join(@bench_dir, "results")),
      log: &IO.puts/1
    }
  end

  defp peers(nil), do: {:ok, Python.peer_libs()}

  defp peers(list) do
    wanted = String.split(list, ",", trim: true)

    case wanted -- Python.peer_libs() do
      [] ->
        {:ok, Enum.filter(Python.peer_libs(), &(&1 in wanted))}

      unknown ->
        {:error,
         "unknown peers #{inspect(unknown)}; known: #{Enum.join(Python.peer_libs(), ", ")}"}
    end
  end

  defp workloads(nil), do: {:ok, @workloads}

  defp workloads(only) do
    ids = only |> String.split(",", trim: true) |> Enum.map(&Integer.parse/1)

    if Enum.all?(ids, &match?({_, ""}, &1)) do
      ids = Enum.map(ids, &elem(&1, 0))
      {:ok, Enum.filter(@workloads, &(&1.id() in ids))}
    else
      {:error, "--only takes workload numbers, like --only 1,3"}
    end
  end

  defp datasets(ctx, workloads) do
    specs = workloads |> Enum.flat_map(& &1.datasets(ctx)) |> Enum.uniq()
    ctx.log.("generating #{length(specs)} dataset(s) with numpy in #{ctx.raw_dir} (cached)")

    case Python.gen_data(ctx.raw_dir, specs) do
      {:ok, data} -> {:ok, data}
      {:error, reason} -> {:error, "data generation failed: #{inspect(reason)}"}
    end
  end

  defp run_workload(ctx, module) do
    ctx.log.("\n== #{module.id()}. #{module.title()}")
    started = System.monotonic_time(:millisecond)
    outcome = module.run(ctx)
    seconds = (System.monotonic_time(:millisecond) - started) / 1000
    base = %{id: module.id(), title: module.title(), seconds: seconds}

    case outcome do
      {:ok, tables} ->
        Enum.each(tables, &ctx.log.("\n" <> Table.to_markdown(&1)))
        Map.merge(base, %{status: :ok, tables: tables})

      {:skip, reason} ->
        ctx.log.("skipped: #{reason}")
        Map.merge(base, %{status: :skipped, reason: reason})
    end
  end

  defp meta(ctx, seconds, load_before) do
    %{
      load: "#{load_before} at start, #{load_average()} at end",
      date: DateTime.utc_now() |> DateTime.truncate(:second) |> DateTime.to_iso8601(),
      profile: ctx.profile,
      machine: machine(),
      seconds: seconds,
      runs_note: runs_note(ctx),
      versions: [
        {"Elixir", System.version()},
        {"OTP", System.otp_release()} | Python.versions(ctx.libs)
      ]
    }
  end

  defp runs_note(%{runs: runs}) when is_integer(runs), do: "#{runs} per cell"
  defp runs_note(%{profile: :default}), do: "3 per cell"
  defp runs_note(%{profile: :quick}), do: "1 or 2 per cell"
  defp runs_note(%{profile: :smoke}), do: "1 per cell"

  # The 1-minute load average: on a shared machine it says how much the numbers can be trusted.
  defp load_average do
    case File.read("/proc/loadavg") do
      {:ok, text} -> text |> String.split() |> hd()
      _ -> "?"
    end
  end

  defp machine do
    cpu = first_match("/proc/cpuinfo", ~r/model name\s*:\s*(.+)/) || "unknown CPU"
    mem = first_match("/proc/meminfo", ~r/MemTotal:\s*(\d+) kB/)
    ram = if mem, do: ", #{round(String.to_integer(mem) / 1_048_576)} GB RAM", else: ""
    "#{System.schedulers_online()} cores (#{String.trim(cpu)})#{ram}"
  end

  defp first_match(file, regex) do
    with {:ok, text} <- File.read(file),
         [_, value] <- Regex.run(regex, text),
         do: value,
         else: (_ -> nil)
  end
end
