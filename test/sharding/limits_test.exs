defmodule ExZarr.Sharding.LimitsTest do
  # Not async: it lowers the :ex_zarr :max_bytes setting for its duration.
  use ExUnit.Case, async: false

  alias ExZarr.Array

  setup do
    previous = Application.get_env(:ex_zarr, :max_bytes)
    Application.put_env(:ex_zarr, :max_bytes, 1024 * 1024)

    on_exit(fn ->
      if previous,
        do: Application.put_env(:ex_zarr, :max_bytes, previous),
        else: Application.delete_env(:ex_zarr, :max_bytes)
    end)
  end

  defp create(shape, chunks, shards) do
    ExZarr.create(
      shape: shape,
      chunks: chunks,
      shards: shards,
      dtype: :uint8,
      compressor: nil,
      storage: :memory
    )
  end

  test "a shard whose index would not fit in memory is refused" do
    assert {:error, {:too_large, :shard_index, _, _}} = create({2 ** 20}, {1}, {2 ** 20})
  end

  test "a request touching too many inner chunks is refused before planning them" do
    {:ok, a} = create({4096}, {1}, {4096})
    assert {:error, {:too_large, :chunks_touched, _, _}} = Array.get_slice(a)
    assert {:error, {:too_large, :chunks_touched, _, _}} = Array.set_slice(a, <<0::32768>>)
    assert {:ok, <<0, 0>>} = Array.get_slice(a, start: {10}, stop: {12})
  end
end
