defmodule ExZarr.Bench.Workloads.ConcurrentWriters do
  @moduledoc """
  Workload 13: concurrent writers.

  a. The cost of safety (ExZarr only): one-row writes into a 64-row chunk and into a 256-row
     shard (a read-modify-write each) and whole-chunk writes, on the filesystem and on MinIO
     (when installed), through the store's conditional writes (what ExZarr does) and through
     the same store without them (a wrapper with no `put_if/4`, opened with
     `single_writer: true`: a plain read and put under the node lock, the path of stores
     without conditions). The variants alternate, operation by operation; cells are the
     median milliseconds of one write, the last column the ratio with / without.
  b. Lost updates: 4 OS processes write disjoint rows of one chunk, and of one shard, row by
     row (rows interleaved: row r is written by process r mod 4): ExZarr in 4 `elixir`
     processes, each peer in 4 processes of Python's `multiprocessing` (spawn). Reports how
     many rows do not end holding their writer's value, and the time of the whole run.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{MinIO, Table, Workload}

  @profiles %{
    default: %{width: 1024, ops: 40, runs: 5, rows: 256, processes: 4},
    quick: %{width: 1024, ops: 20, runs: 3, rows: 128, processes: 4},
    smoke: %{width: 64, ops: 4, runs: 1, rows: 16, processes: 2, minio: false}
  }
  @bucket "exzarr-bench-writers"
  # the writers of 13b start together this long after they are launched (ExZarr and peers)
  @start_after_ms 4_000

  @impl true
  def id, do: 13

  @impl true
  def title,
    do: "Concurrent writers: the cost of conditions, and lost updates across OS processes"

  @impl true
  def datasets(_ctx), do: []

  @impl true
  def run(ctx) do
    conf = Workload.config(ctx, @profiles)
    dir = Path.join(Path.dirname(ctx.store_root), "minio-writers")

    minio =
      case Map.get(conf, :minio, true) && MinIO.start(dir, @bucket) do
        false ->
          nil

        {:ok, server} ->
          server

        {:error, reason} ->
          ctx.log.("  no MinIO rows: #{reason}")
          nil
      end

    try do
      {:ok, [cost_table(ctx, conf, minio), lost_table(ctx, conf)]}
    after
      if minio, do: MinIO.stop(minio)
    end
  end

  # -- a. the cost of conditions -----------------------------------------------------------------

  defp cost_table(ctx, conf, minio) do
    stores =
      [{"filesystem", [storage: :filesystem, path: Path.join(ctx.store_root, "cost.zarr")]}] ++
        if(minio,
          do: [{"MinIO", [storage: :s3] ++ MinIO.store_opts(minio, "cost.zarr")}],
          else: []
        )

    columns = ["ExZarr", "ExZarr without conditions"]

    table =
      Table.new(
        "13a. One write, median ms, with conditions (ExZarr) and without; float32 rows of " <>
          "#{conf.width}, #{conf.ops} writes x #{conf.runs} rounds, uncompressed",
        columns,
        unit: "ms",
        peers: ["ExZarr without conditions"]
      )

    table =
      Enum.reduce(stores, table, fn {name, opts}, table ->
        ctx.log.("  cost of conditions: #{name}")

        Enum.reduce(cost(opts, conf), table, fn {label, with, without}, t ->
          Table.add_row(t, "#{name}: #{label}", %{
            "ExZarr" => with,
            "ExZarr without conditions" => without
          })
        end)
      end)

    Table.add_note(
      table,
      "load at the end: #{load()}; the last column is with / without (1.00: no cost)"
    )
  end

  # -> [{label, median ms with conditions, without}]
  defp cost(opts, conf) do
    w = conf.width

    layouts = [
      {"one row into a 64-row chunk", [shape: {256, w}, chunks: {64, w}], :row},
      {"one row into a 256-row shard of 64-row chunks",
       [shape: {256, w}, chunks: {64, w}, shards: {256, w}], :row},
      {"a whole 64-row chunk", [shape: {256, w}, chunks: {64, w}], :chunk}
    ]

    for {label, layout, kind} <- layouts do
      arrays =
        for variant <- [:with, :without], into: %{}, do: {variant, array(opts, layout, variant)}

      ops = for i <- 0..(conf.ops - 1), do: op(kind, i, w)

      samples =
        for _round <- 1..conf.runs,
            {start, stop, bytes} <- ops,
            variant <- Enum.shuffle([:with, :without]),
            reduce: %{with: [], without: []} do
          acc ->
            slice = [start: start, stop: stop]
            {us, :ok} = :timer.tc(fn -> ExZarr.Array.set_slice(arrays[variant], bytes, slice) end)
            Map.update!(acc, variant, &[us / 1000 | &1])
        end

      {label, median(samples.with), median(samples.without)}
    end
  end

  # One array per variant (its own prefix), written whole first so that partial writes read
  # a stored chunk.
  defp array(opts, layout, variant) do
    {:ok, a} =
      ExZarr.create(
        opts ++
          layout ++ [dtype: :float32, fill_value: 0.0, prefix: "#{variant}", overwrite: true]
      )

    {n, w} = a.metadata.shape
    :ok = ExZarr.Array.set_slice(a, :binary.copy(<<1.0::float-32-little>>, n * w))

    case variant do
      :with ->
        a

      :without ->
        {:ok, plain} = ExZarr.Storage.new(__MODULE__.Unconditional, inner: a.storage)
        {:ok, a} = ExZarr.open(storage: plain, prefix: "#{variant}", single_writer: true)
        a
    end
  end

  defp op(:row, i, w) do
    row = rem(i * 37, 256)
    {{row, 0}, {row + 1, w}, :binary.copy(<<i + 2.0::float-32-little>>, w)}
  end

  defp op(:chunk, i, w) do
    first = 64 * rem(i, 4)
    {{first, 0}, {first + 64, w}, :binary.copy(<<i + 2.0::float-32-little>>, 64 * w)}
  end

  defp median(samples) do
    sorted = Enum.sort(samples)
    Enum.at(sorted, div(length(sorted), 2))
  end

  defp load do
    case File.read("/proc/loadavg") do
      {:ok, text} -> text |> String.split() |> Enum.take(3) |> Enum.join(" ")
      _ -> "?"
    end
  end

  # -- b. lost updates across OS processes --------------------------------------------------------

  defp lost_table(ctx, conf) do
    task = %{
      workload: "concurrent_writers",
      rows: conf.rows,
      width: 16,
      processes: conf.processes,
      start_after_ms: @start_after_ms,
      runs: 1
    }

    results = Workload.each_lib(ctx, "concurrent_writers", task, &exzarr/1)

    table =
      Table.new(
        "13b. #{conf.processes} OS processes write the #{conf.rows} rows of an int32 " <>
          "{#{conf.rows}, 16} array row by row (row r by process r mod #{conf.processes}): " <>
          "rows lost, and seconds from the common start to the last write",
        ctx.libs,
        unit: "rows, s",
        compare: :none
      )

    table =
      for {lib, %{errors: errors}} <- results, {group, error} <- errors, reduce: table do
        t -> Table.add_note(t, "#{lib}, one #{group}: a writer crashed: #{error}")
      end

    for group <- ["chunk", "shard"], reduce: table do
      t ->
        lost = Map.new(results, fn {lib, r} -> {lib, lost(r, group)} end)

        secs =
          Map.new(results, fn {lib, r} ->
            {lib, Workload.median(Workload.find(r, group, "write"))}
          end)

        label = if group == "chunk", do: "one chunk", else: "one shard of 4-row chunks"

        t
        |> Table.add_row("rows lost: #{label}", lost)
        |> Table.add_row("seconds: #{label}", secs)
    end
  end

  defp lost(%{lost: lost}, group), do: lost[group] || lost[String.to_atom(group)]
  defp lost(_error, _group), do: nil

  # A writer OS process: argv is the Base64 of {open options, rows, width, start}; it waits
  # until the wall clock reaches `start` (ms), so that all writers start together.
  @child ~S"""
  [arg] = System.argv()
  {opts, rows, w, start} = arg |> Base.decode64!() |> :erlang.binary_to_term()
  {:ok, _} = Application.ensure_all_started(:ex_zarr)
  {:ok, a} = ExZarr.open(opts)
  Process.sleep(max(0, start - System.os_time(:millisecond)))

  for r <- rows do
    value = :binary.copy(<<r + 1::little-signed-32>>, w)
    :ok = ExZarr.Array.set_slice(a, value, start: {r, 0}, stop: {r + 1, w})
  end
  """

  # ExZarr's side (mirrors `concurrent_writers` in bench/peers/peer.py).
  defp exzarr(task) do
    %{rows: n, width: w, processes: procs} = task
    File.mkdir_p!(task.store)
    script = Path.join(task.store, "writer.exs")
    File.write!(script, @child)

    results =
      for {group, layout} <- [chunk: [chunks: {n, w}], shard: [chunks: {4, w}, shards: {n, w}]] do
        path = Path.join(task.store, "#{group}")
        File.rm_rf!(path)
        opts = [path: path]
        {:ok, a} = ExZarr.create(opts ++ [shape: {n, w}, dtype: :int32] ++ layout)
        # stored chunks (not fill) for every writer to read and merge into
        :ok = ExZarr.Array.set_slice(a, :binary.copy(<<-1::little-signed-32>>, n * w))

        # every writer starts then (its start-up is not timed)
        start = System.os_time(:millisecond) + @start_after_ms

        {_, _} =
          Workload.timed(fn ->
            0..(procs - 1)
            |> Task.async_stream(
              &writer(script, opts, Enum.to_list(&1..(n - 1)//procs), w, start),
              max_concurrency: procs,
              timeout: :infinity
            )
            |> Stream.run()
          end)

        seconds = (System.os_time(:millisecond) - start) / 1000
        {:ok, data} = ExZarr.Array.get_slice(ExZarr.open!(opts))

        lost = Enum.count(0..(n - 1), &(binary_part(data, &1 * w * 4, w * 4) != row(&1, w)))

        {%{group: "#{group}", op: "write", samples: [seconds], digest: nil}, {"#{group}", lost}}
      end

    %{rows: Enum.map(results, &elem(&1, 0)), lost: Map.new(results, &elem(&1, 1)), errors: %{}}
  end

  defp row(r, w), do: :binary.copy(<<r + 1::little-signed-32>>, w)

  # One writer OS process (a fresh `elixir` with ExZarr's code path) running `script`.
  defp writer(script, opts, rows, w, start) do
    ebin = Path.join(:code.lib_dir(:ex_zarr), "ebin")
    arg = Base.encode64(:erlang.term_to_binary({opts, rows, w, start}))

    {out, status} =
      System.cmd(System.find_executable("elixir"), ["-pa", ebin, script, arg],
        stderr_to_stdout: true
      )

    if status != 0, do: raise("an ExZarr writer failed (#{status}): #{out}")
  end

  defmodule Unconditional do
    @moduledoc """
    A store in front of another one without its conditional writes (no `put_if/4`, reads
    without generations): what a store without conditions costs, for the comparison.
    """
    @behaviour ExZarr.Storage

    alias ExZarr.Storage

    @impl true
    def init(opts), do: {:ok, Keyword.fetch!(opts, :inner)}
    @impl true
    def get(inner, key, range), do: Storage.get(inner, key, range)
    @impl true
    def get_ranges(inner, key, ranges), do: Storage.get_ranges(inner, key, ranges)
    @impl true
    def multi_range?(inner), do: Storage.multi_range?(inner)
    @impl true
    def put(inner, key, value), do: Storage.put(inner, key, value)
    @impl true
    def delete(inner, key), do: Storage.delete(inner, key)
    @impl true
    def list(inner, prefix), do: Storage.list(inner, prefix)
    @impl true
    def list_dir(inner, prefix), do: Storage.list_dir(inner, prefix)
    @impl true
    def identity(inner, key), do: Storage.identity(inner, key)
    @impl true
    def supports_ranges?(inner), do: Storage.supports_ranges?(inner)
  end
end
