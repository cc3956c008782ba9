defmodule ExZarr.Bench.Report do
  @moduledoc """
  Writes the results of a run: `latest.md` (the tables, GitHub markdown), `latest.json` (the
  same numbers as data) and `latest.png` (a chart of every library's time relative to the best
  peer, drawn by `bench/chart.py`).

  A section is `%{id:, title:, seconds:, status: :ok | :skipped, tables:, reason:}`.
  """

  alias ExZarr.Bench.{Python, Table}

  @doc "Writes the three files into `dir`; returns their paths (the chart is nil if it failed)."
  @spec write(Path.t(), map(), [map()]) :: %{md: Path.t(), json: Path.t(), png: Path.t() | nil}
  def write(dir, meta, sections) do
    File.mkdir_p!(dir)
    md = Path.join(dir, "latest.md")
    json = Path.join(dir, "latest.json")
    png = Path.join(dir, "latest.png")
    File.write!(md, markdown(meta, sections))
    File.write!(json, :jiffy.encode(data(meta, sections), [:pretty]))

    case Python.chart(json, png) do
      :ok ->
        %{md: md, json: json, png: png}

      {:error, reason} ->
        IO.puts("chart not drawn: #{inspect(reason)}")
        %{md: md, json: json, png: nil}
    end
  end

  @doc "The whole report as markdown."
  @spec markdown(map(), [map()]) :: String.t()
  def markdown(meta, sections) do
    header = """
    # ExZarr benchmark (`make bench`)

    #{meta.date} · profile `#{meta.profile}` · #{meta.machine} · total #{round(meta.seconds)} s ·
    load average #{meta.load} (more than the core count means other work shared the CPUs)

    Versions: #{Enum.map_join(meta.versions, ", ", fn {k, v} -> "#{k} #{v}" end)}.

    Every cell is the median of the runs (#{meta.runs_note}). **ExZarr / best** divides ExZarr's
    time by the best peer's (below 1.00: ExZarr is faster; for MB/s tables the inverse of the
    throughput ratio, so the same reading holds). Each library runs in its own OS process on
    the same raw input, writes its own store and reads it back; reads are checked to return
    identical bytes across libraries (a mismatch is printed under its table).
    """

    Enum.join([header | Enum.map(sections, &section/1)], "\n")
  end

  @doc "One workload's section as markdown."
  @spec section(map()) :: String.t()
  def section(%{status: :skipped} = s),
    do: "## #{s.id}. #{s.title}\n\nSkipped: #{s.reason}\n"

  def section(s) do
    tables = Enum.map_join(s.tables, "\n", &Table.to_markdown/1)
    "## #{s.id}. #{s.title}\n\n_#{round(s.seconds)} s_\n\n" <> tables
  end

  defp data(meta, sections) do
    %{
      meta: Map.update!(meta, :versions, &Map.new/1),
      workloads:
        Enum.map(sections, fn s ->
          %{
            id: s.id,
            title: s.title,
            status: s.status,
            reason: Map.get(s, :reason, :null),
            tables: Enum.map(Map.get(s, :tables, []), &Table.to_map/1)
          }
        end)
    }
  end
end
