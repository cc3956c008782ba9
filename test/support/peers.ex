defmodule ExZarr.Test.Peers do
  @moduledoc """
  `:peer` nodes on this machine running ExZarr, for the tests of jobs across nodes. Call
  `start!/1` from a test or its setup: the test node becomes distributed (starting `epmd`
  if the machine runs none) and goes back to how it was, and the peers stop, when the test
  ends.
  """

  import ExUnit.Callbacks, only: [on_exit: 1]

  @doc """
  Starts `count` peer nodes with ExZarr's code and application; returns their names.
  `env:` sets OS environment variables of the peers (`[{"TMPDIR", dir}]`).
  """
  @spec start!(pos_integer(), keyword()) :: [node()]
  def start!(count, opts \\ []) do
    env = for {name, value} <- Keyword.get(opts, :env, []), do: {~c"#{name}", ~c"#{value}"}

    unless Node.alive?() do
      {_, 0} = System.cmd("epmd", ["-daemon"])
      {:ok, _} = Node.start(:"jobs_test_#{System.unique_integer([:positive])}@127.0.0.1")
      on_exit(fn -> Node.stop() end)
    end

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

  defp stop(pid) do
    :peer.stop(pid)
  catch
    :exit, _ -> :ok
  end
end
