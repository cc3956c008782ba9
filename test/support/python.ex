defmodule ExZarr.Test.Python do
  @moduledoc """
  Runs Python code in the test venv (zarr-python, numcodecs, tensorstore) for interop tests.

      {:ok, out} = ExZarr.Test.Python.run("import sys; print(sys.argv[1])", ["hi"])
  """

  @doc "Path of the venv's python (from `EXZARR_PYTHON`, else `scripts/setup --venv-path`)."
  @spec executable() :: String.t()
  def executable do
    case System.get_env("EXZARR_PYTHON") do
      path when is_binary(path) and path != "" ->
        path

      _ ->
        {venv, 0} = System.cmd(Path.expand("scripts/setup"), ["--venv-path"])
        Path.join(String.trim(venv), "bin/python")
    end
  end

  @doc """
  Runs `code` with `args` as `sys.argv[1:]`. Returns `{:ok, stdout}` on exit status 0,
  `{:error, {status, output}}` otherwise (stderr is included in the output).
  """
  @spec run(String.t(), [String.t()]) :: {:ok, String.t()} | {:error, {integer(), String.t()}}
  def run(code, args \\ []) do
    case System.cmd(executable(), ["-c", code | args], stderr_to_stdout: true) do
      {out, 0} -> {:ok, out}
      {out, status} -> {:error, {status, out}}
    end
  end

  @doc "Like `run/2` but raises with Python's output when the script fails."
  @spec run!(String.t(), [String.t()]) :: String.t()
  def run!(code, args \\ []) do
    case run(code, args) do
      {:ok, out} -> out
      {:error, {status, out}} -> raise "python exited #{status}:\n#{out}"
    end
  end
end
