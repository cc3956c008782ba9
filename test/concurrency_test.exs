defmodule ExZarr.ConcurrencyTest do
  use ExUnit.Case, async: true
  @moduletag :tmp_dir

  alias ExZarr.Array

  # 64 processes each write one row of a {64, 16} array held in one chunk (or one shard of
  # 8-row inner chunks): every partial write reads, merges and stores the chunk, so without
  # a lock on the chunk most rows are lost. Several trials, since a race may not show at once.
  @rows 64
  @trials 4

  defp create(:memory, _dir, opts), do: ExZarr.create([storage: :memory] ++ opts)
  defp create(:filesystem, dir, opts), do: ExZarr.create([path: dir] ++ opts)

  # A second handle on the same stored array (its own sharding state and index cache).
  defp reopen(%Array{storage: %{module: ExZarr.Storage.Memory, state: state}}),
    do: ExZarr.open(storage: :memory, table: state.table)

  defp reopen(%Array{storage: %{module: ExZarr.Storage.Filesystem, state: state}}),
    do: ExZarr.open(path: state.root)

  defp layout(false), do: [chunks: {@rows, 16}]
  defp layout(true), do: [chunks: {8, 16}, shards: {@rows, 16}]

  defp row_value(row, :uint8), do: :binary.copy(<<row + 1>>, 16)
  defp row_value(row, :string), do: List.duplicate("row #{row}", 16)

  defp expected(:uint8), do: for(row <- 0..(@rows - 1), into: <<>>, do: row_value(row, :uint8))
  defp expected(:string), do: Enum.flat_map(0..(@rows - 1), &row_value(&1, :string))

  defp write_rows(a, dtype, handles, rows \\ 0..(@rows - 1)) do
    rows
    |> Task.async_stream(
      fn row ->
        {:ok, h} = if handles == :separate, do: reopen(a), else: {:ok, a}
        Array.set_slice(h, row_value(row, dtype), start: {row, 0}, stop: {row + 1, 16})
      end,
      max_concurrency: @rows,
      timeout: 60_000
    )
    |> Enum.map(fn {:ok, result} -> result end)
  end

  for dtype <- [:uint8, :string],
      store <- [:memory, :filesystem],
      sharded? <- [false, true],
      handles <- [:one, :separate] do
    @tag dtype: dtype, store: store, sharded: sharded?, handles: handles
    test "#{@rows} writers of disjoint rows of one #{if sharded?, do: "shard", else: "chunk"} " <>
           "lose nothing: #{dtype}, #{store}, #{handles} handle(s)",
         ctx do
      for trial <- 1..@trials do
        dir = Path.join(ctx.tmp_dir, "t#{trial}")
        compressor = if ctx.dtype == :uint8, do: [compressor: %{id: "zstd", level: 1}], else: []

        {:ok, a} =
          create(
            ctx.store,
            dir,
            [shape: {@rows, 16}, dtype: ctx.dtype] ++ layout(ctx.sharded) ++ compressor
          )

        assert Enum.uniq(write_rows(a, ctx.dtype, ctx.handles)) == [:ok]
        {:ok, fresh} = reopen(a)
        {:ok, data} = Array.get_slice(fresh)
        assert data == expected(ctx.dtype), "rows lost in trial #{trial}"
      end
    end
  end

  test "a shrink clears its border chunk under the chunk's lock: concurrent writes stay", ctx do
    for trial <- 1..@trials do
      dir = Path.join(ctx.tmp_dir, "t#{trial}")
      {:ok, a} = create(:filesystem, dir, shape: {@rows, 16}, chunks: {@rows, 16}, dtype: :uint8)
      :ok = Array.set_slice(a, :binary.copy(<<255>>, @rows * 16))

      # writers of the rows that stay race a resize that cuts the chunk at row 32
      resize = Task.async(fn -> Array.resize(a, {32, 16}) end)
      writes = write_rows(a, :uint8, :one, 0..31)
      assert {:ok, _} = Task.await(resize)
      assert Enum.uniq(writes) == [:ok]

      {:ok, a} = reopen(a)
      {:ok, data} = Array.get_slice(a)
      assert data == binary_part(expected(:uint8), 0, 32 * 16), "rows lost in trial #{trial}"
    end
  end
end
