defmodule ExZarr.Codec.ChunkTest do
  use ExUnit.Case, async: true

  alias ExZarr.Codec.Chunk
  alias ExZarr.Storage

  @value "0123456789"

  defp stored do
    {:ok, store} = Storage.new(:memory, [])
    :ok = Storage.put(store, "c/0", @value)
    {store, Chunk.new(store, "c/0")}
  end

  # A chunk's bytes inside a stored value, at two levels of spans, each holding "2345678".
  defp places do
    {_store, whole} = stored()
    [Chunk.span(whole, 2, 7), whole |> Chunk.span(1, 9) |> Chunk.span(1, 7)]
  end

  test "ranges are relative to the chunk and clamped to it" do
    for chunk <- places() do
      assert Chunk.get(chunk) == {:ok, "2345678"}
      assert Chunk.get(chunk, {1, 2}) == {:ok, "34"}
      assert Chunk.get(chunk, {5, 10}) == {:ok, "78"}
      assert Chunk.get(chunk, {9, 1}) == {:ok, ""}
      assert Chunk.get(chunk, {:suffix, 3}) == {:ok, "678"}
      assert Chunk.get(chunk, {:suffix, 30}) == {:ok, "2345678"}

      assert {:ok, ["34", "5"], _generation} =
               Chunk.get_ranges_with_generation(chunk, [{1, 2}, {3, 1}])
    end
  end

  test "spans of spans add up" do
    {_store, whole} = stored()
    inner = whole |> Chunk.span(2, 7) |> Chunk.span(3, 2)
    assert Chunk.get(inner) == {:ok, "56"}
    assert Chunk.get(inner, {:suffix, 1}) == {:ok, "6"}
    refute Chunk.stored_value?(inner)
  end

  test "a whole stored value is put, deleted and checked against its generation" do
    {store, chunk} = stored()
    assert Chunk.stored_value?(chunk)
    # The memory store has generations.
    assert {:ok, @value, generation} = Chunk.get_with_generation(chunk)
    assert generation != nil
    assert Chunk.current?(chunk, generation)
    :ok = Chunk.put(chunk, "new")
    refute Chunk.current?(chunk, generation)

    assert Chunk.get_ranges_with_generation(chunk, [nil], generation) ==
             {:error, :generation_mismatch}

    refute Chunk.current?(chunk, nil)
    :ok = Chunk.put(chunk, ["io", "data"])
    assert Storage.get(store, "c/0") == {:ok, "iodata"}
    :ok = Chunk.delete(chunk)
    assert Chunk.get(chunk) == {:error, :not_found}
    assert Chunk.delete(chunk) == :ok
  end

  test "ranges cost only their bytes where the store serves ranges" do
    {store, chunk} = stored()
    assert Chunk.ranges?(chunk) == Storage.supports_ranges?(store)
    assert Chunk.ranges?(Chunk.span(chunk, 1, 2)) == Storage.supports_ranges?(store)
  end

  test "the identity names the stored object and the span, the same from every handle" do
    {store, chunk} = stored()
    assert Chunk.identity(Chunk.new(store, "c/0")) == Chunk.identity(chunk)
    refute Chunk.identity(Chunk.span(chunk, 0, 2)) == Chunk.identity(chunk)
    refute Chunk.identity(Chunk.new(store, "c/1")) == Chunk.identity(chunk)
  end

  test "a missing chunk is :not_found" do
    {store, _chunk} = stored()
    missing = Chunk.new(store, "c/9")
    assert Chunk.get(missing) == {:error, :not_found}
    assert Chunk.get(Chunk.span(missing, 0, 4)) == {:error, :not_found}
    assert {:error, :not_found} = Chunk.get_with_generation(missing)
  end
end
