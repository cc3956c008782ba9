defmodule ExZarr.Jobs.PlanTest do
  use ExUnit.Case, async: false

  alias ExZarr.Array
  alias ExZarr.Jobs
  alias ExZarr.Jobs.Plan

  @moduletag :tmp_dir

  defp pattern(n), do: for(i <- 0..(n - 1), into: <<>>, do: <<rem(i * 7 + div(i, 13), 256)>>)

  defp array(dir, name, chunks) do
    {:ok, a} =
      ExZarr.create(path: Path.join(dir, name), shape: {32, 32}, chunks: chunks, dtype: :uint8)

    a
  end

  # A {32, 32} uint8 array in 8 row chunks {4, 32}.
  defp rows(dir) do
    a = array(dir, "src.zarr", {4, 32})

    :ok = Array.set_slice(a, pattern(1024))
    a
  end

  # Runs `fun` and returns its result and how many times each chunk key was read from storage
  # (the `[:ex_zarr, :storage, :request]` events of the gets).
  defp counting_gets(fun) do
    {result, counts} = counting(fun)
    {result, for({{:get, key}, n} <- counts, into: %{}, do: {key, n})}
  end

  # Runs `fun` and returns its result and how many requests of each operation each key under a
  # chunk folder (`c/`) took.
  defp counting(fun) do
    id = "plan-test-#{System.unique_integer([:positive])}"
    me = self()

    handler = fn _event, _measurements, meta, _config ->
      if meta.key =~ ~r{(^|/)c/}, do: send(me, {:request, meta.operation, meta.key})
    end

    :ok = :telemetry.attach(id, [:ex_zarr, :storage, :request, :stop], handler, nil)

    try do
      result = fun.()
      {result, collect(%{})}
    after
      :telemetry.detach(id)
    end
  end

  defp collect(counts) do
    receive do
      {:request, op, key} -> collect(Map.update(counts, {op, key}, 1, &(&1 + 1)))
    after
      0 -> counts
    end
  end

  defp copy(src, dir, name, target_opts, opts) do
    counting_gets(fn ->
      Jobs.copy_with_report(src, [path: Path.join(dir, name)] ++ target_opts, opts)
    end)
  end

  test "rows to columns: each source chunk is read once when the budget allows", %{tmp_dir: dir} do
    src = rows(dir)

    {{:ok, copy, report}, gets} = copy(src, dir, "a.zarr", [chunks: {32, 4}], [])
    assert report.plan == :direct and report.units == 1
    assert map_size(gets) == 8 and Enum.all?(Map.values(gets), &(&1 == 1))
    assert Array.get_slice!(copy) == pattern(1024)

    # a unit of the whole array holds 6 KB (see Plan.unit_bytes/3); 8 KB for 2 units at a
    # time allows halves: each source chunk is read twice
    {{:ok, copy, report}, gets} = copy(src, dir, "b.zarr", [chunks: {32, 4}], max_memory: 8192)
    assert report.plan == :direct and report.units == 2 and report.peak_bytes <= 8192
    assert map_size(gets) == 8 and Enum.all?(Map.values(gets), &(&1 == 2))
    assert Array.get_slice!(copy) == pattern(1024)

    # a given block is kept: one target chunk per unit reads every source chunk 8 times
    {{:ok, _copy, report}, gets} = copy(src, dir, "c.zarr", [chunks: {32, 4}], block: 1)
    assert report.units == 8 and Enum.all?(Map.values(gets), &(&1 == 8))
  end

  test "through an intermediate array: one shard written per stage-one unit", %{tmp_dir: dir} do
    src = rows(dir)
    temp = [path: Path.join(dir, "temp")]

    # a direct unit (one target chunk) needs 2,560 bytes: too many
    {{:ok, copy, report}, counts} =
      counting(fn ->
        Jobs.copy_with_report(src, [path: Path.join(dir, "i.zarr"), chunks: {32, 4}],
          max_memory: 2000,
          temp_store: temp
        )
      end)

    assert report.plan == :intermediate and report.chunks.intermediate == [4, 4]
    assert [%{units: 8}, %{units: 8}] = report.stages
    assert Array.get_slice!(copy) == pattern(1024)

    # each source chunk read once; stage one writes 8 shards of 8 intermediate chunks each,
    # stage two reads them in part
    source_gets = for {{:get, "c/" <> _}, n} <- counts, do: n
    assert source_gets == List.duplicate(1, 8)
    temp_puts = for {{:put, ".exzarr_rechunk_" <> _}, n} <- counts, do: n
    assert temp_puts == List.duplicate(1, 8)
  end

  test "units that would decode the source more than 8 times over: an intermediate array",
       %{tmp_dir: dir} do
    a = array(dir, "thin.zarr", {2, 32})
    :ok = Array.set_slice(a, pattern(1024))
    temp = [path: Path.join(dir, "temp")]
    target = [chunks: {32, 2}]

    # 16 row chunks to 16 column chunks: a unit of one target chunk (2,304 bytes) fits, one of
    # two does not; each would decode the whole source, 16 times over in all
    {{:ok, copy, report}, gets} =
      copy(a, dir, "a.zarr", target, max_memory: 4608, temp_store: temp)

    assert report.plan == :intermediate and report.peak_bytes <= 4608
    assert map_size(gets) == 16 and Enum.all?(Map.values(gets), &(&1 == 1))
    assert Array.get_slice!(copy) == pattern(1024)

    # a given block keeps the direct plan
    {{:ok, _copy, report}, gets} = copy(a, dir, "b.zarr", target, max_memory: 4608, block: 1)
    assert report.plan == :direct and Enum.all?(Map.values(gets), &(&1 == 16))

    # 8 times over is not too many
    src = grid(32, 4)
    assert Plan.rereads(src, grid(4, 32), [1, 1]) == 8.0
    assert Plan.rereads(src, grid(4, 32), [2, 1]) == 4.0
    assert Plan.rereads(src, grid(8, 32), [1, 1]) == 4.0
    assert Plan.rereads(src, src, [1, 1]) == 1.0
  end

  defp grid(rows, cols), do: %{shape: [32, 32], chunks: [rows, cols], itemsize: 1}

  test "chunks that line up keep small units; shards are never split", %{tmp_dir: dir} do
    src = rows(dir)

    # each target chunk covers whole source chunks: units of one target chunk read them once
    {{:ok, _copy, report}, gets} = copy(src, dir, "a.zarr", [chunks: {8, 32}], [])
    assert report.units == 4 and Enum.all?(Map.values(gets), &(&1 == 1))

    # sharded target: units are whole shards
    {{:ok, copy, report}, gets} =
      copy(src, dir, "s.zarr", [chunks: {32, 4}, shards: {32, 8}], max_memory: 3 * 6144)

    assert report.plan == :direct and report.units == 1
    assert Enum.all?(Map.values(gets), &(&1 == 1))
    assert Array.get_slice!(copy) == pattern(1024)

    {{:ok, _copy, report}, _gets} =
      copy(src, dir, "t.zarr", [chunks: {32, 4}, shards: {32, 8}], max_memory: 8192)

    assert report.units == 2
  end

  test "map_blocks with block: :auto gives fun the planned boxes", %{tmp_dir: dir} do
    src = rows(dir)

    dst = array(dir, "d.zarr", {32, 4})

    me = self()
    fun = fn data, box -> send(me, {:box, box}) && data end
    {{:ok, report}, gets} = counting_gets(fn -> Jobs.map_blocks(src, dst, fun, block: :auto) end)
    assert report.units == 1 and Enum.all?(Map.values(gets), &(&1 == 1))
    assert_received {:box, %{start: {0, 0}, stop: {32, 32}}}
    assert Array.get_slice!(dst) == pattern(1024)

    # reduce_blocks: units of source chunks read each chunk once already
    assert {:ok, 8} = Jobs.reduce_blocks(src, fn _, _ -> 1 end, &+/2, block: :auto)

    assert {:error, {:invalid_option, :block, :bogus}} =
             Jobs.map_blocks(src, dst, fun, block: :bogus)

    assert {:error, {:invalid_option, :max_concurrency, 0}} =
             Jobs.map_blocks(src, dst, fun, max_concurrency: 0)
  end

  test "the bench's rechunk: one unit per node, the budget splits further" do
    grid = fn chunks -> %{shape: [2048, 2048], chunks: chunks, itemsize: 4} end
    src = grid.([64, 2048])
    dst = grid.([2048, 64])
    mib = 1024 * 1024

    # the whole array: 96 MiB by Plan.unit_bytes/3
    assert Plan.block(src, dst, 128 * mib, 1) == [1, 32]
    assert Plan.block(src, dst, 128 * mib, 2) == [1, 16]
    assert Plan.block(src, dst, 128 * mib, 3) == [1, 11]
    # units hold the source twice (32 MiB) and 24 bytes per element of their box: halves
    # 64 MiB, thirds (11 of the 32 target chunks) 54 MiB, quarters 48 MiB
    assert Plan.block(src, dst, 64 * mib, 1) == [1, 16]
    assert Plan.block(src, dst, 63 * mib, 1) == [1, 11]
    assert Plan.block(src, dst, 50 * mib, 1) == [1, 8]
    # not even one target chunk fits: one chunk per unit
    assert Plan.block(src, dst, mib, 1) == [1, 1]
    # the same chunks: one per unit
    assert Plan.block(src, src, 128 * mib, 2) == [1, 1]
  end
end
