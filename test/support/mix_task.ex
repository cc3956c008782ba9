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

  @doc "A small sharded float32 array with attributes and dimension names, half written."
  @spec sample_array!(keyword()) :: ExZarr.Array.t()
  def sample_array!(opts) do
    {:ok, a} =
      ExZarr.create(
        [
          shape: {40, 30},
          chunks: {5, 10},
          shards: {20, 30},
          dtype: :float32,
          compressor: %{id: "zstd", level: 3},
          dimension_names: ["y", "x"],
          attributes: %{"units" => "K"}
        ] ++ opts
      )

    data = for i <- 0..(20 * 30 - 1), into: <<>>, do: <<i * 0.5::float-32-little>>
    :ok = ExZarr.Array.set_slice(a, data, stop: {20, 30})
    a
  end
end
