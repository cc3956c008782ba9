defmodule ExZarr.Test.MixTask do
  @moduledoc """
  Runs a Mix task as the command line would and returns what it printed:
  `{status, stdout_lines, stderr}`, where `status` is 0, or 1 when the task exited with
  `{:shutdown, 1}` or raised `Mix.Error` (whose message is then in `stderr`). The shell
  (`Mix.shell/0`) is global: tests that use this are not async.
  """

  @spec run(module(), [String.t()]) :: {0 | 1, String.t(), String.t()}
  def run(task, args) do
    previous = Mix.shell()
    Mix.shell(Mix.Shell.Process)

    {status, raised} =
      try do
        task.run(args)
        {0, ""}
      rescue
        e in Mix.Error -> {1, e.message}
      catch
        :exit, {:shutdown, 1} -> {1, ""}
      after
        Mix.shell(previous)
      end

    {out, err} = drain([], [])
    {status, Enum.join(out, "\n"), Enum.join(err ++ [raised], "\n") |> String.trim()}
  end

  defp drain(out, err) do
    receive do
      {:mix_shell, :info, [line]} -> drain(out ++ [line], err)
      {:mix_shell, :error, [line]} -> drain(out, err ++ [line])
    after
      0 -> {out, err}
    end
  end
end
