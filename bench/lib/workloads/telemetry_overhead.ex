defmodule ExZarr.Bench.Workloads.TelemetryOverhead do
  @moduledoc """
  Workload 11: what ExZarr's telemetry costs an application that has `:telemetry` loaded but
  attaches no handler, on the smallest reads (where a per-call cost shows most): one whole
  chunk and a small `get_slice` inside one chunk, from a filesystem and a memory store.

  `:telemetry` is a hex package that cannot be fetched here, so the workload loads the test
  suite's stand-in (`test/support/telemetry.ex`, compiled in memory): its events look their
  handlers up in a persistent term, as `:telemetry` 1.3 does after `persist/0` (without it,
  `:telemetry` does an ETS lookup per event, a fraction of a microsecond more); its spans take
  the monotonic and system time, make a reference and merge the metadata as `:telemetry`'s do.
  The stand-in is loaded for one batch and unloaded for the next (ExZarr checks
  `function_exported?/3` on every call), alternating ABBA over many rounds, so that load on
  the machine hits both alike. Whatever `:telemetry` was loaded before is restored afterwards.

  Columns: `ExZarr` with `:telemetry` loaded and no handler, `no :telemetry` without it; the
  ratio column is the overhead (1.00: none). Times are per call: the median over the rounds
  of a batch's time divided by its calls, as wall time and as the VM's CPU time.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.Table

  @stand_in Path.expand("../../../test/support/telemetry.ex", __DIR__)
  @absent "no :telemetry"
  @columns ["ExZarr", @absent]
  @profiles %{
    default: %{calls: 2_000, rounds: 16},
    quick: %{calls: 1_000, rounds: 6},
    smoke: %{calls: 50, rounds: 2}
  }

  @impl true
  def id, do: 11

  @impl true
  def title, do: "telemetry overhead with no handler attached (one-chunk and small reads)"

  @impl true
  def datasets(_ctx), do: []

  @impl true
  def run(ctx) do
    # --runs sets the rounds here: a run is one batch in each state.
    conf = Map.fetch!(@profiles, ctx.profile)
    conf = if ctx.runs, do: %{conf | rounds: max(ctx.runs, 2)}, else: conf
    dir = Path.join(ctx.store_root, "telemetry")
    File.rm_rf!(dir)
    cases = cases(dir)
    restore = unload_telemetry()
    stand_in = compile_stand_in()

    try do
      samples = measure(cases, conf, stand_in)
      {:ok, tables(cases, conf, samples)}
    after
      unload_telemetry()
      restore.()
      File.rm_rf!(dir)
    end
  end

  # {label, fun}: each fun is one call of the operation measured.
  defp cases(dir) do
    on_disk = create(storage: :filesystem, path: Path.join(dir, "fs"))
    in_memory = create(storage: :memory)

    [
      {"one chunk (64 x 64 float64, zstd), filesystem",
       fn -> ExZarr.Array.get_slice!(on_disk, start: {64, 64}, stop: {128, 128}) end},
      {"get_slice 8 x 8 in one chunk, filesystem",
       fn -> ExZarr.Array.get_slice!(on_disk, start: {70, 70}, stop: {78, 78}) end},
      {"get_slice 8 x 8 in one chunk, memory store",
       fn -> ExZarr.Array.get_slice!(in_memory, start: {70, 70}, stop: {78, 78}) end}
    ]
  end

  defp create(storage) do
    data =
      for i <- 0..(256 * 256 - 1), into: <<>>, do: <<:math.sin(i / 300) * 10::float-64-little>>

    array =
      ExZarr.create!(
        [
          shape: {256, 256},
          chunks: {64, 64},
          dtype: :float64,
          compressor: %{id: "zstd", level: 3},
          zarr_format: 3,
          fill_value: 0.0
        ] ++ storage
      )

    :ok = ExZarr.Array.set_slice(array, data)
    array
  end

  # %{{label, column} => %{wall: [µs per call], cpu: [µs per call]}}
  defp measure(cases, conf, stand_in) do
    for round <- 1..conf.rounds,
        column <- if(rem(round, 2) == 1, do: @columns, else: Enum.reverse(@columns)),
        {label, fun} <- cases,
        reduce: %{} do
      acc ->
        set_state(column, stand_in)
        fun.()
        {wall, cpu} = batch(fun, conf.calls)

        Map.update(acc, {label, column}, %{wall: [wall], cpu: [cpu]}, fn s ->
          %{wall: [wall | s.wall], cpu: [cpu | s.cpu]}
        end)
    end
  end

  defp batch(fun, calls) do
    {cpu0, _} = :erlang.statistics(:runtime)
    t0 = System.monotonic_time(:microsecond)
    for _ <- 1..calls, do: fun.()
    wall = System.monotonic_time(:microsecond) - t0
    {cpu1, _} = :erlang.statistics(:runtime)
    {wall / calls, (cpu1 - cpu0) * 1000 / calls}
  end

  defp tables(cases, conf, samples) do
    what = "µs per call, median of #{conf.rounds} batches of #{conf.calls} calls per state"

    for {kind, name} <- [wall: "wall time", cpu: "CPU time of the VM"] do
      table = Table.new("11. telemetry, no handler: #{name} (#{what})", @columns, unit: "µs")

      Enum.reduce(cases, table, fn {label, _}, t ->
        cells = Map.new(@columns, &{&1, median(samples[{label, &1}][kind])})
        Table.add_row(t, label, cells)
      end)
    end
  end

  defp median(values) do
    sorted = Enum.sort(values)
    n = length(sorted)
    (Enum.at(sorted, div(n - 1, 2)) + Enum.at(sorted, div(n, 2))) / 2
  end

  defp set_state(@absent, _stand_in), do: unload_telemetry()

  defp set_state("ExZarr", {module, file, binary}) do
    unless function_exported?(module, :span, 3),
      do: {:module, _} = :code.load_binary(module, file, binary)
  end

  # Unloads `:telemetry` (whichever is loaded); returns a function that loads it again from the
  # code path if it was loaded before (the test suite's stand-in, in the smoke test).
  defp unload_telemetry do
    was_loaded = :code.is_loaded(:telemetry) != false
    :code.purge(:telemetry)
    :code.delete(:telemetry)
    :code.purge(:telemetry)
    fn -> if was_loaded, do: :code.ensure_loaded(:telemetry) end
  end

  defp compile_stand_in do
    # The stand-in of the test suite (also on the code path there: no redefinition warning).
    conflicts = Code.get_compiler_option(:ignore_module_conflict)
    Code.put_compiler_option(:ignore_module_conflict, true)
    [{module, binary}] = Code.compile_file(@stand_in)
    Code.put_compiler_option(:ignore_module_conflict, conflicts)
    unload_telemetry()
    {module, String.to_charlist(@stand_in), binary}
  end
end
