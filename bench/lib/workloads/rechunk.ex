defmodule ExZarr.Bench.Workloads.Rechunk do
  @moduledoc """
  Workload 12: rechunk a float32 square array from row chunks to column chunks (zstd 1) with
  `ExZarr.copy/3`, on this node and on 2 `:peer` nodes (separate VMs on this machine, over
  real distribution), with the direct plan (`block: :auto`: units of target chunks that decode
  each source chunk as few times as the default budget allows) and under `max_memory:`
  (rechunker's plan through an intermediate array).
  The library peers do a plain copy, reading the whole source and writing it with the new
  chunks (memory: the whole array). Then `ExZarr.Bench.Workloads.RechunkEngines`: the same
  rechunk and a map_blocks against Dask and Cubed, peak memory per process and a worker
  killed mid-job. The default profile is 16 MB; `--large` is the issue's 2 GB.
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{MinIO, Table, Workload}
  alias ExZarr.Bench.Workloads.RechunkEngines

  @profiles %{
    default: %{n: 2048, rows: 64, runs: 3},
    quick: %{n: 1024, rows: 64, runs: 1},
    smoke: %{n: 128, rows: 16, runs: 1}
  }

  @ops [
    {"direct, 1 node", :direct, 1},
    {"direct, 2 :peer nodes", :direct, 2},
    {"max_memory (intermediate), 1 node", :bounded, 1},
    {"max_memory (intermediate), 2 :peer nodes", :bounded, 2}
  ]

  @impl true
  def id, do: 12

  @impl true
  def title, do: "Rechunk rows to columns with ExZarr.copy/3 on 1 and 2 BEAM nodes"

  # `--large`: the issue's 2 GB (23168^2 float32, 2.15e9 bytes)
  @large %{n: 23_168, rows: 64, runs: 1}

  @impl true
  def datasets(ctx), do: [dataset(config(ctx).n)]

  defp config(%{large: true}), do: @large
  defp config(ctx), do: Workload.config(ctx, @profiles)

  defp dataset(n),
    do: %{name: "field2d_f32_#{n}", kind: "field", shape: [n, n], dtype: "float32", seed: 10}

  @impl true
  def run(ctx),
    do: Workload.requiring("zstd", fn -> do_run(ctx, config(ctx)) end)

  defp do_run(ctx, conf) do
    n = conf.n
    bytes = n * n * 4

    task = %{
      workload: "rechunk",
      raw: Map.fetch!(ctx.data, dataset(n).name),
      shape: [n, n],
      dtype: "float32",
      source_chunks: [conf.rows, n],
      target_chunks: [n, conf.rows],
      compressor: %{id: "zstd", level: 1},
      # 16 target chunks: too little for a direct unit (which counts the whole source twice),
      # enough for rechunker's plan
      max_memory: 16 * n * conf.rows * 4,
      runs: conf.runs
    }

    {load, _} = System.cmd("uptime", [])
    results = Workload.each_lib(ctx, "rechunk", task, &exzarr(&1))
    mb = Table.format(bytes / 1.0e6)

    table =
      Table.new(
        "12. rechunk #{mb} MB float32 {#{conf.rows}, #{n}} -> {#{n}, #{conf.rows}} chunks, zstd 1 " <>
          "(peers: plain copy)",
        ctx.libs,
        unit: "ms"
      )

    table =
      Enum.reduce(@ops, table, fn {label, _plan, _nodes}, t ->
        cells =
          Map.new(results, fn {lib, r} ->
            op = if lib == "ExZarr", do: label, else: "plain copy"
            {lib, Workload.median_ms(Workload.find(r, "rechunk", op))}
          end)

        Table.add_row(t, label, cells)
      end)

    table
    |> note_digests(results)
    |> Table.add_note(scaling(results["ExZarr"]))
    |> Table.add_note(plans(results["ExZarr"]))
    |> Table.add_note(
      "max_memory: #{Table.format(task.max_memory / 1.0e6)} MB per node; load: #{String.trim(load)}"
    )
    |> List.wrap()
    |> Kernel.++(RechunkEngines.tables(ctx, task, results["ExZarr"], "#{mb} MB float32, zstd 1"))
    |> Kernel.++(on_minio(ctx, task, "#{mb} MB float32, zstd 1, on MinIO"))
  end

  # The ExZarr.Jobs, Dask and Cubed tables again with every store in a MinIO bucket (one
  # round; none when MinIO is not installed).
  defp on_minio(ctx, task, what) do
    case MinIO.start(Path.join(ctx.tmp, "minio-rechunk"), "rechunk") do
      {:ok, server} ->
        ctx.log.("  on MinIO at #{server.endpoint}")

        try do
          task = Map.put(task, :store_root, Path.join(ctx.store_root, "rechunk-minio"))

          exzarr =
            Workload.run_one(ctx, "ExZarr", Map.put(task, :prefix, "exzarr"), &exzarr(&1, server))

          task = Map.merge(task, %{s3: MinIO.peer_info(server), prefix: "python"})
          RechunkEngines.tables(ctx, task, exzarr, what)
        after
          MinIO.stop(server)
        end

      {:error, reason} ->
        ctx.log.("  not on MinIO: #{reason}")
        []
    end
  end

  defp note_digests(table, results) do
    digests =
      for {lib, r} <- results,
          %{rows: rows} <- [r],
          row <- rows,
          row.group == "rechunk",
          row.digest,
          do: {lib, row.digest}

    case digests |> Enum.map(&elem(&1, 1)) |> Enum.uniq() do
      [_] -> table
      [] -> table
      _ -> Table.add_note(table, "**DATA MISMATCH**: #{inspect(digests)}")
    end
  end

  # The plan each copy row took (`copy_with_report/3`): without `max_memory:`, `block: :auto`
  # goes through the intermediate array when direct units would re-read the source.
  defp plans(%{rows: rows}) do
    taken = for %{group: "rechunk", plan: plan, op: op} <- rows, do: "#{op}: #{plan}"
    "Plan taken by ExZarr.copy/3: " <> Enum.join(taken, "; ")
  end

  defp plans(_error), do: ""

  # 2 nodes against 1 for each plan: speedup and efficiency (speedup / nodes).
  defp scaling(%{rows: _} = result) do
    text =
      for plan <- ["direct", "max_memory (intermediate)"],
          one = Workload.median(Workload.find(result, "rechunk", "#{plan}, 1 node")),
          two = Workload.median(Workload.find(result, "rechunk", "#{plan}, 2 :peer nodes")) do
        "#{plan}: 2 nodes #{Table.format(one / two)}x the speed of 1 (efficiency " <>
          "#{Table.format(one / two / 2)}; 2 shared cores bound it)"
      end

    Enum.join(text, "; ")
  end

  defp scaling(_error), do: "ExZarr failed: no scaling figures"

  # -- ExZarr side (mirrors `rechunk` and `engines` in bench/peers/peer.py) ---------------------

  # on the filesystem (`server` nil) or on a MinIO server
  defp exzarr(task, server \\ nil) do
    task = Map.put(task, :server, server)
    src = create(store(task, "source"), task, task.source_chunks)
    # in a process of its own, so that the source data is gone before the rows measure memory
    Task.async(fn -> :ok = ExZarr.Array.set_slice(src, File.read!(task.raw)) end)
    |> Task.await(:infinity)

    distributed = Node.alive?()
    peers = start_peers(2)

    try do
      rows = Enum.map(@ops, &op_row(&1, src, task, Enum.map(peers, fn p -> elem(p, 1) end)))

      map_rows =
        Enum.map([1, 2], &map_row(&1, src, task, Enum.map(peers, fn p -> elem(p, 1) end)))

      rows = rows ++ map_rows
      %{rows: rows ++ kill_rows(src, task, rows)}
    after
      Enum.each(peers, &stop_peer/1)
      unless distributed, do: undistribute()
      File.rm_rf!(task.store_root)
    end
  end

  defp op_row({label, plan, nodes}, src, task, peer_nodes) do
    opts =
      [nodes: if(nodes == 1, do: [node()], else: peer_nodes)] ++
        if plan == :bounded, do: [max_memory: task.max_memory], else: []

    job = fn dst -> copy(src, dst, task, opts) end
    measured_row("rechunk", label, task, job, if(nodes == 1, do: [], else: peer_nodes))
  end

  defp map_row(nodes, src, task, peer_nodes) do
    {label, on, peers} =
      if nodes == 1,
        do: {"map_blocks, 1 node", [node()], []},
        else: {"map_blocks, 2 :peer nodes", peer_nodes, peer_nodes}

    job = fn dst -> map_blocks(src, dst, task, on) end
    measured_row("map_blocks", label, task, job, peers)
  end

  # A store's options: a folder under the task's store_root (removed first), or a fresh prefix
  # of the MinIO bucket.
  defp store(%{server: nil} = task, name) do
    path = Path.join(task.store_root, name)
    File.rm_rf!(path)
    [storage: :filesystem, path: path]
  end

  defp store(%{server: server} = task, name) do
    prefix = "#{task.prefix}/#{name}-#{System.unique_integer([:positive])}"
    [storage: :s3] ++ MinIO.store_opts(server, prefix)
  end

  defp create(store, task, chunks),
    do: Workload.create(store[:path], task.shape, chunks, task.dtype, task.compressor, store)

  defp read_digest(store), do: Workload.digest([ExZarr.Array.get_slice!(ExZarr.open!(store))])

  defp copy(src, dst, task, opts) do
    target = dst ++ [chunks: List.to_tuple(task.target_chunks), compressor: task.compressor]

    {:ok, _, report} = ExZarr.Jobs.copy_with_report(src, target, opts)
    report
  end

  defp map_blocks(src, dst, task, nodes) do
    dst = create(dst, task, task.source_chunks)
    {:ok, report} = ExZarr.Jobs.map_blocks(src, dst, {__MODULE__, :affine, []}, nodes: nodes)
    report
  end

  @doc false
  # the per-element expression of the map_blocks rows, x * 2 + 1 (float32 little-endian); a
  # public function of a compiled module, so that the peers (same code path) load it too
  def affine(data, _box),
    do: for(<<x::float-32-little <- data>>, into: <<>>, do: <<x * 2.0 + 1.0::float-32-little>>)

  # One untimed warm-up (its output digested), then `runs` timed runs, each on a fresh target,
  # with the peak RSS of this VM and of the `peers` reset before and read after (the largest
  # over the runs, per process: this VM first).
  defp measured_row(group, label, task, job, peers) do
    vms = [node() | peers]

    runs =
      for _ <- 0..task.runs do
        dst = store(task, "target")
        Enum.each(vms, &:erpc.call(&1, File, :write!, ["/proc/self/clear_refs", "5"]))
        {seconds, report} = Workload.timed(fn -> job.(dst) end)
        {seconds, Enum.map(vms, &vm_hwm/1), dst, report[:plan]}
      end

    [{_, _, warm_up, _} | timed] = runs
    digest = read_digest(warm_up)
    peak = timed |> Enum.map(&elem(&1, 1)) |> Enum.zip_with(&Enum.max/1)

    %{
      group: group,
      op: label,
      samples: Enum.map(timed, &elem(&1, 0)),
      digest: digest,
      stored_bytes: nil,
      peak: peak,
      plan: timed |> Enum.map(&elem(&1, 3)) |> Enum.uniq() |> Enum.join("/")
    }
  end

  # the peak resident set (VmHWM) of a node's OS process, in bytes
  defp vm_hwm(node) do
    status = :erpc.call(node, File, :read!, ["/proc/self/status"])
    [_, kb] = Regex.run(~r/VmHWM:\s+(\d+) kB/, status)
    String.to_integer(kb) * 1024
  end

  # The 2-node rechunk and map_blocks with one peer halted (`erlang:halt/1`, as a kill) at
  # half the undisturbed median: ExZarr hands its units to the other peer. One run each, on
  # a fresh pair of peers, stopped afterwards.
  defp kill_rows(src, task, rows) do
    [
      {"rechunk", "direct, 2 :peer nodes",
       fn dst, nodes -> copy(src, dst, task, nodes: nodes) end},
      {"map_blocks", "map_blocks, 2 :peer nodes",
       fn dst, nodes -> map_blocks(src, dst, task, nodes) end}
    ]
    |> Enum.map(fn {group, label, job} ->
      healthy = Workload.median(Enum.find(rows, &(&1.op == label)))
      kill_row(group, label, job, task, round(healthy * 500))
    end)
  end

  defp kill_row(group, label, job, task, after_ms) do
    dst = store(task, "target")
    pair = start_peers(2)
    [{_, victim}, _] = pair
    nodes = Enum.map(pair, &elem(&1, 1))

    try do
      killer =
        spawn(fn ->
          Process.sleep(after_ms)
          :erpc.cast(victim, :erlang, :halt, [137])
        end)

      {seconds, report} = Workload.timed(fn -> job.(dst, nodes) end)
      Process.exit(killer, :kill)
      digest = read_digest(dst)

      %{
        group: group,
        op: label <> ", 1 killed",
        samples: [seconds],
        digest: digest,
        stored_bytes: nil,
        retries: report.retries,
        nodes_lost: length(report.nodes_lost),
        killed_after: after_ms / 1000
      }
    after
      Enum.each(pair, &stop_peer/1)
    end
  end

  # `Node.stop/0` returns before the runtime drops the node's name; whoever runs next in this
  # VM (the smoke test's neighbours) must find it as it was
  defp undistribute do
    :ok = Node.stop()
    wait_undistributed()
  end

  defp wait_undistributed do
    unless node() == :nonode@nohost do
      Process.sleep(10)
      wait_undistributed()
    end
  end

  defp stop_peer({pid, _node}) do
    :peer.stop(pid)
  catch
    :exit, _ -> :ok
  end

  # `count` :peer nodes running ExZarr (this node becomes distributed if it is not).
  defp start_peers(count) do
    unless Node.alive?() do
      {_, 0} = System.cmd("epmd", ["-daemon"])
      {:ok, _} = Node.start(:"bench_#{System.unique_integer([:positive])}@127.0.0.1")
    end

    # a peer's output goes to its starter's group leader, where Elixir sets options at boot:
    # the VM's own console does take them, a captured device (the smoke test) does not
    leader = Process.group_leader()
    Process.group_leader(self(), Process.whereis(:user))

    try do
      Enum.map(1..count, &start_peer/1)
    after
      Process.group_leader(self(), leader)
    end
  end

  defp start_peer(i) do
    {:ok, pid, node} =
      :peer.start(%{
        name: :"bench_peer#{i}_#{System.unique_integer([:positive])}",
        host: ~c"127.0.0.1",
        # peers do not connect to each other: killing one (the fault-tolerance rows) must not
        # make `global` cut the survivors off
        args: [~c"-connect_all", ~c"false"]
      })

    :ok = :erpc.call(node, :code, :add_paths, [:code.get_path()])
    {:ok, _} = :erpc.call(node, Application, :ensure_all_started, [:ex_zarr])
    {pid, node}
  end
end
