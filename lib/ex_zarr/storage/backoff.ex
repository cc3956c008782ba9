defmodule ExZarr.Storage.Backoff do
  @moduledoc """
  Exponential backoff with full jitter, for retries of requests (`ExZarr.Storage.HTTP`) and of
  read-modify-writes that met a concurrent writer (`ExZarr.Storage.Update`): before retry
  number `n + 1`, wait a random time between 0 and `min(max, base * 2^n)` milliseconds, so
  that writers that collided spread out instead of colliding again.
  """

  @doc """
  The longest wait before retry number `n + 1`, in milliseconds.

      iex> ExZarr.Storage.Backoff.cap(0, 100, 5_000)
      100
      iex> ExZarr.Storage.Backoff.cap(10, 100, 5_000)
      5000
  """
  @spec cap(non_neg_integer(), non_neg_integer(), non_neg_integer()) :: non_neg_integer()
  def cap(n, base, max), do: min(max, base * Integer.pow(2, min(n, 62)))

  @doc "Sleeps a random time between 0 and `cap(n, base, max)` milliseconds."
  @spec sleep(non_neg_integer(), non_neg_integer(), non_neg_integer()) :: :ok
  def sleep(n, base, max), do: Process.sleep(:rand.uniform(cap(n, base, max) + 1) - 1)
end
