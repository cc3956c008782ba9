# The sharded-volume workload: a uint8 volume (512^3, or 1024^3 with --large) in 256^3 shards
# of 32^3 inner chunks (inner codecs bytes + blosc lz4, index bytes + crc32c at the end),
# with ExZarr, zarr-python, zarr-python + zarrs and tensorstore in the same run:
# full write, full read, the median latency of 200 random 32^3 cutouts, bytes on disk and
# file count. Every library reads the same volume and the same cutouts; the digests of what
# they read are compared.
#
#   MIX_ENV=prod mix run bench/sharded_volume.exs [--large] [--size N] [--cutouts N]
#                                                 [--libs exzarr,zarr-python,zarrs,tensorstore]
#                                                 [--dir DIR]
defmodule ExZarr.Bench.ShardedVolume do
  @moduledoc false

  alias ExZarr.Array

  @shard 256
  @inner 32
  @cutout 32
  # Each cutout's latency is the best of this many passes over the list (the machine is shared).
  @rounds 3
  @all_libs ["exzarr", "zarr-python", "zarrs", "tensorstore"]

  def main(argv) do
    {opts, _, _} =
      OptionParser.parse(argv,
        strict: [large: :boolean, size: :integer, cutouts: :integer, libs: :string, dir: :string]
      )

    size = opts[:size] || if(opts[:large], do: 1024, else: 512)
    libs = if opts[:libs], do: String.split(opts[:libs], ","), else: @all_libs
    dir = opts[:dir] || Path.join(System.tmp_dir!(), "exzarr_sharded_volume")
    File.mkdir_p!(dir)

    raw = Path.join(dir, "volume_#{size}.u8")

    unless File.exists?(raw) do
      IO.puts("generating #{size}^3 volume ...")
      python!(["gen", raw, Integer.to_string(size)])
    end

    :rand.seed(:exsss, {42, 42, 42})

    positions =
      for _ <- 1..(opts[:cutouts] || 200),
          do: for(_ <- 1..3, do: :rand.uniform(size - @cutout + 1) - 1)

    task = %{
      raw: raw,
      size: size,
      shard: @shard,
      inner: @inner,
      cutout: @cutout,
      positions: positions,
      rounds: @rounds
    }

    results =
      Enum.flat_map(libs, fn lib ->
        IO.puts("running #{lib} ...")
        path = Path.join(dir, "#{lib}.zarr")
        File.rm_rf!(path)
        task = Map.put(task, :path, path)

        results =
          if lib == "exzarr", do: run_exzarr(task), else: [{lib, run_peer(lib, task, dir)}]

        File.rm_rf!(path)
        results
      end)

    print_table(size, results)
  end

  defp config do
    %{
      "chunk_shape" => [@inner, @inner, @inner],
      "codecs" => [
        %{"name" => "bytes"},
        %{
          "name" => "blosc",
          "configuration" => %{
            "cname" => "lz4",
            "clevel" => 5,
            "shuffle" => "shuffle",
            "typesize" => 1,
            "blocksize" => 0
          }
        }
      ],
      "index_codecs" => [
        %{"name" => "bytes", "configuration" => %{"endian" => "little"}},
        %{"name" => "crc32c"}
      ],
      "index_location" => "end"
    }
  end

  defp run_exzarr(task) do
    size = task.size
    data = File.read!(task.raw)

    {:ok, array} =
      ExZarr.create(
        path: task.path,
        shape: {size, size, size},
        chunks: {@shard, @shard, @shard},
        dtype: :uint8,
        fill_value: 0,
        codecs: [%{name: "sharding_indexed", configuration: config()}]
      )

    {write_us, :ok} = :timer.tc(fn -> Array.set_slice(array, data) end)
    :erlang.garbage_collect()

    {:ok, array} = ExZarr.open(path: task.path)
    {read_us, {:ok, full}} = :timer.tc(fn -> Array.get_slice(array) end)
    read_sha = sha(full)
    _ = data == full || IO.puts("  exzarr: full read differs from the input!")
    :erlang.garbage_collect()

    {times, cutouts_sha} = cutouts(array, task.positions)
    {bytes, files} = disk_usage(task.path)
    version = to_string(Application.spec(:ex_zarr, :vsn))

    # The same cutouts through a filesystem store that skips its per-read symlink checks.
    {:ok, trusting} = ExZarr.open(path: task.path, check_symlinks: false)
    {trusting_times, trusting_sha} = cutouts(trusting, task.positions)

    [
      {"exzarr",
       %{
         "version" => version,
         "write_s" => write_us / 1.0e6,
         "read_s" => read_us / 1.0e6,
         "cutout_s" => times,
         "bytes" => bytes,
         "files" => files,
         "read_sha" => read_sha,
         "cutouts_sha" => cutouts_sha
       }},
      {"exzarr check_symlinks: false",
       %{
         "version" => version,
         "cutout_s" => trusting_times,
         "bytes" => bytes,
         "files" => files,
         "read_sha" => read_sha,
         "cutouts_sha" => trusting_sha
       }}
    ]
  end

  # Each cutout's best time over @rounds passes, and the digest of what the first pass read.
  defp cutouts(array, positions) do
    cutout = fn [z, y, x] ->
      start = {z, y, x}
      stop = {z + @cutout, y + @cutout, x + @cutout}
      :timer.tc(fn -> Array.get_slice(array, start: start, stop: stop) end)
    end

    rounds = for _ <- 1..@rounds, do: Enum.map(positions, cutout)

    times = Enum.zip_with(rounds, fn tries -> Enum.min(Enum.map(tries, &elem(&1, 0))) / 1.0e6 end)

    hash =
      Enum.reduce(hd(rounds), :crypto.hash_init(:sha256), fn {_us, {:ok, got}}, hash ->
        :crypto.hash_update(hash, got)
      end)

    {times, Base.encode16(:crypto.hash_final(hash), case: :lower)}
  end

  defp run_peer(lib, task, dir) do
    task_file = Path.join(dir, "task.json")
    File.write!(task_file, :jiffy.encode(task))

    case python(["run", lib, task_file]) do
      {:ok, out} ->
        out |> String.split("\n", trim: true) |> List.last() |> :jiffy.decode([:return_maps])

      {:error, out} ->
        IO.puts("  #{lib} failed:\n#{out}")
        nil
    end
  end

  defp print_table(size, results) do
    reference =
      Enum.find_value(
        results,
        %{"cutout_s" => [], "read_sha" => nil, "cutouts_sha" => nil},
        &elem(&1, 1)
      )

    IO.puts("""

    sharded volume: uint8 #{size}^3, shards #{@shard}^3, inner chunks #{@inner}^3, blosc lz4; \
    #{length(reference["cutout_s"])} random #{@cutout}^3 cutouts (each the best of #{@rounds} passes)
    """)

    header = [
      "library",
      "write s",
      "read s",
      "cutout median ms",
      "cutout p90 ms",
      "MB on disk",
      "files",
      "same data"
    ]

    rows =
      for {lib, r} <- results do
        case r do
          nil ->
            [lib, "failed", "", "", "", "", "", ""]

          r ->
            same =
              r["read_sha"] == reference["read_sha"] and
                r["cutouts_sha"] == reference["cutouts_sha"]

            [
              "#{lib} #{r["version"]}",
              fmt(r["write_s"]),
              fmt(r["read_s"]),
              fmt(percentile(r["cutout_s"], 0.5) * 1000),
              fmt(percentile(r["cutout_s"], 0.9) * 1000),
              fmt(r["bytes"] / 1.0e6),
              Integer.to_string(r["files"]),
              if(same, do: "yes", else: "NO")
            ]
        end
      end

    widths =
      Enum.map(0..(length(header) - 1), fn i ->
        Enum.max(Enum.map([header | rows], &String.length(Enum.at(&1, i))))
      end)

    line = fn row ->
      row
      |> Enum.zip(widths)
      |> Enum.map_join(" | ", fn {cell, w} -> String.pad_trailing(cell, w) end)
    end

    IO.puts(line.(header))
    IO.puts(Enum.map_join(widths, "-|-", &String.duplicate("-", &1)))
    Enum.each(rows, &IO.puts(line.(&1)))
  end

  defp percentile(samples, p) do
    sorted = Enum.sort(samples)
    Enum.at(sorted, min(length(sorted) - 1, floor(p * length(sorted))))
  end

  defp fmt(nil), do: "-"
  defp fmt(x), do: :erlang.float_to_binary(x / 1, decimals: 3)

  defp sha(bin), do: Base.encode16(:crypto.hash(:sha256, bin), case: :lower)

  defp disk_usage(path) do
    files =
      path |> Path.join("**") |> Path.wildcard(match_dot: true) |> Enum.filter(&File.regular?/1)

    {files |> Enum.map(&File.stat!(&1).size) |> Enum.sum(), length(files)}
  end

  defp python!(args) do
    {:ok, out} = python(args)
    out
  end

  defp python(args) do
    script = Path.join(__DIR__, "peers/sharded_volume.py")

    case System.cmd(python_executable(), [script | args], stderr_to_stdout: true) do
      {out, 0} -> {:ok, out}
      {out, _} -> {:error, out}
    end
  end

  defp python_executable do
    case System.get_env("EXZARR_PYTHON") do
      path when is_binary(path) and path != "" ->
        path

      _ ->
        {venv, 0} = System.cmd(Path.expand("scripts/setup"), ["--venv-path"])
        Path.join(String.trim(venv), "bin/python")
    end
  end
end

ExZarr.Bench.ShardedVolume.main(System.argv())
