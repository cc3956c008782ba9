defmodule ExZarr.Bench.Table do
  @moduledoc """
  One result table: a row per measured operation, a column per library, plus the best peer and
  how ExZarr compares to it.

  `better:` says which direction wins (`:lower` for times and copies, `:higher` for MB/s).
  `compare:` is `:ratio` (ExZarr time / best peer time, so below 1.00 means ExZarr is faster,
  whatever the unit), `:difference` (ExZarr minus best peer, for copies) or `:none`.

      t = ExZarr.Bench.Table.new("reads", ["ExZarr", "zarrs"], unit: "ms")
      t = ExZarr.Bench.Table.add_row(t, "full read", %{"ExZarr" => 10.0, "zarrs" => 20.0})
      ExZarr.Bench.Table.to_markdown(t)
  """

  @ours "ExZarr"

  defstruct [
    :title,
    :unit,
    :columns,
    :peers,
    better: :lower,
    compare: :ratio,
    rows: [],
    notes: []
  ]

  @type value :: number() | nil
  @type row :: %{
          label: String.t(),
          cells: %{String.t() => value()},
          texts: %{String.t() => String.t()}
        }
  @type t :: %__MODULE__{
          title: String.t(),
          unit: String.t(),
          columns: [String.t()],
          peers: [String.t()],
          better: :lower | :higher,
          compare: :ratio | :difference | :none,
          rows: [row()],
          notes: [String.t()]
        }

  @doc """
  A new table over `columns` (ExZarr first). Options: `unit:`, `better:`, `compare:`, and
  `peers:` (the columns the best peer is chosen from; default: every column but ExZarr's).
  """
  @spec new(String.t(), [String.t()], keyword()) :: t()
  def new(title, columns, opts) do
    %__MODULE__{
      title: title,
      unit: Keyword.fetch!(opts, :unit),
      columns: columns,
      peers: Keyword.get(opts, :peers, columns -- [@ours]),
      better: Keyword.get(opts, :better, :lower),
      compare: Keyword.get(opts, :compare, :ratio)
    }
  end

  @doc "Appends a row. `cells` maps a column to its number (nil: no result); `texts` overrides how a cell prints."
  @spec add_row(t(), String.t(), %{String.t() => value()}, %{String.t() => String.t()}) :: t()
  def add_row(%__MODULE__{} = t, label, cells, texts \\ %{}) do
    %{t | rows: t.rows ++ [%{label: label, cells: cells, texts: texts}]}
  end

  @doc "Appends a note printed under the table."
  @spec add_note(t(), String.t()) :: t()
  def add_note(%__MODULE__{} = t, note), do: %{t | notes: t.notes ++ [note]}

  @doc "The best peer's value in a row (nil when no peer has one)."
  @spec best_peer(t(), row()) :: value()
  def best_peer(%__MODULE__{} = t, row) do
    values = for p <- t.peers, v = row.cells[p], is_number(v), do: v

    cond do
      values == [] -> nil
      t.better == :lower -> Enum.min(values)
      true -> Enum.max(values)
    end
  end

  @doc """
  How a value compares to the best peer, as a time ratio: below 1.0 is better than the best
  peer. nil when either is missing or zero.
  """
  @spec relative(t(), value(), value()) :: float() | nil
  def relative(_t, v, best) when not is_number(v) or not is_number(best), do: nil
  def relative(_t, v, best) when v == 0 or best == 0, do: nil
  def relative(%__MODULE__{better: :lower}, v, best), do: v / best
  def relative(%__MODULE__{better: :higher}, v, best), do: best / v

  @doc "The table as GitHub markdown (title, header, rows, notes)."
  @spec to_markdown(t()) :: String.t()
  def to_markdown(%__MODULE__{} = t) do
    extra = extra_headers(t)
    header = ["" | Enum.map(t.columns, &"#{&1}")] ++ extra
    align = ["---" | Enum.map(tl(header), fn _ -> "---:" end)]

    lines =
      [
        "### #{t.title} (#{t.unit}, #{direction(t)})",
        "",
        line(header),
        line(align)
      ] ++ Enum.map(t.rows, &line(row_cells(t, &1))) ++ Enum.map(t.notes, &"\n#{&1}")

    Enum.join(lines, "\n") <> "\n"
  end

  @doc "The table as plain data for the JSON results file and the chart."
  @spec to_map(t()) :: map()
  def to_map(%__MODULE__{} = t) do
    %{
      title: t.title,
      unit: t.unit,
      better: t.better,
      compare: t.compare,
      columns: t.columns,
      notes: t.notes,
      rows:
        Enum.map(t.rows, fn row ->
          best = best_peer(t, row)

          %{
            label: row.label,
            values: Map.new(t.columns, &{&1, json_value(row.cells[&1])}),
            best_peer: json_value(best),
            relative: Map.new(t.columns, &{&1, json_value(relative(t, row.cells[&1], best))})
          }
        end)
    }
  end

  defp extra_headers(%__MODULE__{compare: :ratio}), do: ["best peer", "ExZarr / best"]
  defp extra_headers(%__MODULE__{compare: :difference}), do: ["best peer", "ExZarr - best"]
  defp extra_headers(%__MODULE__{compare: :none}), do: []

  defp row_cells(t, row) do
    best = best_peer(t, row)
    cells = Enum.map(t.columns, &(row.texts[&1] || format(row.cells[&1])))
    [row.label | cells] ++ comparison(t, row.cells[@ours], best)
  end

  defp comparison(%__MODULE__{compare: :none}, _ours, _best), do: []

  defp comparison(%__MODULE__{compare: :difference}, ours, best)
       when is_number(ours) and is_number(best),
       do: [format(best), signed(ours - best)]

  defp comparison(%__MODULE__{compare: :ratio} = t, ours, best) do
    case relative(t, ours, best) do
      nil -> [format(best), "-"]
      r -> [format(best), "**#{:erlang.float_to_binary(r, decimals: 2)}**"]
    end
  end

  defp comparison(_t, _ours, best), do: [format(best), "-"]

  defp direction(%__MODULE__{better: :lower}), do: "lower is better"
  defp direction(%__MODULE__{better: :higher}), do: "higher is better"

  defp line(cells), do: "| " <> Enum.join(cells, " | ") <> " |"

  @doc "Formats a number with three significant digits (nil prints as `-`)."
  @spec format(value()) :: String.t()
  def format(nil), do: "-"
  def format(v) when is_integer(v), do: Integer.to_string(v)
  def format(v) when abs(v) >= 100, do: Integer.to_string(round(v))
  def format(v) when abs(v) >= 10, do: :erlang.float_to_binary(v / 1, decimals: 1)
  def format(v), do: :erlang.float_to_binary(v / 1, decimals: 2)

  defp signed(v) when v > 0, do: "+" <> format(v)
  defp signed(v), do: format(v)

  defp json_value(nil), do: :null
  defp json_value(v), do: v
end
