defmodule ExZarr.Test.Snapshot do
  @moduledoc """
  The exact content of a directory tree, to show that a failed operation left it untouched.

      before = ExZarr.Test.Snapshot.take(dir)
      {:error, _} = do_something_bad()
      assert ExZarr.Test.Snapshot.take(dir) == before
  """

  @doc """
  Maps every path under `dir` (relative, "/"-separated) to `{:file, content}` or `:dir`.
  A missing `dir` is the empty map.
  """
  @spec take(Path.t()) :: %{String.t() => {:file, binary()} | :dir}
  def take(dir) do
    if File.dir?(dir), do: walk(dir, ""), else: %{}
  end

  defp walk(root, rel) do
    root
    |> Path.join(rel)
    |> File.ls!()
    |> Enum.reduce(%{}, fn name, acc ->
      child = if rel == "", do: name, else: rel <> "/" <> name
      full = Path.join(root, child)

      if File.dir?(full),
        do: acc |> Map.put(child, :dir) |> Map.merge(walk(root, child)),
        else: Map.put(acc, child, {:file, File.read!(full)})
    end)
  end

  @doc "What changed between two snapshots, as readable lines (empty when equal)."
  @spec diff(map(), map()) :: [String.t()]
  def diff(before, after_) do
    keys = Enum.sort(Enum.uniq(Map.keys(before) ++ Map.keys(after_)))

    for key <- keys, Map.get(before, key) != Map.get(after_, key) do
      case {Map.get(before, key), Map.get(after_, key)} do
        {nil, _} -> "added #{key}"
        {_, nil} -> "removed #{key}"
        _ -> "changed #{key}"
      end
    end
  end
end
