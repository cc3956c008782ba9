defmodule ExZarr.Jobs.MaxMemoryTest do
  use ExUnit.Case, async: false

  alias ExZarr.Array
  alias ExZarr.Jobs
  alias ExZarr.Jobs.Plan

  @moduletag :tmp_dir

  defp pattern(n), do: for(i <- 0..(n - 1), into: <<>>, do: <<rem(i * 7 + div(i, 13), 256)>>)

  defp array(dir, name, shape, chunks, data \\ nil) do
    {:ok, a} =
      ExZarr.create(path: Path.join(dir, name), shape: shape, chunks: chunks, dtype: :uint8)

    if data, do: :ok = Array.set_slice(a, data, start: {0, 0}, stop: shape)
    a
  end

  defp all(a), do: Array.get_slice!(a, start: {0, 0}, stop: a.metadata.shape)

  # A block function that counts the units and the source bytes in flight and keeps the
  # peaks (in an :atomics array: units, bytes, peak units, peak bytes).
  defp counting(counter) do
    fn data, _box ->
      units = :atomics.add_get(counter, 1, 1)
      bytes = :atomics.add_get(counter, 2, byte_size(data))
      ExZarr.Test.Peak.bump(counter, 3, units)
      ExZarr.Test.Peak.bump(counter, 4, bytes)
      Process.sleep(5)
      :atomics.sub(counter, 1, 1)
      :atomics.sub(counter, 2, byte_size(data))
      data
    end
  end

  test "max_memory bounds the units in flight by their bytes", %{tmp_dir: dir} do
    src = array(dir, "src.zarr", {40, 30}, {8, 10}, pattern(1200))
    dst = array(dir, "dst.zarr", {40, 30}, {8, 10})
    counter = :atomics.new(4, signed: true)

    # an {8, 10} unit holds its source chunk twice (decoded, encoded), its box in and out,
    # and its target chunk twice: 6 * 80 = 480 bytes; 1000 bytes fit two of them
    assert {:ok, report} =
             Jobs.map_blocks(src, dst, counting(counter), max_memory: 1000, max_concurrency: 8)

    assert all(dst) == pattern(1200)
    assert report.units == 15
    assert report.peak_bytes == 960
    assert :atomics.get(counter, 3) == 2 or :atomics.get(counter, 3) == 1
    assert :atomics.get(counter, 4) <= 2 * 80

    # without the bound, the same job has more units in flight
    counter = :atomics.new(4, signed: true)
    assert {:ok, _} = Jobs.map_blocks(src, dst, counting(counter), max_concurrency: 8)
    assert :atomics.get(counter, 3) > 2

    # misaligned grids: a unit holds every source chunk its box touches
    dst = array(dir, "dst2.zarr", {40, 30}, {16, 7})
    assert {:ok, report} = Jobs.map_blocks(src, dst, counting(counter), max_memory: 1100)
    assert report.peak_bytes <= 1100 and all(dst) == pattern(1200)
  end

  test "a plan whose unit cannot fit is refused before anything runs", %{tmp_dir: dir} do
    src = array(dir, "src.zarr", {40, 30}, {8, 10}, pattern(1200))
    dst = array(dir, "dst.zarr", {40, 30}, {16, 7})
    f = {ExZarr.Test.JobsFuns, :fail, []}

    # the unit at rows 16-32, columns 7-14 touches 16 x 20 source elements:
    # 2 * 320 + 2 * 112 + 2 * 112 bytes
    assert {:error, {:max_memory_too_small, %{needed: 1088, max_memory: 1000}}} =
             Jobs.map_blocks(src, dst, f, max_memory: 1000)

    assert {:error, {:invalid_option, :max_memory, 0}} =
             Jobs.map_blocks(src, dst, f, max_memory: 0)

    assert {:error, {:unknown_option, :max_memory}} =
             Jobs.reduce_blocks(src, f, &+/2, max_memory: 10)

    {:ok, strings} =
      ExZarr.create(path: Path.join(dir, "s.zarr"), shape: {4}, chunks: {2}, dtype: :string)

    assert {:error, {:max_memory_unsupported_dtype, :string}} =
             Jobs.map_blocks(strings, strings, f, max_memory: 10_000)

    # a copy with a fixed block: no other plan to choose
    assert {:error, {:max_memory_too_small, _}} =
             ExZarr.copy(src, [path: Path.join(dir, "c.zarr"), chunks: {1, 30}],
               max_memory: 100,
               block: 1
             )

    assert {:error, {:invalid_option, :temp_store, :x}} =
             ExZarr.copy(src, [path: Path.join(dir, "d.zarr")], temp_store: :x)
  end

  test "a copy that fits runs the direct plan", %{tmp_dir: dir} do
    src = array(dir, "src.zarr", {40, 30}, {8, 10}, pattern(1200))

    assert {:ok, copy, report} =
             Jobs.copy_with_report(src, [path: Path.join(dir, "c.zarr"), chunks: {8, 30}],
               max_memory: 100_000
             )

    assert report.plan == :direct and report.units == 5
    assert all(copy) == pattern(1200)
  end

  test "{1000, 1} to {1, 1000} chunks under a small max_memory goes through an intermediate",
       %{tmp_dir: dir} do
    n = 1000
    data = :crypto.strong_rand_bytes(n * n)
    src = array(dir, "src.zarr", {n, n}, {n, 1}, data)
    temp = Path.join(dir, "temp")

    # a direct unit (one target chunk) would read all 1000 source chunks: 2 MB and more
    assert {:ok, copy, report} =
             Jobs.copy_with_report(src, [path: Path.join(dir, "dst.zarr"), chunks: {1, n}],
               max_memory: 200_000,
               temp_store: [path: temp]
             )

    assert report.plan == :intermediate
    assert %{read: [1000, 16], write: [16, 1000], intermediate: [16, 16]} = report.chunks
    assert [%{units: one}, %{units: two}] = report.stages
    assert report.units == one + two
    assert report.peak_bytes <= 200_000
    assert copy.metadata.chunks == {1, n}
    assert all(copy) == data

    # zarr-python reads the copy back identically
    script = """
    import sys, hashlib, zarr, numpy as np
    a = zarr.open_array(sys.argv[1], mode="r")
    print(a.chunks, hashlib.sha256(np.asarray(a[:]).tobytes()).hexdigest())
    """

    out = ExZarr.Test.Python.run!(script, [Path.join(dir, "dst.zarr")])
    sha = Base.encode16(:crypto.hash(:sha256, data), case: :lower)
    assert String.trim(out) == "(1, 1000) #{sha}"
    # the intermediate array is gone
    assert rechunk_dirs(temp) == []

    # by default in a fresh folder of the system's temporary folder, removed afterwards
    before = rechunk_dirs(System.tmp_dir!())

    assert {:ok, copy2, %{plan: :intermediate}} =
             Jobs.copy_with_report(src, [path: Path.join(dir, "dst2.zarr"), chunks: {1, n}],
               max_memory: 200_000
             )

    assert all(copy2) == data

    # too little even for one target chunk per unit: refused, and nothing left behind
    assert {:error, {:max_memory_too_small, %{needed: needed}}} =
             ExZarr.copy(src, [path: Path.join(dir, "dst3.zarr"), chunks: {1, n}],
               max_memory: 4_000
             )

    assert needed > 4_000
    assert rechunk_dirs(System.tmp_dir!()) -- before == []
  end

  test "rechunker's chunks: consolidated target and source chunks, their minimum between" do
    grid = fn shape, chunks, size -> %{shape: shape, chunks: chunks, itemsize: size} end
    # 3-D float64, 600 KB per unit: 100 KB read or written chunk, about 12,800 elements
    src = grid.([100, 200, 300], [100, 1, 1], 8)
    dst = grid.([100, 200, 300], [1, 10, 300], 8)
    plan = Plan.rechunk(src, dst, 600_000)
    # target chunks grown along the axes from the last: 300 whole, then 4 x 10 = 40 (12,000)
    assert plan.write == [1, 40, 300]
    # source chunks grown the same way (the last axis first), no larger than the write chunks
    assert plan.read == [100, 1, 125]
    assert plan.intermediate == [1, 1, 125]
    assert plan.block1 == [100, 1, 1] and plan.block2 == [1, 4, 1]

    # a chunk larger than the budget stays as it is
    big = Plan.rechunk(grid.([10, 10], [10, 10], 1), grid.([10, 10], [5, 5], 1), 60)
    assert big.read == [10, 10] and big.write == [5, 5] and big.intermediate == [5, 5]
  end

  defp rechunk_dirs(dir),
    do: dir |> File.ls!() |> Enum.filter(&String.starts_with?(&1, ".exzarr_rechunk_"))

  test "the report counts failed attempts and retries", %{tmp_dir: dir} do
    src = array(dir, "src.zarr", {40, 30}, {8, 10}, pattern(1200))
    dst = array(dir, "dst.zarr", {40, 30}, {16, 7})
    seen = :ets.new(:seen, [:public, :set])

    # every unit fails on its first attempt
    flaky = fn data, %{start: start} ->
      if :ets.insert_new(seen, {start}), do: raise("first try"), else: data
    end

    me = self()

    assert {:ok, report} =
             Jobs.map_blocks(src, dst, flaky, retries: 1, on_progress: &send(me, {:p, &1}))

    assert report.units == 15 and report.failed == 15 and report.retries == 15
    assert report.nodes_lost == []
    assert all(dst) == pattern(1200)
    assert_received {:p, %{done: 15, failed: 15}}
  end
end
