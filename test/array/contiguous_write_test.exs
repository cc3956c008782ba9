defmodule ExZarr.Array.ContiguousWriteTest do
  # Whole chunks that are one run of the written data are stored from a sub-binary of it
  # (no copy); edge chunks and column pieces are copied. Both must store the same bytes.
  use ExUnit.Case, async: true

  alias ExZarr.Array

  defp data(rows, cols), do: for(i <- 1..(rows * cols), into: <<>>, do: <<i::16-little>>)

  for compressor <- [nil, %{id: "zstd", level: 1}] do
    test "row chunks, full and partial selections (compressor #{inspect(compressor)})" do
      {:ok, a} =
        ExZarr.create(
          shape: {7, 5},
          chunks: {2, 5},
          dtype: :uint16,
          storage: :memory,
          compressor: unquote(Macro.escape(compressor))
        )

      all = data(7, 5)
      :ok = Array.set_slice(a, all)
      assert Array.get_slice(a) == {:ok, all}
      # a whole chunk is the run of rows it holds; the edge chunk {3, 0} is padded
      assert Array.read_chunk(a, {1, 0}) == {:ok, binary_part(all, 2 * 5 * 2, 2 * 5 * 2)}
      assert {:ok, <<edge::binary-size(10), _pad::binary-size(10)>>} = Array.read_chunk(a, {3, 0})
      assert edge == binary_part(all, 6 * 5 * 2, 10)

      rows =
        data(4, 5)
        |> :binary.bin_to_list()
        |> Enum.map(&rem(&1 + 7, 256))
        |> :binary.list_to_bin()

      :ok = Array.set_slice(a, rows, start: {2, 0}, stop: {6, 5})
      assert Array.get_slice(a, start: {2, 0}, stop: {6, 5}) == {:ok, rows}
      assert Array.get_slice(a, start: {0, 0}, stop: {2, 5}) == {:ok, binary_part(all, 0, 20)}

      cols = :binary.copy(<<9, 0>>, 7 * 2)
      :ok = Array.set_slice(a, cols, start: {0, 1}, stop: {7, 3})
      assert {:ok, got} = Array.get_slice(a, start: {0, 1}, stop: {7, 3})
      assert got == cols
    end
  end
end
