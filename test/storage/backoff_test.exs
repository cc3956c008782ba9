defmodule ExZarr.Storage.BackoffTest do
  use ExUnit.Case, async: true

  alias ExZarr.Storage.Backoff

  doctest Backoff

  test "the cap doubles from base up to max, without overflowing for any n" do
    assert Enum.map(0..7, &Backoff.cap(&1, 100, 5_000)) ==
             [100, 200, 400, 800, 1600, 3200, 5000, 5000]

    assert Backoff.cap(10_000, 100, 5_000) == 5_000
    assert Backoff.cap(3, 0, 5_000) == 0
    assert Backoff.cap(0, 100, 0) == 0
  end

  test "sleep waits no longer than the cap" do
    assert Backoff.sleep(5, 0, 0) == :ok

    {us, :ok} = :timer.tc(fn -> Backoff.sleep(3, 1, 8) end)
    assert us < 200_000
  end
end
