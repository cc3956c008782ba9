defmodule Mix.Tasks.Zarr.Copy do
  @shortdoc "Copies a Zarr array: format conversion, recompression, rechunking, resharding"

  @moduledoc """
  Copies the array at `SRC` into a new array at `DST` (paths or URLs as `ExZarr.open/1`
  takes them), with `ExZarr.copy/3`: the source's metadata, attributes and data, with the
  overrides given.

      mix zarr.copy data/a.zarr data/b.zarr --chunks 256,256 --zarr-format 3 --compressor zstd:3
      elixir --name me@127.0.0.1 -S mix zarr.copy /shared/a.zarr /shared/b.zarr --nodes a@host,b@host

  Options:

    * `--chunks A,B,...` - the target's chunk shape (inner chunks with `--shards`)
    * `--shards A,B,...` - the target's shard shape (format 3)
    * `--compressor ID[:LEVEL]` - `zstd:3`, `zlib:1`, `gzip:5`, `lz4`, ... or `none`
    * `--zarr-format 2|3` - the target's format (default: the source's)
    * `--nodes a@host,b@host` - run on these nodes (this node must be distributed: start
      it with `--name` or `--sname`); both arrays must be in a store they all reach
    * `--max-concurrency N` - units in flight per node
    * `--max-memory SIZE` - bytes per node (`512MB`, `2GiB`, `1000000`; the plan assumes
      256 MiB without it); misaligned chunks that do not fit, or that units would decode
      more than 8 times over, go through an intermediate array (`--temp PATH`; default the
      system's temporary folder, with `--nodes` a hidden folder inside the target)
    * `--resume` - continue a copy that stopped, skipping the units it did
    * `--progress` / `--no-progress` - show a progress line on stderr (default: shown)
  """
  use Mix.Task

  @switches [
    chunks: :string,
    shards: :string,
    compressor: :string,
    zarr_format: :integer,
    nodes: :string,
    max_concurrency: :integer,
    max_memory: :string,
    temp: :string,
    resume: :boolean,
    progress: :boolean
  ]

  @impl true
  def run(args) do
    {opts, src, dst} = parse!(args)
    target_opts = [path: dst] ++ target_opts(opts)

    job_opts =
      Keyword.take(opts, [:max_concurrency, :resume]) ++
        memory(opts) ++ nodes(opts[:nodes]) ++ progress(Keyword.get(opts, :progress, true))

    case Mix.Zarr.open!(src, []) do
      %ExZarr.Array{} = source ->
        case ExZarr.Jobs.copy_with_report(source, target_opts, job_opts) do
          {:ok, target, report} ->
            if Keyword.get(opts, :progress, true), do: IO.write(:stderr, "\n")
            Mix.shell().info("copied #{src} to #{dst} (#{plan(report)}): #{inspect(target)}")

          {:error, reason} ->
            Mix.raise("zarr.copy: #{Mix.Zarr.message(reason)}")
        end

      _group ->
        Mix.raise("zarr.copy: #{src} is a group; it copies arrays")
    end
  end

  defp parse!(args) do
    case OptionParser.parse(args, strict: @switches) do
      {opts, [src, dst], []} -> {opts, src, dst}
      {_, _, [{switch, _} | _]} -> Mix.raise("zarr.copy: unknown or invalid option #{switch}")
      {_, _, []} -> Mix.raise("zarr.copy takes SRC and DST; see mix help zarr.copy")
    end
  end

  defp target_opts(opts) do
    Enum.flat_map(opts, fn
      {:chunks, text} -> [chunks: shape!(:chunks, text)]
      {:shards, text} -> [shards: shape!(:shards, text)]
      {:compressor, text} -> [compressor: compressor!(text)]
      {:zarr_format, format} -> [zarr_format: format]
      _job_option -> []
    end)
  end

  defp shape!(name, text) do
    parsed = text |> String.split(",") |> Enum.map(&Integer.parse(String.trim(&1)))

    if Enum.all?(parsed, &match?({n, ""} when n > 0, &1)),
      do: parsed |> Enum.map(&elem(&1, 0)) |> List.to_tuple(),
      else: Mix.raise("zarr.copy: --#{name} must be positive integers A,B,..., got #{text}")
  end

  defp compressor!("none"), do: nil

  defp compressor!(text) do
    case String.split(text, ":") do
      [id] when id != "" ->
        %{id: id}

      [id, level] when id != "" ->
        case Integer.parse(level) do
          {n, ""} -> %{id: id, level: n}
          _ -> Mix.raise("zarr.copy: --compressor level must be an integer, got #{text}")
        end

      _ ->
        Mix.raise("zarr.copy: --compressor must be ID or ID:LEVEL, got #{text}")
    end
  end

  defp plan(%{plan: :direct}), do: "direct"

  defp plan(%{plan: :intermediate, chunks: chunks}),
    do: "through intermediate chunks #{Enum.join(chunks.intermediate, ",")}"

  defp memory(opts) do
    Enum.flat_map(opts, fn
      {:max_memory, text} -> [max_memory: size!(text)]
      {:temp, path} -> [temp_store: [path: path]]
      _ -> []
    end)
  end

  @units %{
    "" => 1,
    "B" => 1,
    "KB" => 1_000,
    "MB" => 1_000_000,
    "GB" => 1_000_000_000,
    "KIB" => 1024,
    "MIB" => 1024 * 1024,
    "GIB" => 1024 * 1024 * 1024
  }

  defp size!(text) do
    with {n, unit} when n > 0 <- Integer.parse(String.trim(text)),
         {:ok, scale} <- Map.fetch(@units, unit |> String.trim() |> String.upcase()) do
      n * scale
    else
      _ -> Mix.raise("zarr.copy: --max-memory must be a size like 512MB or 2GiB, got #{text}")
    end
  end

  defp nodes(nil), do: []

  defp nodes(text) do
    unless Node.alive?(),
      do: Mix.raise("zarr.copy: --nodes needs a distributed node (elixir --name me@host -S mix)")

    [nodes: text |> String.split(",", trim: true) |> Enum.map(&String.to_atom/1)]
  end

  defp progress(false), do: []

  defp progress(true) do
    [
      on_progress: fn %{done: done, total: total} ->
        IO.write(:stderr, "\r#{done}/#{total} units")
      end
    ]
  end
end
