defmodule ExZarr.Test.ConditionalCases do
  @moduledoc """
  Checks of conditional writes that the object stores' tests share: values large enough to go
  up in parts (S3 multipart, Azure blocks, GCS resumable chunks), whose condition is checked
  when the parts are committed.
  """

  import ExUnit.Assertions

  alias ExZarr.Storage

  @doc """
  Conditional puts of `size`-byte values on `store` (opened so that such values go up in
  parts): created on `:absent`, refused on `:absent` and on a stale generation, replaced on
  the current one; the generations the puts return are those reads report.
  """
  @spec large_values(Storage.t(), pos_integer()) :: :ok
  def large_values(store, size) do
    one = :crypto.strong_rand_bytes(size)
    two = :crypto.strong_rand_bytes(size)
    assert {:ok, g1} = Storage.put_if(store, "large", one, :absent)
    assert {:ok, [tail], ^g1} = Storage.get_ranges_with_generation(store, "large", [{:suffix, 5}])
    assert tail == binary_part(one, size - 5, 5)
    assert Storage.put_if(store, "large", two, :absent) == {:error, :generation_mismatch}
    assert {:ok, g2} = Storage.put_if(store, "large", [two], g1)
    assert g2 != g1
    assert {:ok, [^two], ^g2} = Storage.get_ranges_with_generation(store, "large", [nil])
    assert Storage.put_if(store, "large", one, g1) == {:error, :generation_mismatch}
    assert Storage.get(store, "large") == {:ok, two}
    :ok
  end
end
