defmodule ExZarr.ArrayWritersTest do
  @moduledoc """
  `ExZarr.Array.set_slice/3` and `ExZarr.Array.append/4` from many processes in separate OS
  processes (BEAMs started with `elixir`, connected to nothing): the writers of disjoint rows
  of one chunk, or of one shard, lose no row; concurrent appends each land once. Only the
  store's conditional writes keep the OS processes apart.
  """
  use ExUnit.Case, async: false
  @moduletag timeout: 900_000

  alias ExZarr.Array
  alias ExZarr.Test.{ChildBeam, Peers, WriterStores}

  # argv: the Base64 of {open options, writer, processes, writes per process, barrier
  # folder, writers, mode}. Writer `w`'s process `p` writes ids (w * procs + p) * per_proc + i:
  # in mode :rows the row of that index, in mode :append a block of two rows; all elements
  # are id + 1.
  @child ~S"""
  [arg] = System.argv()

  {opts, writer, procs, per_proc, barrier, writers, mode} =
    arg |> Base.decode64!() |> :erlang.binary_to_term()

  {:ok, a} = ExZarr.open(opts)
  ExZarr.Test.ChildBeam.barrier(barrier, writer, writers)

  for p <- 0..(procs - 1) do
    Task.async(fn ->
      for i <- 0..(per_proc - 1) do
        id = (writer * procs + p) * per_proc + i
        value = <<id + 1::little-32>>

        case mode do
          :rows ->
            :ok = ExZarr.Array.set_slice(a, :binary.copy(value, 4), start: {id, 0}, stop: {id + 1, 4})

          :append ->
            {:ok, _} = ExZarr.Array.append(a, :binary.copy(value, 8))
        end
      end
    end)
  end
  |> Enum.each(&Task.await(&1, :infinity))
  """

  @writers 3
  @procs 4

  defp run_writers(opts, per_proc, mode) do
    barrier = ExZarr.Test.Tmp.path("exzarr-barrier-")
    File.mkdir_p!(barrier)

    try do
      0..(@writers - 1)
      |> Task.async_stream(
        fn w ->
          arg = {opts, w, @procs, per_proc, barrier, @writers, mode}
          ChildBeam.run(@child, [Base.encode64(:erlang.term_to_binary(arg))])
        end,
        max_concurrency: @writers,
        timeout: :infinity
      )
      |> Enum.each(fn {:ok, {out, status}} -> assert status == 0, out end)
    after
      File.rm_rf!(barrier)
    end
  end

  # The ids whose row (mode :rows) does not hold id + 1.
  defp lost_rows(opts, n) do
    {:ok, a} = ExZarr.open(opts)
    {:ok, data} = Array.get_slice(a)

    for id <- 0..(n - 1),
        binary_part(data, id * 16, 16) != :binary.copy(<<id + 1::little-32>>, 4),
        do: id
  end

  # An array of `rows` rows as one chunk, and as one shard of 4-row chunks, each written by
  # `write.(opts)`; -> the rows lost of each.
  defp each_layout(store_opts, rows, write) do
    for {name, layout} <- [chunk: [chunks: {rows, 4}], shard: [chunks: {4, 4}, shards: {rows, 4}]] do
      opts = store_opts ++ [prefix: "#{name}"]
      {:ok, _} = ExZarr.create(opts ++ [shape: {rows, 4}, dtype: :int32] ++ layout)
      write.(opts)
      {name, lost_rows(opts, rows)}
    end
  end

  # Writers of disjoint rows of one chunk and of one shard in @writers OS processes; -> the
  # rows lost of each.
  defp rows_experiment(store_opts, per_proc),
    do: each_layout(store_opts, @writers * @procs * per_proc, &run_writers(&1, per_proc, :rows))

  # The same with @procs processes on each of `nodes`, called through :erpc (`node()` itself
  # works too), each with a handle of its own node (whose caches live there).
  defp node_rows_experiment(store_opts, nodes, per_proc) do
    each_layout(store_opts, length(nodes) * @procs * per_proc, fn opts ->
      nodes
      |> Enum.with_index()
      |> Enum.flat_map(fn {node, w} ->
        for p <- 0..(@procs - 1), do: {node, w * @procs + p}
      end)
      |> Task.async_stream(
        fn {node, first} ->
          {:ok, a} = :erpc.call(node, ExZarr, :open, [opts])

          for id <- (first * per_proc)..(first * per_proc + per_proc - 1) do
            value = :binary.copy(<<id + 1::little-32>>, 4)
            slice = [start: {id, 0}, stop: {id + 1, 4}]
            :ok = :erpc.call(node, Array, :set_slice, [a, value, slice])
          end
        end,
        max_concurrency: length(nodes) * @procs,
        timeout: :infinity
      )
      |> Stream.run()
    end)
  end

  # Concurrent appends of two-row blocks; asserts that each block is present once.
  defp append_experiment(store_opts, per_proc) do
    opts = store_opts ++ [prefix: "appended"]
    {:ok, _} = ExZarr.create(opts ++ [shape: {0, 4}, chunks: {3, 4}, dtype: :int32])
    run_writers(opts, per_proc, :append)
    blocks = @writers * @procs * per_proc
    {:ok, a} = ExZarr.open(opts)
    assert a.metadata.shape == {2 * blocks, 4}
    {:ok, data} = Array.get_slice(a)

    ids =
      for <<block::binary-size(32) <- data>> do
        <<id::little-32, _::binary>> = block
        assert block == :binary.copy(<<id::little-32>>, 8)
        id - 1
      end

    assert Enum.sort(ids) == Enum.to_list(0..(blocks - 1))
  end

  @tag :tmp_dir
  test "filesystem: disjoint rows of one chunk and one shard from 3 OS processes, none lost",
       ctx do
    opts = [path: Path.join(ctx.tmp_dir, "a.zarr")]
    assert rows_experiment(opts, 6) == [chunk: [], shard: []]
  end

  @tag :tmp_dir
  test "filesystem: appends from 3 OS processes each land once", ctx do
    append_experiment([path: Path.join(ctx.tmp_dir, "a.zarr")], 4)
  end

  for {kind, name} <- [
        s3: "S3 (MinIO)",
        azure: "Azure (Azurite)",
        gcs: "GCS (fake-gcs-server)",
        mongo_gridfs: "GridFS (FerretDB)"
      ] do
    test "#{name}, 5 ms latency: rows of one chunk and one shard, and appends, none lost" do
      case WriterStores.start(unquote(kind), "arraywriters", "a.zarr", 5) do
        {:ok, opts} ->
          opts = [storage: unquote(kind)] ++ opts
          assert rows_experiment(opts, 2) == [chunk: [], shard: []]
          append_experiment(opts, 2)

        {:skip, reason} ->
          IO.puts("skipped: #{reason}")
      end
    end
  end

  test "memory: disjoint rows of one chunk and one shard from 12 processes, none lost" do
    {:ok, store} = ExZarr.Storage.new(:memory, owner: self())
    nodes = List.duplicate(node(), @writers)
    assert node_rows_experiment([storage: store], nodes, 6) == [chunk: [], shard: []]
  end

  # Starts `count` connected peer nodes with ExZarr loaded (this node made distributed first),
  # stopped when the test ends, and this node as it was then.
  defp start_peers(count) do
    Peers.distribute!("exzarr_writers")
    paths = Enum.flat_map(:code.get_path(), &[~c"-pa", &1])

    for n <- 1..count do
      name = :"writer#{n}_#{System.unique_integer([:positive])}"

      # (linked: the peer stops with the test's process)
      {:ok, _pid, node} =
        :peer.start_link(%{name: name, host: ~c"127.0.0.1", longnames: true, args: paths})

      {:ok, _} = :erpc.call(node, Application, :ensure_all_started, [:ex_zarr])
      node
    end
  end

  @tag :tmp_dir
  test "filesystem: disjoint rows of one chunk and one shard from 3 connected peer nodes", ctx do
    opts = [path: Path.join(ctx.tmp_dir, "p.zarr")]
    assert node_rows_experiment(opts, start_peers(@writers), 4) == [chunk: [], shard: []]
  end

  test "Mnesia: disjoint rows of one chunk and one shard from 3 connected peer nodes" do
    nodes = start_peers(@writers)
    # Mnesia again, under this node's distributed name, and the peers joined to it (the table
    # has its one copy here: the peers' reads and transactions go to this node)
    :stopped = :mnesia.stop()
    :ok = :mnesia.start()
    on_exit(fn -> :mnesia.stop() end)

    for node <- nodes do
      :ok = :erpc.call(node, :mnesia, :start, [])
      {:ok, [_]} = :erpc.call(node, :mnesia, :change_config, [:extra_db_nodes, [node()]])
    end

    opts = [storage: :mnesia, table_name: :array_writers_test]
    assert node_rows_experiment(opts, nodes, 4) == [chunk: [], shard: []]
  end

  describe "stores without conditional writes" do
    setup do
      {:ok, store} = ExZarr.Storage.new(ExZarr.Test.PlainStore, [])
      {:ok, a} = ExZarr.create(storage: store, shape: {4, 4}, chunks: {4, 4}, dtype: :uint8)
      %{a: a, store: store}
    end

    test "refuse partial writes, take whole-chunk writes", %{a: a} do
      assert Array.set_slice(a, <<1, 2, 3, 4>>, start: {0, 0}, stop: {1, 4}) ==
               {:error, {:conditional_writes_unsupported, ExZarr.Test.PlainStore}}

      assert Array.set_slice(a, :binary.copy(<<5>>, 16)) == :ok
      assert Array.get_slice(a) == {:ok, :binary.copy(<<5>>, 16)}
    end

    test "take partial writes with single_writer: true", %{store: store} do
      {:ok, a} = ExZarr.open(storage: store, single_writer: true)
      assert a.single_writer
      assert Array.set_slice(a, <<1, 2, 3, 4>>, start: {1, 0}, stop: {2, 4}) == :ok

      assert Array.get_slice(a, start: {0, 0}, stop: {2, 4}) ==
               {:ok, <<0, 0, 0, 0, 1, 2, 3, 4>>}
    end

    test "single_writer is validated", %{store: store} do
      assert ExZarr.open(storage: store, single_writer: :yes) ==
               {:error, {:invalid_option, :single_writer, :yes}}
    end
  end
end
