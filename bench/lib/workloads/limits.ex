defmodule ExZarr.Bench.Workloads.Limits do
  @moduledoc """
  Workload 14: how close ExZarr's main reads and writes are to the limits of the machine,
  measured by a small C program with no Zarr at all (`bench/limits/limits.c`, built here with
  `cc` against Debian's libzstd, and the NIF's zstd compressor when built, into
  `_build/<env>/bench_limits`):

    * the uncompressed read of workload 1's one-chunk array (ExZarr in a fresh `elixir`
      process per run, as workload 1 measures it) against a `memcpy` of the same size between
      two touched buffers, and against `read(2)` of the chunk file into a fresh buffer (the
      page-cache limit), with small pages and with huge pages (`madvise(MADV_HUGEPAGE)`); and
      the same read in this VM, whose earlier reads leave it memory to reuse, against memcpy;
    * the zstd 3 full read of workload 2's array per chunking (ExZarr in this VM) against
      libzstd reading and decoding the same chunk files on every core (one thread per
      scheduler, chunks handed out in turn) into one buffer of the same size, touched before
      the runs (ExZarr's reads in one VM reuse the memory of the previous ones);
    * the zstd 3 full write of the same array per chunking (a fresh store each run) against
      the same zstd compressor as the NIF's (c_src/build/zstd when built) cutting the chunks
      out of the array, compressing them and writing each to a new file on every core: the
      same frames, byte for byte.

  Every cell is the fastest of the runs (after an untimed one): limits are best cases, and the
  fastest run is the one least disturbed by other work on a shared machine.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Table, Workload}
  alias ExZarr.Bench.Workloads.{SingleChunk, Slicing}

  @profiles %{
    default: %{runs: 5, n: 4096, chunkings: [row: [128, 4096], square: [512, 512]]},
    quick: %{runs: 3, n: 2048, chunkings: [row: [64, 2048], square: [256, 256]]},
    smoke: %{runs: 1, n: 256, chunkings: [row: [32, 256], square: [64, 64]]}
  }

  # workload 2's zstd level (its array is float64: 8 bytes an element)
  @level 3

  @impl true
  def id, do: 14

  @impl true
  def title,
    do: "Machine limits: the main reads and writes against memcpy, read(2) and libzstd, no Zarr"

  @impl true
  def datasets(ctx) do
    conf = Workload.config(ctx, @profiles)
    SingleChunk.datasets(ctx) ++ [Slicing.dataset(conf.n)]
  end

  @impl true
  def run(ctx) do
    conf = Workload.config(ctx, @profiles)

    with {:ok, exe} <- build(),
         do: Workload.requiring("zstd", fn -> tables(ctx, conf, exe) end)
  end

  defp tables(ctx, conf, exe) do
    table =
      Table.new("14. ExZarr against the machine's limits", ["ExZarr", "limit"],
        unit: "ms, fastest run"
      )

    table = Enum.reduce(single_rows(ctx, conf, exe), table, &add_row/2)
    table = Enum.reduce(zstd_rows(ctx, conf, exe), table, &add_row/2)

    [
      Table.add_note(
        table,
        "`best peer` is the limit: a C program with no Zarr (`bench/limits/limits.c`), " <>
          "#{System.schedulers_online()} threads for libzstd. ExZarr / best is ExZarr's time " <>
          "over the limit's."
      )
    ]
  end

  defp add_row({label, ours, limit}, table),
    do: Table.add_row(table, label, %{"ExZarr" => ours, "limit" => limit})

  # Workload 1's uncompressed read, in a fresh process per run, against memcpy and read(2).
  defp single_rows(ctx, conf, exe) do
    [dataset] = SingleChunk.datasets(ctx)
    raw = Map.fetch!(ctx.data, dataset.name)
    store = Path.join([ctx.store_root, "ExZarr", "limits_single"])
    shape = dataset.shape

    :ok =
      ExZarr.Array.set_slice(
        Workload.create(store, shape, shape, "float64", nil),
        File.read!(raw)
      )

    task = %{
      workload: "single_chunk",
      group: "none",
      op: "read",
      raw: raw,
      store: store,
      shape: shape,
      dtype: "float64",
      compressor: :null
    }

    ours =
      for _ <- 1..conf.runs do
        ctx.log.("  ExZarr uncompressed read, fresh process")

        case SingleChunk.spawn_child(ctx, task) do
          %{rows: [row]} -> hd(row.samples)
          {:error, reason} -> raise "the ExZarr read failed: #{inspect(reason)}"
        end
      end

    # The same read in this VM, whose earlier reads left memory to reuse (no page faults).
    array = ExZarr.open!(path: store)
    ctx.log.("  ExZarr uncompressed read, in this VM")
    {warm, _} = Workload.measure(conf.runs, fn -> ExZarr.Array.get_slice!(array) end)

    [file] = chunk_files(store)
    bytes = File.stat!(file).size
    ours = ms(Enum.min(ours))
    mb = Table.format(bytes / 1.0e6)
    memcpy = limit(exe, "memcpy", conf, [bytes])

    [
      {"#{mb} MB chunk, uncompressed: memcpy", ours, memcpy},
      {"#{mb} MB chunk, uncompressed, in the bench's VM: memcpy", ms(Enum.min(warm)), memcpy},
      {"#{mb} MB chunk, uncompressed: read(2), fresh buffer", ours,
       limit(exe, "read", conf, [file])},
      {"#{mb} MB chunk, uncompressed: read(2), fresh huge-page buffer", ours,
       limit(exe, "read-huge", conf, [file])}
    ]
  end

  # Workload 2's zstd 3 full write and full read per chunking, in this VM, against libzstd on
  # every core: the read rows, then the write rows. The last store written is the one read.
  defp zstd_rows(ctx, conf, exe) do
    n = conf.n
    raw = Map.fetch!(ctx.data, Slicing.dataset(n).name)
    data = File.read!(raw)
    threads = System.schedulers_online()

    {reads, writes} =
      conf.chunkings
      |> Enum.map(fn {name, chunks} ->
        store = Path.join([ctx.store_root, "ExZarr", "limits_#{name}"])
        what = "#{name} chunks {#{Enum.join(chunks, ", ")}}: libzstd"

        create = fn ->
          Workload.create(store, [n, n], chunks, "float64", %{id: "zstd", level: @level})
        end

        ctx.log.("  ExZarr zstd 3 full write and read, #{name} chunks")

        {written, nil} =
          Workload.measure(conf.runs, fn -> :ok = ExZarr.Array.set_slice(create.(), data) end,
            before: fn -> File.rm_rf!(store) end
          )

        array = ExZarr.open!(path: store)

        {read, same?} =
          Workload.measure(conf.runs, fn -> ExZarr.Array.get_slice!(array) end,
            check: &(&1 == data)
          )

        if not same?, do: raise("ExZarr read other bytes than it wrote in #{store}")
        dir = Path.join([ctx.store_root, "limit", "write_#{name}"])
        File.mkdir_p!(dir)

        write_limit =
          limit(exe, "zstd-write", conf, [threads, @level, n, n | chunks] ++ [8, raw, dir])

        if File.read!(Path.join(dir, "0")) != File.read!(Path.join(store, "c/0/0")),
          do: raise("the write limit compressed chunk 0 other than ExZarr in #{store}")

        {{"zstd 3 full read, #{what}", ms(Enum.min(read)),
          limit(exe, "zstd", conf, [threads | chunk_files(store)])},
         {"zstd 3 full write, #{what}", ms(Enum.min(written)), write_limit}}
      end)
      |> Enum.unzip()

    reads ++ writes
  end

  defp chunk_files(store) do
    store
    |> Path.join("c/**")
    |> Path.wildcard()
    |> Enum.filter(&File.regular?/1)
  end

  # The limit program's fastest time of `mode` in ms.
  defp limit(exe, mode, conf, args) do
    argv = Enum.map([mode, conf.runs | args], &to_string/1)

    case System.cmd(exe, argv, stderr_to_stdout: true) do
      {out, 0} -> out |> String.trim() |> String.to_float() |> ms()
      {out, status} -> raise "#{exe} #{mode} exited with #{status}: #{out}"
    end
  end

  defp ms(seconds), do: seconds * 1000

  @source Path.expand("../../limits/limits.c", __DIR__)
  @zstd_objects Path.expand("../../../c_src/build/zstd", __DIR__)

  # Builds the limit program with cc and libzstd, and the zstd compressor the NIF was built
  # with when there is one (see bench/limits/limits.c); skips the workload when it cannot.
  defp build do
    exe = Path.join(Mix.Project.build_path(), "bench_limits")
    cc = System.find_executable("cc")
    bundled = Path.wildcard(Path.join(@zstd_objects, "{common,compress}/*.o"))

    cond do
      cc == nil ->
        {:skip, "needs a C compiler (cc) to build bench/limits/limits.c"}

      up_to_date?(exe, bundled) ->
        {:ok, exe}

      true ->
        flags = if bundled == [], do: [], else: ["-DXZ_ZSTD_BUNDLED"]
        args = ["-O2"] ++ flags ++ ["-o", exe, @source] ++ bundled ++ ["-lzstd", "-lpthread"]

        case System.cmd(cc, args, stderr_to_stdout: true) do
          {_, 0} -> {:ok, exe}
          {out, _} -> {:skip, "needs libzstd's headers to build bench/limits/limits.c: #{out}"}
        end
    end
  end

  defp up_to_date?(exe, objects) do
    case File.stat(exe, time: :posix) do
      {:ok, built} ->
        Enum.all?([@source | objects], &(File.stat!(&1, time: :posix).mtime <= built.mtime))

      _ ->
        false
    end
  end
end
