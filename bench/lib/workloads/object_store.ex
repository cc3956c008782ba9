defmodule ExZarr.Bench.Workloads.ObjectStore do
  @moduledoc """
  Workload 6: a float32 array (zstd 1) in a bucket of a MinIO server on 127.0.0.1 that the
  workload starts (`ExZarr.Bench.MinIO`): full write and full read throughput, then every
  chunk read on its own with 1, 2, 4, 8, 16 and 32 in flight: median per-chunk latency and
  throughput.

  Every library talks S3 to the same server and bucket, each under its own prefix: ExZarr
  with `storage: :s3` (`s3://` URL, endpoint, credentials), zarr-python through s3fs
  (`FsspecStore`), zarr-python + zarrs on the same `FsspecStore` (zarrs reads and writes the
  chunks itself, with opendal's S3 client configured from the store; metadata goes through
  s3fs), tensorstore with its `s3` kvstore. Each timed write goes to a fresh prefix,
  so nothing is deleted between writes; the reads read the store the library wrote first.

  Concurrency: the full write and read run with `full_concurrency` requests in flight for
  every library (ExZarr `max_concurrency:`, zarr-python `async.concurrency` and s3fs's
  connection pool, zarrs `chunk_concurrent_maximum`, tensorstore `s3_request_concurrency`). The chunk reads at level `c` use
  `Task.async_stream/3` over `ExZarr.Array.read_chunk/2` with `max_concurrency: c`, and for
  the peers a pool of `c` threads reading one chunk's box each, from an array opened with the
  library's S3 limits set to `c` (zarr-python `async.concurrency` and an s3fs pool of `c`
  connections, zarrs `chunk_concurrent_maximum`, tensorstore `s3_request_concurrency`),
  timing each chunk. One process per library and round does it all, timing each write, read
  and pass `repeats` times after an untimed one.

  Skipped, with the reason, when MinIO is not installed (`scripts/install-minio`).
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{MinIO, Table, Workload}

  @bucket "exzarr-bench"

  @profiles %{
    default: %{
      n: 2048,
      chunk: 256,
      levels: [1, 2, 4, 8, 16, 32],
      full_concurrency: 16,
      runs: 3,
      repeats: 3
    },
    quick: %{
      n: 2048,
      chunk: 256,
      levels: [1, 4, 16, 32],
      full_concurrency: 16,
      runs: 1,
      repeats: 2
    },
    smoke: %{n: 256, chunk: 64, levels: [1, 4], full_concurrency: 4, runs: 1, repeats: 1}
  }

  @impl true
  def id, do: 6

  @impl true
  def title, do: "Object store: MinIO on 127.0.0.1, reads and writes at concurrency 1..32"

  @impl true
  def datasets(ctx), do: [dataset(Workload.config(ctx, @profiles).n)]

  defp dataset(n),
    do: %{name: "field32_#{n}x#{n}", kind: "field", shape: [n, n], dtype: "float32", seed: 6}

  @impl true
  def run(ctx) do
    dir = Path.join(Path.dirname(ctx.store_root), "minio")

    with {:zstd, true} <- {:zstd, Workload.codec?("zstd")},
         {:ok, server} <- MinIO.start(dir, @bucket) do
      try do
        {:ok, do_run(ctx, server)}
      after
        MinIO.stop(server)
      end
    else
      {:zstd, false} -> {:skip, "needs the zstd codec, which is not registered in ExZarr yet"}
      {:error, reason} -> {:skip, "needs MinIO: #{reason}"}
    end
  end

  defp do_run(ctx, server) do
    conf = Workload.config(ctx, @profiles)
    %{n: n, chunk: chunk, levels: levels} = conf
    ctx.log.("  MinIO at #{server.endpoint}, bucket #{server.bucket}")

    task = %{
      workload: "object_store",
      raw: Map.fetch!(ctx.data, dataset(n).name),
      shape: [n, n],
      chunks: [chunk, chunk],
      dtype: "float32",
      compressor: %{id: "zstd", level: 1},
      s3: MinIO.peer_info(server),
      full_concurrency: conf.full_concurrency,
      levels: levels,
      # the peer's limits at start-up (thread pools); the S3 limits are set level by level
      concurrency: Enum.max([conf.full_concurrency | levels]),
      repeats: conf.repeats
    }

    # Rounds as in Workload.each_lib/4; each library writes under its own prefix, a fresh one
    # for every write, and reads the first store it wrote.
    results =
      Workload.rounds(ctx, conf.runs, fn round, lib ->
        prefix = lib |> String.downcase() |> String.replace(~r/[^a-z0-9]+/, "-")

        task =
          Map.merge(task, %{
            write_prefix: "#{prefix}/round#{round}",
            read_prefix: "#{prefix}/round1-w0"
          })

        Workload.run_one(ctx, lib, task, &exzarr(&1, server))
      end)

    bytes = n * n * 4
    nchunks = div(n + chunk - 1, chunk) ** 2
    chunk_kib = div(chunk * chunk * 4, 1024)
    what = "{#{n}, #{n}} float32 (#{Table.format(bytes / 1.0e6)} MB), zstd 1"

    [
      full_table(ctx, results, what, bytes, conf.full_concurrency),
      latency_table(ctx, results, levels, nchunks, chunk_kib, chunk),
      throughput_table(ctx, results, levels, bytes, nchunks, chunk_kib)
    ]
  end

  defp full_table(ctx, results, what, bytes, c) do
    table =
      Table.new("6. Full write and read of #{what}, #{c} requests in flight", ctx.libs,
        unit: "MB/s",
        better: :higher
      )

    Enum.reduce(["write", "read"], table, fn op, t ->
      Table.add_row(t, "full #{op}", mb_per_s(results, "full", op, bytes))
    end)
    |> note(Workload.digest_note(results, "full", "read"))
  end

  defp latency_table(ctx, results, levels, nchunks, chunk_kib, chunk) do
    title =
      "6. Median per-chunk read latency, #{nchunks} chunks of {#{chunk}, #{chunk}} " <>
        "(#{chunk_kib} KiB) read one by one"

    Enum.reduce(levels, Table.new(title, ctx.libs, unit: "ms"), fn c, t ->
      times =
        Map.new(results, fn {lib, r} ->
          {lib, Workload.median_ms(Workload.find(r, "c#{c}", "latency"))}
        end)

      Table.add_row(t, "#{c} in flight", times)
    end)
  end

  defp throughput_table(ctx, results, levels, bytes, nchunks, chunk_kib) do
    title = "6. Chunk-by-chunk read throughput (#{nchunks} chunks of #{chunk_kib} KiB)"
    table = Table.new(title, ctx.libs, unit: "MB/s", better: :higher)

    Enum.reduce(levels, table, fn c, t ->
      t
      |> Table.add_row("#{c} in flight", mb_per_s(results, "c#{c}", "wall", bytes))
      |> note(Workload.digest_note(results, "c#{c}", "wall"))
    end)
  end

  defp mb_per_s(results, group, op, bytes) do
    Map.new(results, fn {lib, r} ->
      {lib, if(s = Workload.median(Workload.find(r, group, op)), do: bytes / s / 1.0e6)}
    end)
  end

  defp note(table, nil), do: table
  defp note(table, text), do: Table.add_note(table, text)

  # -- ExZarr side ----------------------------------------------------------------------------

  defp exzarr(task, server) do
    c = task.full_concurrency
    data = File.read!(task.raw)
    writes = :counters.new(1, [])

    write = fn ->
      prefix = "#{task.write_prefix}-w#{:counters.get(writes, 1)}"
      :counters.add(writes, 1, 1)
      array = create(task, MinIO.store_opts(server, prefix))
      :ok = ExZarr.Array.set_slice(array, data, max_concurrency: c)
    end

    {write_samples, nil} = Workload.measure(task.repeats, write)
    array = ExZarr.open!(MinIO.store_opts(server, task.read_prefix))
    read = fn -> ExZarr.Array.get_slice!(array, max_concurrency: c) end
    {read_samples, digest} = Workload.measure(task.repeats, read, check: &Workload.digest([&1]))

    rows = [
      %{group: "full", op: "write", samples: write_samples, digest: nil},
      %{group: "full", op: "read", samples: read_samples, digest: digest}
      | Enum.flat_map(task.levels, &chunk_rows(task, array, &1))
    ]

    %{rows: rows}
  end

  defp create(task, store_opts) do
    [
      shape: List.to_tuple(task.shape),
      chunks: List.to_tuple(task.chunks),
      dtype: :float32,
      zarr_format: 3,
      compressor: task.compressor,
      fill_value: 0.0,
      overwrite: true
    ]
    |> Keyword.merge(store_opts)
    |> ExZarr.create!()
  end

  # Every chunk read on its own with `c` in flight, in grid order, each chunk timed: one
  # untimed pass (its digest is checked), then `repeats` timed ones.
  defp chunk_rows(task, array, c) do
    [rows, cols] = Enum.zip_with(task.shape, task.chunks, &div(&1 + &2 - 1, &2))
    coords = for i <- 0..(rows - 1), j <- 0..(cols - 1), do: {i, j}

    read = fn coord ->
      {seconds, {:ok, bin}} = Workload.timed(fn -> ExZarr.Array.read_chunk(array, coord) end)
      {seconds, bin}
    end

    pass = fn ->
      coords
      |> Task.async_stream(read, max_concurrency: c, timeout: :infinity)
      |> Enum.map(fn {:ok, result} -> result end)
    end

    first = pass.()
    passes = for _ <- 1..task.repeats, do: Workload.timed(pass)

    [
      %{
        group: "c#{c}",
        op: "wall",
        samples: Enum.map(passes, &elem(&1, 0)),
        digest: Workload.digest(Enum.map(first, &elem(&1, 1)))
      },
      %{
        group: "c#{c}",
        op: "latency",
        samples: Enum.flat_map(passes, fn {_, chunks} -> Enum.map(chunks, &elem(&1, 0)) end),
        digest: nil
      }
    ]
  end
end
