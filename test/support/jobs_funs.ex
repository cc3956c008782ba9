defmodule ExZarr.Test.JobsFuns do
  @moduledoc false
  # Block functions for ExZarr.Jobs tests; compiled into _build so that :peer nodes load them.

  @doc "Adds `n` (mod 256) to every uint8 element, after sleeping `ms` milliseconds."
  def add(data, _box, n, ms \\ 0) do
    Process.sleep(ms)
    for <<b <- data>>, into: <<>>, do: <<rem(b + n, 256)>>
  end

  @doc "The sum of the uint8 elements and the node that computed it."
  def sum(data, _box), do: for(<<b <- data>>, reduce: 0, do: (acc -> acc + b))

  @doc """
  `add/3`, but raises on the block starting at row `row` while the persistent term
  `{#{inspect(__MODULE__)}, :fail_row}` is not false.
  """
  def add_unless_row(data, %{start: start} = box, n, row) do
    if elem(start, 0) == row and :persistent_term.get({__MODULE__, :fail_row}, true),
      do: raise("row #{row}"),
      else: add(data, box, n)
  end

  @doc "Fails every time."
  def fail(_data, _box), do: raise("boom")
end
