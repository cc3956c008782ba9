defmodule ExZarr.BadInput.SelectionsTest do
  @moduledoc """
  Hostile selections for the selection API (orthogonal, coordinates, mask, blocks, steps and
  Access): improper lists, non-integer indices and hand-built ranges give `{:error, _}` from
  the plain functions and `ExZarr.Error` from the raising ones, and leave the data as it was.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Array

  @data for i <- 0..35, into: <<>>, do: <<i::32-signed-little>>

  setup do
    {:ok, a} =
      ExZarr.create(shape: {6, 6}, chunks: {4, 4}, dtype: :int32, storage: :memory, fill_value: 0)

    :ok = Array.set_slice(a, @data)
    %{array: a}
  end

  defp assert_unchanged(a), do: assert(Array.get_slice(a) == {:ok, @data})

  @bad_orthogonal [
    {"an improper index list", {[1 | 2], :all}},
    {"an improper boolean list", {[true, false | true], :all}},
    {"a range of floats", {%Range{first: 0.0, last: 3, step: 1}, :all}},
    {"a range of atoms", {%Range{first: :a, last: :b, step: 1}, :all}},
    {"a float index", {1.0, :all}},
    {"a float in a list", {[0, 1.0], :all}}
  ]

  for {label, sel} <- @bad_orthogonal do
    @tag sel: Macro.escape(sel)
    test "orthogonal selection with #{label}", %{array: a, sel: sel} do
      assert {:error, _} = Array.get_orthogonal(a, sel)
      assert {:error, _} = Array.set_orthogonal(a, sel, <<0::32>>)
      assert {:error, _} = Array.selection_shape(a, sel)
      assert_raise ExZarr.Error, fn -> Array.get_orthogonal!(a, sel) end
      assert_raise ExZarr.Error, fn -> a[sel] end
      assert_unchanged(a)
    end
  end

  @bad_points [
    {"an improper point list", [{0, 0} | {1, 1}]},
    {"a float coordinate", [{0.0, 0}]},
    {"a float coordinate out of range", [{0, 7.5}]},
    {"an atom coordinate", [{0, :x}]},
    {"a list as a point", [[0, 0]]},
    {"a tuple of points", {{0, 0}}}
  ]

  for {label, points} <- @bad_points do
    @tag points: Macro.escape(points)
    test "coordinate selection with #{label}", %{array: a, points: points} do
      assert {:error, _} = Array.get_coordinates(a, points)
      assert {:error, _} = Array.set_coordinates(a, points, <<0::32>>)
      assert_raise ExZarr.Error, fn -> Array.set_coordinates!(a, points, <<0::32>>) end
      assert_unchanged(a)
    end
  end

  test "blocks given a hand-built range of floats", %{array: a} do
    sel = {%Range{first: 0.0, last: 1, step: 1}, 0}
    assert {:error, _} = Array.get_blocks(a, sel)
    assert {:error, _} = Array.set_blocks(a, sel, <<0::32*16>>)
    assert_unchanged(a)
  end

  test "Access: a function returning neither {get, new} nor :pop raises ExZarr.Error", %{
    array: a
  } do
    assert_raise ExZarr.Error, ~r/invalid_update/, fn ->
      Access.get_and_update(a, {0, 0}, fn _ -> :bad end)
    end

    assert_raise ExZarr.Error, fn -> update_in(a[{0, 0}], fn _ -> <<1>> end) end
    assert_raise ExZarr.Error, ~r/fixed shape/, fn -> pop_in(a[{0, 0}]) end
    assert_unchanged(a)
  end

  test "variable-length data as an improper list is an error on every write path" do
    for dtype <- [:string, :bytes], shards <- [[], [shards: {4}]] do
      {:ok, a} =
        ExZarr.create([shape: {8}, chunks: {2}, dtype: dtype, storage: :memory] ++ shards)

      data = ["a" | "b"]
      assert {:error, {:not_a_list, ^data}} = Array.set_orthogonal(a, {[0, 1]}, data)
      assert {:error, {:not_a_list, ^data}} = Array.set_coordinates(a, [{0}, {5}], data)
      assert {:error, {:not_a_list, ^data}} = Array.set_mask(a, <<1, 0, 0, 0, 0, 1, 0, 0>>, data)
      assert {:error, _} = Array.set_slice(a, data, start: {0}, stop: {4}, step: {2})
      assert {:error, _} = Array.set_blocks(a, {0}, data)
      assert {:error, _} = Array.write_chunk(a, {0}, data)
      assert_raise ExZarr.Error, fn -> Array.set_slice!(a, data, start: {0}, stop: {2}) end
      assert Array.get_slice(a) == {:ok, List.duplicate("", 8)}
    end
  end
end
