defmodule ExZarr.Native.TilingTest do
  # copy_regions skips filling the destination when more than 256 pieces tile it as a grid;
  # whatever the pieces, the result must be the same as a fill followed by the copies.
  use ExUnit.Case, async: true

  alias ExZarr.Native

  # 20 x 20 cells of 2 x 3 elements over a {40, 60} destination, each cell its own value.
  defp grid_pieces do
    for i <- 0..19, j <- 0..19 do
      value = rem(i * 20 + j, 250) + 1
      {:binary.copy(<<value>>, 6), {2, 3}, {0, 0}, {2 * i, 3 * j}, {2, 3}}
    end
  end

  # The reference: every element from the last piece covering it, else the fill byte.
  defp reference(shape, fill, pieces) do
    {rows, cols} = shape

    for r <- 0..(rows - 1), c <- 0..(cols - 1), into: <<>> do
      covering =
        for {src, {_, sw}, {sr, sc}, {dr, dc}, {nr, nc}} <- pieces,
            r >= dr and r < dr + nr and c >= dc and c < dc + nc,
            do: :binary.at(src, (sr + r - dr) * sw + sc + c - dc)

      <<List.last(covering, fill)>>
    end
  end

  test "a grid of more than 256 pieces is copied whole, with no fill visible" do
    pieces = grid_pieces()
    assert {:ok, out} = Native.copy_regions({40, 60}, 1, {:fill, <<0>>}, pieces)
    assert out == reference({40, 60}, 0, pieces)
    refute :binary.match(out, <<0>>) != :nomatch
  end

  test "a missing cell, a duplicated cell or a non-grid cover shows the base" do
    [first | rest] = grid_pieces()
    duplicated = [hd(rest) | rest]

    # (a fill value that uninitialized memory is unlikely to hold)
    for pieces <- [rest, duplicated, Enum.reverse(duplicated)] do
      assert {:ok, out} = Native.copy_regions({40, 60}, 1, {:fill, <<251>>}, pieces)
      assert out == reference({40, 60}, 251, pieces)
    end

    # The first cell split in two: still a cover, but not a grid (the fill is written first).
    {src, shape, start, dst, _} = first
    halves = [{src, shape, start, dst, {1, 3}}, {src, shape, start, put_elem(dst, 0, 1), {1, 3}}]
    pieces = halves ++ rest
    assert {:ok, out} = Native.copy_regions({40, 60}, 1, {:fill, <<251>>}, pieces)
    assert out == reference({40, 60}, 251, pieces)

    # A base binary instead of a fill.
    base = :binary.copy(<<255>>, 2400)
    assert {:ok, out} = Native.copy_regions({40, 60}, 1, base, rest)
    assert binary_part(out, 0, 3) == <<255, 255, 255>>
  end
end
