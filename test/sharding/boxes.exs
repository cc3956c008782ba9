defmodule ExZarr.Test.Boxes do
  @moduledoc "Random selections for the sharding tests: `random(shape)` gives `{start, stop}`."

  @doc "A random non-empty box inside `shape` (uses the caller's `:rand` seed)."
  def random(shape) do
    {start, stop} =
      shape
      |> Tuple.to_list()
      |> Enum.map(fn n ->
        lo = :rand.uniform(n) - 1
        {lo, lo + :rand.uniform(n - lo)}
      end)
      |> Enum.unzip()

    {List.to_tuple(start), List.to_tuple(stop)}
  end
end
