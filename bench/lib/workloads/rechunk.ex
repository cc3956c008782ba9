defmodule ExZarr.Bench.Workloads.Rechunk do
  @moduledoc """
  Workload 12: rechunk a float32 square array from row chunks to column chunks (zstd 1) with
  `ExZarr.copy/3`, on this node and on 2 `:peer` nodes (separate VMs on this machine, over
  real distribution), with the direct plan (`block: :auto`: units of target chunks that decode
  each source chunk as few times as the default budget allows) and under `max_memory:`
  (rechunker's plan through an intermediate array).
  The peers have no Dask, rechunker or Cubed in the venv: they do a plain copy, reading the
  whole source and writing it with the new chunks (memory: the whole array).
  """

  @behaviour ExZarr.Bench.Workload

  alias ExZarr.Bench.{Table, Workload}

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

  @impl true
  def datasets(ctx), do: [dataset(Workload.config(ctx, @profiles).n)]

  defp dataset(n),
    do: %{name: "field2d_f32_#{n}", kind: "field", shape: [n, n], dtype: "float32", seed: 10}

  @impl true
  def run(ctx),
    do: Workload.requiring("zstd", fn -> do_run(ctx, Workload.config(ctx, @profiles)) end)

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
    results = Workload.each_lib(ctx, "rechunk", task, &exzarr/1)
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
    |> Table.add_note(
      "max_memory: #{Table.format(task.max_memory / 1.0e6)} MB per node; load: #{String.trim(load)}"
    )
    |> List.wrap()
  end

  defp note_digests(table, results) do
    digests =
      for {lib, r} <- results,
          %{rows: rows} <- [r],
          row <- rows,
          row.digest,
          do: {lib, row.digest}

    case digests |> Enum.map(&elem(&1, 1)) |> Enum.uniq() do
      [_] -> table
      [] -> table
      _ -> Table.add_note(table, "**DATA MISMATCH**: #{inspect(digests)}")
    end
  end

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

  # -- ExZarr side (mirrors `rechunk` in bench/peers/peer.py) -----------------------------------

  defp exzarr(task) do
    src_path = Path.join(task.store_root, "source")
    dst_path = Path.join(task.store_root, "target")
    src = Workload.create(src_path, task.shape, task.source_chunks, task.dtype, task.compressor)
    :ok = ExZarr.Array.set_slice(src, File.read!(task.raw))
    distributed = Node.alive?()
    peers = start_peers(2)
    peer_nodes = Enum.map(peers, &elem(&1, 1))

    try do
      rows =
        Enum.map(@ops, fn {label, plan, nodes} ->
          opts =
            [nodes: if(nodes == 1, do: [node()], else: peer_nodes)] ++
              if plan == :bounded, do: [max_memory: task.max_memory], else: []

          target = [
            path: dst_path,
            chunks: List.to_tuple(task.target_chunks),
            compressor: task.compressor
          ]

          copy = fn -> {:ok, _, %{plan: _}} = ExZarr.Jobs.copy_with_report(src, target, opts) end
          read = fn -> [ExZarr.Array.get_slice!(ExZarr.open!(path: dst_path))] end

          {samples, digest} =
            Workload.measure(task.runs, copy,
              before: fn -> File.rm_rf!(dst_path) end,
              check: fn _ -> Workload.digest(read.()) end
            )

          %{group: "rechunk", op: label, samples: samples, digest: digest, stored_bytes: nil}
        end)

      %{rows: rows}
    after
      Enum.each(peers, &:peer.stop(elem(&1, 0)))
      unless distributed, do: Node.stop()
      File.rm_rf!(task.store_root)
    end
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
        host: ~c"127.0.0.1"
      })

    :ok = :erpc.call(node, :code, :add_paths, [:code.get_path()])
    {:ok, _} = :erpc.call(node, Application, :ensure_all_started, [:ex_zarr])
    {pid, node}
  end
end
