defmodule ExZarr.Test.CountingStore do
  @moduledoc """
  A storage backend that wraps another one and records every read: `{key, range, bytes}`.
  `ranges: false` makes it claim that it cannot serve byte ranges; `notify: pid` sends
  `{:counting_store_read, reader_pid, key}` to `pid` for every read.

      {:ok, inner} = ExZarr.Storage.new(:memory, [])
      {:ok, store} = ExZarr.Storage.new(ExZarr.Test.CountingStore, inner: inner)
      ExZarr.Test.CountingStore.reads(store)
  """
  @behaviour ExZarr.Storage

  alias ExZarr.Storage

  @impl true
  def init(opts) do
    {:ok, log} = Agent.start_link(fn -> [] end)

    {:ok,
     %{
       inner: Keyword.fetch!(opts, :inner),
       log: log,
       ranges: Keyword.get(opts, :ranges, true),
       notify: Keyword.get(opts, :notify)
     }}
  end

  @impl true
  def get(s, key, range) do
    result = Storage.get(s.inner, key, range)
    notify(s, key)

    case result do
      {:ok, bytes} -> Agent.update(s.log, &[{key, range, byte_size(bytes)} | &1])
      _ -> Agent.update(s.log, &[{key, range, 0} | &1])
    end

    result
  end

  @doc "Generations pass through from the inner store; each range is recorded as a read."
  @impl true
  def get_ranges_with_generation(s, key, ranges, expected) do
    result = Storage.get_ranges_with_generation(s.inner, key, ranges, expected)
    notify(s, key)

    sizes =
      case result do
        {:ok, parts, _generation} -> Enum.map(parts, &byte_size/1)
        _ -> Enum.map(ranges, fn _ -> 0 end)
      end

    Agent.update(s.log, fn log ->
      Enum.reduce(Enum.zip(ranges, sizes), log, fn {range, n}, log -> [{key, range, n} | log] end)
    end)

    result
  end

  @impl true
  def identity(s, key), do: Storage.identity(s.inner, key)

  @impl true
  def put(s, key, value), do: Storage.put(s.inner, key, value)

  @doc "Conditional writes pass through to the inner store."
  @impl true
  def put_if(s, key, value, condition), do: Storage.put_if(s.inner, key, value, condition)
  @impl true
  def conditional_writes?(s), do: Storage.conditional_writes?(s.inner)
  @impl true
  def delete(s, key), do: Storage.delete(s.inner, key)
  @impl true
  def list(s, prefix), do: Storage.list(s.inner, prefix)
  @impl true
  def supports_ranges?(s), do: s.ranges

  defp notify(%{notify: nil}, _key), do: :ok
  defp notify(%{notify: pid}, key), do: send(pid, {:counting_store_read, self(), key})

  @doc "The reads so far, oldest first, and forgets them."
  @spec reads(Storage.t()) :: [{String.t(), Storage.range(), non_neg_integer()}]
  def reads(%Storage{state: s}), do: Agent.get_and_update(s.log, &{Enum.reverse(&1), []})
end
