defmodule ExZarr.JobsTest do
  use ExUnit.Case, async: false

  alias ExZarr.Array
  alias ExZarr.Jobs
  alias ExZarr.Test.JobsFuns

  @moduletag :tmp_dir

  defp pattern(n), do: for(i <- 0..(n - 1), into: <<>>, do: <<rem(i * 7 + div(i, 13), 256)>>)

  defp source(dir, opts \\ []) do
    opts =
      Keyword.merge(
        [shape: {40, 30}, chunks: {8, 10}, dtype: :uint8, path: Path.join(dir, "src.zarr")],
        opts
      )

    {:ok, a} = ExZarr.create(opts)
    :ok = Array.set_slice(a, pattern(1200), start: {0, 0}, stop: {40, 30})
    a
  end

  defp target(dir, name, opts \\ []) do
    opts =
      Keyword.merge(
        [shape: {40, 30}, chunks: {16, 7}, dtype: :uint8, path: Path.join(dir, name)],
        opts
      )

    {:ok, a} = ExZarr.create(opts)
    a
  end

  defp plus(n), do: for(<<b <- pattern(1200)>>, into: <<>>, do: <<rem(b + n, 256)>>)

  defp journal(array) do
    {:ok, keys} = ExZarr.Storage.list(array.storage, ".exzarr_jobs/")
    keys
  end

  defp wait_until(check) do
    unless check.() do
      Process.sleep(10)
      wait_until(check)
    end
  end

  # Halts a peer node abruptly (no cleanup) and waits until it is down.
  defp halt(node) do
    Node.monitor(node, true)
    :erpc.cast(node, :erlang, :halt, [])
    assert_receive {:nodedown, ^node}, 10_000
  end

  defp all(a), do: Array.get_slice!(a, start: {0, 0}, stop: a.metadata.shape)

  # A 512 x 512 uint8 array of random bytes in row chunks. To column chunks, a unit of one
  # target chunk decodes the whole source; max_concurrency: 1024 leaves each unit 256 KiB of
  # the 256 MiB per node `block: :auto` plans for, too little for a larger block: rechunker's
  # plan.
  defp rows(dir) do
    data = :crypto.strong_rand_bytes(512 * 512)

    {:ok, a} =
      ExZarr.create(
        path: Path.join(dir, "rows.zarr"),
        shape: {512, 512},
        chunks: {1, 512},
        dtype: :uint8
      )

    :ok = Array.set_slice(a, data, start: {0, 0}, stop: {512, 512})
    {a, data}
  end

  # The intermediate arrays' folders below the store at `root`, at any depth.
  defp temp_dirs(root),
    do: Path.wildcard(Path.join(root, "**/.exzarr_rechunk_*"), match_dot: true)

  # Those in this node's temporary folder.
  defp shared_temp_dirs,
    do: Path.wildcard(Path.join(System.tmp_dir!(), ".exzarr_rechunk_*"), match_dot: true)

  defp members(root) do
    {:ok, group} = ExZarr.open_group(path: root)
    {:ok, members} = ExZarr.Group.members(group, recursive: true)
    Enum.map(members, &elem(&1, 0))
  end

  defp python_members(root) do
    script = """
    import sys, zarr
    g = zarr.open_group(sys.argv[1], mode="r")
    print(",".join(sorted(name for name, _ in g.members(max_depth=None))))
    """

    String.trim(ExZarr.Test.Python.run!(script, [root]))
  end

  describe "on this node" do
    test "an array with an empty axis beside a huge one is no work at all" do
      {:ok, a} = ExZarr.create(dtype: :uint8, shape: {4_294_967_296, 0}, chunks: {1, 1})
      {:ok, b} = ExZarr.create(dtype: :uint8, shape: {4_294_967_296, 0}, chunks: {1, 1})
      assert {:ok, %{units: 0}} = ExZarr.Jobs.map_blocks(a, b, fn data, _box -> data end, [])
      assert {:ok, nil} = ExZarr.Jobs.reduce_blocks(a, fn _data, _box -> 1 end, &+/2, [])
    end

    test "map_blocks writes fun's result over each block of target chunks", %{tmp_dir: dir} do
      src = source(dir)
      dst = target(dir, "dst.zarr")
      assert {:ok, report} = Jobs.map_blocks(src, dst, {JobsFuns, :add, [3]}, [])
      # target chunks {16, 7} over {40, 30}: 3 x 5 units
      assert report.units == 15
      assert report.retries == 0
      assert report.by_node == %{node() => 15}
      assert report.bytes_read == 1200 and report.bytes_written == 1200
      assert all(dst) == plus(3)

      dst2 = target(dir, "dst2.zarr")
      fun = fn data, %{start: _, stop: _} -> JobsFuns.add(data, nil, 5) end
      assert {:ok, %{units: 4}} = Jobs.map_blocks(src, dst2, fun, block: {2, 3})
      assert all(dst2) == plus(5)
    end

    test "reduce_blocks folds the values of every block", %{tmp_dir: dir} do
      src = source(dir)
      expected = for <<b <- pattern(1200)>>, reduce: 0, do: (acc -> acc + b)
      assert {:ok, ^expected} = Jobs.reduce_blocks(src, {JobsFuns, :sum, []}, &+/2, [])
      assert {:ok, ^expected} = Jobs.reduce_blocks(src, &JobsFuns.sum/2, &+/2, block: 3)

      assert {:ok, 15} =
               Jobs.reduce_blocks(src, fn _data, _box -> 1 end, &+/2, max_concurrency: 5)
    end

    test "copy rechunks v2 to v3 and to sharded arrays, with attributes", %{tmp_dir: dir} do
      src = source(dir, zarr_format: 2, compressor: %{id: "zlib", level: 1})
      {:ok, src} = Array.set_attributes(src, %{"units" => "m"})

      assert {:ok, _} =
               ExZarr.copy(src, path: Path.join(dir, "v3.zarr"), zarr_format: 3, chunks: {40, 3})

      {:ok, v3} = ExZarr.open(path: Path.join(dir, "v3.zarr"))
      assert v3.metadata.zarr_format == 3 and v3.metadata.chunks == {40, 3}
      assert Array.attributes(v3) == %{"units" => "m"}
      assert all(v3) == pattern(1200)

      assert {:ok, _} =
               ExZarr.copy(
                 v3,
                 [path: Path.join(dir, "sh.zarr"), chunks: {5, 5}, shards: {20, 10}],
                 max_concurrency: 3
               )

      {:ok, sharded} = ExZarr.open(path: Path.join(dir, "sh.zarr"))
      assert sharded.metadata.chunks == {20, 10}
      assert all(sharded) == pattern(1200)

      # same format, no codec override: the codecs are carried over, also when rechunking
      assert {:ok, same} = ExZarr.copy(src, path: Path.join(dir, "same.zarr"), chunks: {7, 7})
      assert same.metadata.codecs == src.metadata.codecs
      assert all(same) == pattern(1200)

      # a sharded source rechunked gets default codecs, not a stale sharding configuration
      assert {:ok, flat} = ExZarr.copy(sharded, path: Path.join(dir, "flat.zarr"), chunks: {6, 6})
      assert flat.metadata.chunks == {6, 6}
      refute Enum.any?(flat.metadata.codecs, &(&1.name == "sharding_indexed"))
      assert all(flat) == pattern(1200)

      # zarr-python reads the copies back identically
      script = """
      import sys, zarr, numpy as np
      for p in sys.argv[1:]:
          a = zarr.open_array(p, mode="r")
          sys.stdout.write(p.rsplit("/", 1)[1] + " " + np.asarray(a[:]).tobytes().hex() + "\\n")
      """

      names = ~w(v3.zarr sh.zarr same.zarr flat.zarr)
      out = ExZarr.Test.Python.run!(script, Enum.map(names, &Path.join(dir, &1)))
      hex = Base.encode16(pattern(1200), case: :lower)
      assert String.split(out, "\n", trim: true) == Enum.map(names, &"#{&1} #{hex}")
    end

    test "copy_group copies the hierarchy: groups, attributes, arrays", %{tmp_dir: dir} do
      {:ok, g} = ExZarr.create_group(path: Path.join(dir, "g.zarr"), attributes: %{"t" => 1})
      {:ok, sub} = ExZarr.Group.create_group(g, "sub", attributes: %{"s" => 2})

      {:ok, a} =
        ExZarr.Group.create_array(sub, "a", shape: {40, 30}, chunks: {8, 10}, dtype: :uint8)

      :ok = Array.set_slice(a, pattern(1200))
      {:ok, b} = ExZarr.Group.create_array(g, "b", shape: {5}, chunks: {2}, dtype: :int32)

      :ok =
        Array.set_slice(
          b,
          <<1::32-little, 2::32-little, 3::32-little, 4::32-little, 5::32-little>>
        )

      out = Path.join(dir, "out.zarr")

      assert {:ok, root} =
               ExZarr.copy_group(g, [path: out, zarr_format: 2, compressor: %{id: "zlib"}],
                 max_concurrency: 3
               )

      assert ExZarr.Group.attributes(root) == %{"t" => 1}
      {:ok, copy} = ExZarr.open_group(path: out)
      assert copy.metadata.zarr_format == 2
      assert {:ok, %ExZarr.Group{} = sub2} = ExZarr.Group.open(copy, "sub")
      assert ExZarr.Group.attributes(sub2) == %{"s" => 2}
      assert {:ok, a2} = ExZarr.Group.open(copy, "sub/a")
      assert all(a2) == pattern(1200) and a2.metadata.zarr_format == 2
      assert {:ok, b2} = ExZarr.Group.open(copy, "b")
      assert Array.get_slice!(b2) == Array.get_slice!(b)

      assert {:error, {:unknown_option, :bogus}} = ExZarr.copy_group(g, [path: out], bogus: 1)
      assert {:error, {:invalid_argument, ExZarr.Group, :x}} = ExZarr.copy_group(:x, [], [])
    end

    test "a unit that keeps failing fails the job with its box", %{tmp_dir: dir} do
      src = source(dir)
      dst = target(dir, "dst.zarr")

      # (every unit fails, several at once: whichever runs out of retries first is named)
      assert {:error,
              {:unit_failed, %{start: {r, c}, stop: stop}, {:exception, %RuntimeError{}, _}}} =
               Jobs.map_blocks(src, dst, {JobsFuns, :fail, []}, retries: 1)

      assert rem(r, 16) == 0 and rem(c, 7) == 0
      assert stop == {min(r + 16, 40), min(c + 7, 30)}
    end

    test "fun may return {:ok, data}; {:error, reason} fails its unit", %{tmp_dir: dir} do
      src = source(dir)
      dst = target(dir, "dst.zarr")
      ok = fn data, box -> {:ok, JobsFuns.add(data, box, 2)} end
      assert {:ok, %{units: 15}} = Jobs.map_blocks(src, dst, ok, [])
      assert all(dst) == plus(2)

      assert {:error, {:unit_failed, %{start: {0, 0}}, :nope}} =
               Jobs.map_blocks(src, dst, fn _, _ -> {:error, :nope} end, retries: 0)

      # data of the wrong size is refused by the target, not written
      assert {:error, {:unit_failed, _, _}} =
               Jobs.map_blocks(src, dst, fn _, _ -> <<1>> end, retries: 0)

      assert all(dst) == plus(2)
    end

    test "a unit over its timeout is retried, then fails the job", %{tmp_dir: dir} do
      src = source(dir)
      dst = target(dir, "dst.zarr")
      slow = {JobsFuns, :add, [1, 300]}

      assert {:error, {:unit_failed, %{start: {0, 0}, stop: {16, 7}}, :timeout}} =
               Jobs.map_blocks(src, dst, slow, timeout: 50, retries: 1)
    end

    test "resume: true skips the units an earlier run of the job did", %{tmp_dir: dir} do
      src = source(dir)
      dst = target(dir, "dst.zarr")
      # the first run stops when the unit at row 16 keeps failing
      fun = {JobsFuns, :add_unless_row, [4, 16]}

      assert {:error, {:unit_failed, %{start: {16, _}}, _}} =
               Jobs.map_blocks(src, dst, fun, resume: true, retries: 0, max_concurrency: 1)

      {:ok, journal} = ExZarr.Storage.list(dst.storage, ".exzarr_jobs/")
      done = length(journal)
      assert done in 5..14

      # the same job again, now on a node where the function succeeds everywhere
      :persistent_term.put({JobsFuns, :fail_row}, false)

      try do
        assert {:ok, report} = Jobs.map_blocks(src, dst, fun, resume: true, retries: 0)
        assert report.skipped == done and report.units == 15 - done
        assert all(dst) == plus(4)
        assert {:ok, []} = ExZarr.Storage.list(dst.storage, ".exzarr_jobs/")
      after
        :persistent_term.erase({JobsFuns, :fail_row})
      end

      # without resume: every unit again, no journal
      assert {:ok, %{units: 15, skipped: 0}} =
               Jobs.map_blocks(src, dst, {JobsFuns, :add, [4]}, [])

      assert {:ok, []} = ExZarr.Storage.list(dst.storage, ".exzarr_jobs/")

      assert {:error, {:unknown_option, :resume}} =
               Jobs.reduce_blocks(src, fun, &+/2, resume: true)

      assert {:error, {:invalid_option, :resume, 1}} = Jobs.map_blocks(src, dst, fun, resume: 1)
    end

    test "copy with resume: true continues into the target an earlier run created", %{
      tmp_dir: dir
    } do
      src = source(dir)
      path = Path.join(dir, "c.zarr")
      # an earlier run that created the target and copied only the first rows
      {:ok, partial} = ExZarr.create(path: path, shape: {40, 30}, chunks: {8, 8}, dtype: :uint8)

      :ok =
        Array.set_slice(partial, binary_part(pattern(1200), 0, 240), start: {0, 0}, stop: {8, 30})

      assert {:error, {:already_exists, ""}} = ExZarr.copy(src, path: path, chunks: {8, 8})
      assert {:ok, copy} = ExZarr.copy(src, [path: path, chunks: {8, 8}], resume: true)
      assert copy.metadata.chunks == {8, 8}
      assert all(copy) == pattern(1200)
    end

    test "on_progress sees every unit done", %{tmp_dir: dir} do
      src = source(dir)
      dst = target(dir, "dst.zarr")
      me = self()
      progress = &send(me, {:progress, &1})
      assert {:ok, _} = Jobs.map_blocks(src, dst, {JobsFuns, :add, [1]}, on_progress: progress)

      dones =
        for _ <- 1..15 do
          assert_receive {:progress, %{done: done, total: 15, failed: 0, by_node: %{}}}
          done
        end

      assert dones == Enum.to_list(1..15)
    end

    test "a job whose nodes cannot be reached fails", %{tmp_dir: dir} do
      src = source(dir)
      dst = target(dir, "dst.zarr")

      assert {:error, {:no_nodes_left, {:node_down, :"nobody@127.0.0.1", :noconnection}}} =
               Jobs.map_blocks(src, dst, {JobsFuns, :add, [1]}, nodes: [:"nobody@127.0.0.1"])
    end

    test "arrays in shared stores pass to other nodes; stores with local state do not" do
      {:ok, meta} = ExZarr.Metadata.new(shape: {4}, chunks: {2}, dtype: :uint8)
      nowhere = :"nobody@127.0.0.1"
      endpoint = "http://127.0.0.1:9"

      shared = [
        s3: [bucket: "b", endpoint: endpoint, access_key_id: "a", secret_access_key: "s"],
        gcs: [bucket: "b", endpoint: endpoint, token: "t"],
        azure: [container: "c", account: "a", account_key: Base.encode64("k"), endpoint: endpoint],
        mongo_gridfs: [url: "mongodb://127.0.0.1:9/db"]
      ]

      for {backend, opts} <- shared do
        {:ok, store} = ExZarr.Storage.new(backend, opts)
        {:ok, a} = Array.new(meta, store)
        # refused only because the node cannot be reached, not because of the store
        assert {:error, {:no_nodes_left, {:node_down, ^nowhere, :noconnection}}} =
                 Jobs.reduce_blocks(a, {JobsFuns, :sum, []}, &+/2, nodes: [nowhere])
      end

      {:ok, memory} = ExZarr.Storage.new(:memory, [])
      {:ok, a} = Array.new(meta, memory)

      assert {:error, {:store_not_shared, ExZarr.Storage.Memory}} =
               Jobs.reduce_blocks(a, {JobsFuns, :sum, []}, &+/2, nodes: [nowhere])
    end

    test "bad options and arguments are errors", %{tmp_dir: dir} do
      src = source(dir)
      dst = target(dir, "dst.zarr")
      other = target(dir, "other.zarr", shape: {4, 4}, chunks: {2, 2})
      f = {JobsFuns, :add, [1]}
      assert {:error, {:unknown_option, :bogus}} = Jobs.map_blocks(src, dst, f, bogus: 1)
      assert {:error, {:invalid_option, :nodes, []}} = Jobs.map_blocks(src, dst, f, nodes: [])
      assert {:error, {:invalid_option, :block, {1}}} = Jobs.map_blocks(src, dst, f, block: {1})
      assert {:error, {:invalid_option, :retries, -1}} = Jobs.map_blocks(src, dst, f, retries: -1)
      assert {:error, {:invalid_option, :fun, :nope}} = Jobs.map_blocks(src, dst, :nope, [])
      assert {:error, {:shape_mismatch, {40, 30}, {4, 4}}} = Jobs.map_blocks(src, other, f, [])
      assert {:error, {:invalid_argument, Array, :x}} = Jobs.map_blocks(:x, dst, f, [])
      assert {:error, {:invalid_option, :combine, 1}} = Jobs.reduce_blocks(src, f, 1, [])

      # copy checks its job options before it creates the target
      copy_path = Path.join(dir, "never.zarr")
      assert {:error, {:unknown_option, :bogus}} = ExZarr.copy(src, [path: copy_path], bogus: 1)

      assert {:error, {:invalid_option, :nodes, []}} =
               ExZarr.copy(src, [path: copy_path], nodes: [])

      refute File.exists?(copy_path)
      assert {:error, {:invalid_argument, :target_opts, :x}} = ExZarr.copy(src, :x, [])

      assert {:error, {:invalid_option, :on_progress, 1}} =
               Jobs.map_blocks(src, dst, f, on_progress: 1)

      assert {:error, {:invalid_option, :timeout, 0}} = Jobs.map_blocks(src, dst, f, timeout: 0)

      assert {:error, {:invalid_option, :nodes, [_ | :x]}} =
               Jobs.map_blocks(src, dst, f, nodes: [node() | :x])

      assert {:error, {:duplicate_option, :retries}} =
               Jobs.map_blocks(src, dst, f, retries: 1, retries: -1)

      assert {:error, {:duplicate_option, :path}} =
               ExZarr.copy(src, [path: copy_path, path: copy_path <> "2"], [])

      refute File.exists?(copy_path)

      {:ok, mem} = ExZarr.create(shape: {40, 30}, chunks: {8, 8}, dtype: :uint8, storage: :memory)

      assert {:error, {:store_not_shared, ExZarr.Storage.Memory}} =
               Jobs.map_blocks(src, mem, f, nodes: [node(), :other@nowhere])
    end
  end

  describe "on :peer nodes" do
    setup do
      %{peers: ExZarr.Test.Peers.start!(2)}
    end

    test "map, reduce and copy spread over the nodes", %{tmp_dir: dir, peers: peers} do
      src = source(dir)
      dst = target(dir, "dst.zarr")

      assert {:ok, report} =
               Jobs.map_blocks(src, dst, {JobsFuns, :add, [7, 20]},
                 nodes: peers,
                 max_concurrency: 2
               )

      assert report.units == 15 and report.retries == 0
      assert Enum.sort(Map.keys(report.by_node)) == Enum.sort(peers)
      assert Enum.all?(Map.values(report.by_node), &(&1 > 0))
      assert all(dst) == plus(7)

      expected = for <<b <- pattern(1200)>>, reduce: 0, do: (acc -> acc + b)

      assert {:ok, ^expected} =
               Jobs.reduce_blocks(src, {JobsFuns, :sum, []}, &+/2, nodes: [node() | peers])

      assert {:ok, copy} =
               ExZarr.copy(src, [path: Path.join(dir, "c.zarr"), zarr_format: 2, chunks: {3, 30}],
                 nodes: peers
               )

      assert all(copy) == pattern(1200)
    end

    test "a rechunking copy over the peers on this host puts its intermediate array in the temporary folder",
         %{tmp_dir: dir, peers: peers} do
      {src, data} = rows(dir)
      root = Path.join(dir, "g.zarr")

      during = fn _progress ->
        unless Process.get(:looked) do
          Process.put(:looked, true)
          send(self(), {:during, shared_temp_dirs(), temp_dirs(root)})
        end
      end

      assert {:ok, copy, %{plan: :intermediate}} =
               Jobs.copy_with_report(src, [path: root, prefix: "t", chunks: {512, 1}],
                 nodes: peers,
                 max_concurrency: 1024,
                 on_progress: during
               )

      assert_received {:during, [_temp], []}
      assert all(copy) == data
      assert shared_temp_dirs() == []
    end

    test "a rechunking copy over peers with another temporary folder puts its intermediate array in the target",
         %{tmp_dir: dir} do
      other_tmp = Path.join(dir, "peer_tmp")
      File.mkdir_p!(other_tmp)
      peers = ExZarr.Test.Peers.start!(2, env: [{"TMPDIR", other_tmp}])
      {src, data} = rows(dir)
      root = Path.join(dir, "g.zarr")

      # once, while the intermediate array exists: where it is, and what lists the group
      during = fn _progress ->
        unless Process.get(:looked) do
          Process.put(:looked, true)
          send(self(), {:during, temp_dirs(root), members(root), python_members(root)})
        end
      end

      assert {:ok, copy, report} =
               Jobs.copy_with_report(src, [path: root, prefix: "t", chunks: {512, 1}],
                 nodes: peers,
                 max_concurrency: 1024,
                 on_progress: during
               )

      assert report.plan == :intermediate
      assert Enum.all?(report.stages, &(map_size(&1.by_node) == 2))
      assert_received {:during, [temp], ["t"], "t"}
      assert temp =~ ~r"/g\.zarr/t/\.exzarr_rechunk_[0-9a-f]{16}$"
      assert all(copy) == data
      assert temp_dirs(root) == []
    end

    test "a failed or raising copy over the peers leaves no intermediate array",
         %{tmp_dir: dir, peers: peers} do
      {src, _data} = rows(dir)
      root = Path.join(dir, "g.zarr")
      opts = [nodes: peers, max_concurrency: 1024, retries: 0]

      # a file where the target's chunk folder goes: every write of stage two fails
      block_chunks = fn _progress -> File.write(Path.join(root, "t/c"), "") end
      target = [path: root, prefix: "t", chunks: {512, 1}]

      assert {:error, {:unit_failed, _box, _reason}} =
               ExZarr.copy(src, target, [on_progress: block_chunks] ++ opts)

      assert File.regular?(Path.join(root, "t/c"))
      assert temp_dirs(root) == []

      # on_progress raising after the first unit of stage one, others in flight on the peers
      target = [path: root, prefix: "u", chunks: {512, 1}]
      fail = fn _progress -> raise "stop" end

      assert_raise RuntimeError, "stop", fn ->
        ExZarr.copy(src, target, [on_progress: fail] ++ opts)
      end

      assert File.dir?(Path.join(root, "u")) and temp_dirs(root) == []
      assert shared_temp_dirs() == []
    end

    test "the coordinator killed mid-job: resume: true finishes without redoing units",
         %{tmp_dir: dir, peers: [coordinator, _]} do
      src = source(dir)
      dst = target(dir, "dst.zarr", chunks: {4, 5})
      fun = {JobsFuns, :add, [6, 50]}
      # 60 units of 50 ms, 2 at a time on the coordinator's node
      :erpc.cast(coordinator, Jobs, :map_blocks, [src, dst, fun, [resume: true]])
      wait_until(fn -> journal(dst) != [] end)
      halt(coordinator)

      done = length(journal(dst))
      assert done in 1..59

      assert {:ok, report} = Jobs.map_blocks(src, dst, fun, resume: true)
      assert report.skipped == done and report.units == 60 - done
      assert all(dst) == plus(6)
    end

    test "a node killed mid-job: its units are re-run elsewhere", %{tmp_dir: dir, peers: peers} do
      [victim, survivor] = peers
      src = source(dir)
      dst = target(dir, "dst.zarr", chunks: {4, 5})
      # 10 x 6 = 60 units of 100 ms each, 2 in flight per node
      me = self()

      job =
        Task.async(fn ->
          # retries: 0: losing a node does not use up a unit's tries
          Jobs.map_blocks(src, dst, {JobsFuns, :add, [9, 100]},
            nodes: peers,
            max_concurrency: 2,
            retries: 0,
            on_progress: &send(me, {:progress, &1})
          )
        end)

      # kill the victim once it has done a unit, long before the job's end
      assert_receive {:progress, %{by_node: %{^victim => _}, done: done}}, 30_000
      halt(victim)
      assert done < 30
      assert {:ok, report} = Task.await(job, 60_000)
      assert report.units == 60
      assert report.retries >= 1 and report.failed == 0
      assert report.nodes_lost == [victim]
      assert is_integer(report.by_node[victim]) and report.by_node[victim] > 0
      assert report.by_node[survivor] + report.by_node[victim] == 60
      assert all(dst) == plus(9)
    end
  end
end
