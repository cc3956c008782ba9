defmodule Mix.Tasks.Zarr.Validate do
  @shortdoc "Checks that a Zarr array or hierarchy is sound"

  @moduledoc """
  Checks the Zarr array or group at a path or URL and everything below it, and reports what
  is wrong where (see `ExZarr.Validate`):

    * every node's metadata conforms to its format's specification;
    * every stored chunk, and every shard of a sharded array, decodes to the size of a
      chunk; shard indexes are sound (checksum, entries inside the shard);
    * keys under an array outside its chunk grid.

  Exits with status 1 when anything is wrong (or nothing can be opened), 0 otherwise. A
  progress line is shown on stderr when a run takes more than a second.

      mix zarr.validate data/a.zarr
      mix zarr.validate az://container/tree.zarr --no-progress

  Options:

    * `--progress` / `--no-progress` - always / never show progress (default: on long runs)
    * `--max-concurrency N` - chunks read at once (default: as for a read of the array)

  #{Mix.Zarr.store_doc()}
  """
  use Mix.Task

  @switches [progress: :boolean, max_concurrency: :integer]

  @impl true
  def run(args) do
    {url, store_opts, opts} = Mix.Zarr.parse!(args, @switches, "zarr.validate")

    case Mix.Zarr.open(url, store_opts) do
      {:ok, node} ->
        validate(node, opts)

      {:error, message} ->
        Mix.shell().error(message)
        exit({:shutdown, 1})
    end
  end

  defp validate(node, opts) do
    progress = progress(Keyword.get(opts, :progress))
    run_opts = [progress: progress] ++ Keyword.take(opts, [:max_concurrency])

    case ExZarr.Validate.run(node, run_opts) do
      {:ok, report} ->
        progress.(:done, nil)
        print(report)
        if report.problems != [], do: exit({:shutdown, 1})

      {:error, reason} ->
        Mix.raise("zarr.validate: " <> Mix.Zarr.message(reason))
    end
  end

  defp print(%{nodes: nodes, chunks: chunks, problems: problems}) do
    Enum.each(problems, &Mix.shell().error(ExZarr.Validate.describe(&1)))

    summary = "#{nodes} #{plural(nodes, "node")}, #{chunks} stored #{plural(chunks, "chunk")}"

    case length(problems) do
      0 -> Mix.shell().info("OK: #{summary} checked, no problem found")
      n -> Mix.shell().error("#{n} #{plural(n, "problem")} in #{summary}")
    end
  end

  defp plural(1, word), do: word
  defp plural(_n, word), do: word <> "s"

  # A progress line on stderr, redrawn at most ten times a second: from the start with
  # --progress, after the first second without it, never with --no-progress.
  defp progress(false), do: fn _done, _total -> :ok end

  defp progress(always) do
    started = System.monotonic_time(:millisecond)
    last = :counters.new(1, [])
    :counters.put(last, 1, started - 1000)
    shown = :atomics.new(1, [])

    fn
      :done, nil ->
        if :atomics.get(shown, 1) == 1, do: IO.write(:stderr, "\n")

      done, total ->
        now = System.monotonic_time(:millisecond)

        if (always || now - started > 1000) and
             (now - :counters.get(last, 1) >= 100 or done == total) do
          :counters.put(last, 1, now)
          :atomics.put(shown, 1, 1)
          IO.write(:stderr, "\r" <> bar(done, total))
        end
    end
  end

  @width 30

  defp bar(done, total) do
    filled = if total == 0, do: @width, else: div(done * @width, total)

    "[" <>
      String.duplicate("#", filled) <>
      String.duplicate(" ", @width - filled) <>
      "] " <>
      "#{done}/#{total} chunks"
  end
end
