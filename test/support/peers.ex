defmodule ExZarr.Test.Peers do
  @moduledoc """
  `:peer` nodes on this machine running ExZarr, for the tests of jobs across nodes, and
  distribution for any test that needs it (`distribute!/1`). Call `start!/1` from a test or
  its setup: the test node becomes distributed (starting `epmd` if the machine runs none)
  and goes back to how it was, and the peers stop, when the test ends.
  """

  import ExUnit.Callbacks, only: [on_exit: 1]

  @doc """
  Starts `count` peer nodes with ExZarr's code and application; returns their names.
  `env:` sets OS environment variables of the peers (`[{"TMPDIR", dir}]`).
  """
  @spec start!(pos_integer(), keyword()) :: [node()]
  def start!(count, opts \\ []) do
    env = for {name, value} <- Keyword.get(opts, :env, []), do: {~c"#{name}", ~c"#{value}"}

    distribute!("jobs_test")

    peers =
      for i <- 1..count do
        name = :"jobs_peer#{i}_#{System.unique_integer([:positive])}"
        # peers do not connect to each other: halting one must not make `global` cut the others
        {:ok, pid, node} =
          :peer.start(%{
            name: name,
            host: ~c"127.0.0.1",
            args: [~c"-connect_all", ~c"false"],
            env: env
          })

        :ok = :erpc.call(node, :code, :add_paths, [:code.get_path()])
        {:ok, _} = :erpc.call(node, Application, :ensure_all_started, [:ex_zarr])
        {pid, node}
      end

    on_exit(fn -> for {pid, _node} <- peers, Process.alive?(pid), do: stop(pid) end)
    Enum.map(peers, &elem(&1, 1))
  end

  @doc """
  Makes this node distributed, as `<prefix>_<n>@127.0.0.1`, until the calling test ends
  (starting `epmd` if the machine runs none); a node already distributed stays as it is.
  """
  @spec distribute!(String.t()) :: :ok
  def distribute!(prefix) do
    unless Node.alive?() do
      {_, 0} = System.cmd("epmd", ["-daemon"])
      {:ok, _} = Node.start(:"#{prefix}_#{System.unique_integer([:positive])}@127.0.0.1")
      on_exit(&undistribute/0)
    end

    :ok
  end

  # `Node.stop/0` returns before the runtime has dropped the node's name: the next test could
  # still see `node()` distributed, and lose it half-way (its `:erpc` calls to `node()` then
  # end in `:noconnection`). So wait until the name is gone.
  defp undistribute do
    :ok = Node.stop()
    wait_undistributed(System.monotonic_time(:millisecond) + 10_000)
  end

  defp wait_undistributed(deadline) do
    cond do
      node() == :nonode@nohost ->
        :ok

      System.monotonic_time(:millisecond) > deadline ->
        raise "this node is still #{node()} 10 s after Node.stop/0"

      true ->
        Process.sleep(10)
        wait_undistributed(deadline)
    end
  end

  defp stop(pid) do
    :peer.stop(pid)
  catch
    :exit, _ -> :ok
  end
end
