defmodule ExZarr.Test.Peak do
  @moduledoc false
  # Peaks kept in :atomics arrays by concurrent tests (how many tasks, bytes... at once).

  @doc "Raises the value at `index` of `counts` to `value` when that is larger, atomically."
  def bump(counts, index, value) do
    old = :atomics.get(counts, index)

    if value > old and :atomics.compare_exchange(counts, index, old, value) != :ok,
      do: bump(counts, index, value)
  end
end
