defmodule ExZarr.LimitsTest do
  use ExUnit.Case, async: true
  doctest ExZarr.Limits

  test "selections too large for memory are refused before planning" do
    {:ok, a} =
      ExZarr.create(shape: {2 ** 40, 2 ** 40}, chunks: {1, 1}, dtype: :uint8, storage: :memory)

    assert {:error, {:too_large, :selection, _, _}} = ExZarr.Array.get_slice(a)

    assert {:error, {:too_large, :chunks_touched, _, _}} =
             ExZarr.Array.get_slice(a, start: {0, 0}, stop: {2 ** 14, 2 ** 14})
  end
end
