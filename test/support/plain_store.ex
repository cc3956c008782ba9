defmodule ExZarr.Test.PlainStore do
  @moduledoc false
  # The memory store with none of the optional callbacks of ExZarr.Storage (one get per
  # range, a delete per key), and with `listable: false` no listing either (as over HTTP).
  @behaviour ExZarr.Storage
  alias ExZarr.Storage.Memory

  def init(opts) do
    {listable, opts} = Keyword.pop(opts, :listable, true)
    with {:ok, memory} <- Memory.init(opts), do: {:ok, {memory, listable}}
  end

  def get({memory, _}, key, range), do: Memory.get(memory, key, range)
  def put({memory, _}, key, value), do: Memory.put(memory, key, value)
  def delete({memory, _}, key), do: Memory.delete(memory, key)
  def list({memory, true}, prefix), do: Memory.list(memory, prefix)
  def list({_memory, false}, _prefix), do: {:error, {:not_supported, "no listing here"}}
  def supports_ranges?(_state), do: true
end
