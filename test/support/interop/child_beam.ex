defmodule ExZarr.Test.ChildBeam do
  @moduledoc """
  Runs Elixir code in a fresh BEAM with ExZarr loaded, for tests whose failure mode could be a
  VM abort (a native crash, an allocation the VM cannot make): the abort then fails one test
  instead of killing the test run.

  Guards keep a broken library from hogging a shared machine: the main process of the child
  has a maximum heap of 1 GiB (it is killed beyond), the whole child an address-space limit of
  8 GiB (`ulimit -v`), and no crash dump is written.

      {out, 0} = ExZarr.Test.ChildBeam.run(~s{IO.inspect(System.argv())}, ["a"])
  """

  @max_heap_words div(1024 * 1024 * 1024, 8)

  @doc """
  Runs `code` (with `System.argv()` = `args`) in a child BEAM; returns `{output, exit_status}`
  (stdout and stderr together).
  """
  @spec run(String.t(), [String.t()]) :: {String.t(), non_neg_integer()}
  def run(code, args \\ []) do
    ebin = Path.wildcard(Path.join(Mix.Project.build_path(), "lib/*/ebin"))

    script =
      Path.join(
        System.tmp_dir!(),
        "exzarr-child-#{System.pid()}-#{System.unique_integer([:positive])}.exs"
      )

    prelude = """
    Process.flag(:max_heap_size, %{size: #{@max_heap_words}, kill: true, error_logger: true})
    {:ok, _} = Application.ensure_all_started(:ex_zarr)
    """

    File.write!(script, prelude <> code)

    try do
      argv = ["elixir" | Enum.flat_map(ebin, &["-pa", &1])] ++ [script | args]
      command = "ulimit -v 8000000; exec " <> Enum.map_join(argv, " ", &shell_quote/1)

      System.cmd("sh", ["-c", command],
        stderr_to_stdout: true,
        env: [{"ERL_CRASH_DUMP_SECONDS", "0"}]
      )
    after
      File.rm(script)
    end
  end

  @doc """
  In a child: marks `writer` arrived in the `folder` of a barrier and waits until `count`
  children have, so that their work starts together.
  """
  @spec barrier(Path.t(), term(), pos_integer()) :: :ok
  def barrier(folder, writer, count) do
    File.touch!(Path.join(folder, "#{writer}"))
    await(folder, count)
  end

  defp await(folder, count) do
    if length(File.ls!(folder)) < count do
      Process.sleep(5)
      await(folder, count)
    else
      :ok
    end
  end

  defp shell_quote(s), do: "'" <> String.replace(s, "'", "'\\''") <> "'"
end
