defmodule ExZarr.ConcurrencyTest do
  use ExUnit.Case, async: true

  alias ExZarr.Array

  test "local stores default to two chunks more than the dirty CPU schedulers, options override" do
    {:ok, a} = ExZarr.create(shape: {4}, chunks: {2}, dtype: :uint8, storage: :memory)
    assert Array.concurrency(a, []) == :erlang.system_info(:dirty_cpu_schedulers_online) + 2
    assert Array.concurrency(a, max_concurrency: 5) == 5
  end

  test "remote stores keep more requests in flight" do
    {:ok, store} =
      ExZarr.Storage.new(:s3, bucket: "b", endpoint: "http://127.0.0.1:1", anonymous: true)

    assert ExZarr.Storage.io_concurrency(store) == ExZarr.Storage.HTTP.io_concurrency()
    assert ExZarr.Storage.io_concurrency(elem(ExZarr.Storage.new(:memory, []), 1)) == nil
  end
end
