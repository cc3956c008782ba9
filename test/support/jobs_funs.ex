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

  @doc "Fails every time."
  def fail(_data, _box), do: raise("boom")
end
