defmodule ExZarr.Test.Python do
  @moduledoc """
  Runs Python code in a test venv for interop tests: `:default` is the main venv (zarr-python
  3.1.6, numcodecs, tensorstore), `:newest` the venv of the newest zarr-python release
  (`scripts/requirements-newest.txt`), which exists only where Python >= 3.12 does.

      {:ok, out} = ExZarr.Test.Python.run("import sys; print(sys.argv[1])", ["hi"])
  """

  @type venv :: :default | :newest

  @doc """
  Path of a venv's python: `:default` from `EXZARR_PYTHON`, else `scripts/setup --venv-path`;
  `:newest` from `EXZARR_PYTHON_NEWEST`, else `scripts/setup --newest-venv-path` (nil when
  there is no such venv).
  """
  @spec executable(venv()) :: String.t() | nil
  def executable(venv \\ :default)

  def executable(:default), do: from_env("EXZARR_PYTHON") || from_setup("--venv-path")

  def executable(:newest) do
    python = from_env("EXZARR_PYTHON_NEWEST") || from_setup("--newest-venv-path")
    if python && File.exists?(python), do: python
  end

  defp from_env(name) do
    case System.get_env(name) do
      path when is_binary(path) and path != "" -> path
      _ -> nil
    end
  end

  defp from_setup(flag) do
    case System.cmd(Path.expand("scripts/setup"), [flag]) do
      {venv, 0} when venv != "" ->
        if (dir = String.trim(venv)) != "", do: Path.join(dir, "bin/python")

      _ ->
        nil
    end
  end

  @doc """
  Runs `code` with `args` as `sys.argv[1:]` in a venv's python. Returns `{:ok, stdout}` on exit
  status 0, `{:error, {status, output}}` otherwise (stderr is included in the output).
  """
  @spec run(String.t(), [String.t()], venv()) ::
          {:ok, String.t()} | {:error, {integer(), String.t()}}
  def run(code, args \\ [], venv \\ :default) do
    case System.cmd(executable(venv), ["-c", code | args], stderr_to_stdout: true) do
      {out, 0} -> {:ok, out}
      {out, status} -> {:error, {status, out}}
    end
  end

  @doc "Like `run/3` but raises with Python's output when the script fails."
  @spec run!(String.t(), [String.t()], venv()) :: String.t()
  def run!(code, args \\ [], venv \\ :default) do
    case run(code, args, venv) do
      {:ok, out} -> out
      {:error, {status, out}} -> raise "python exited #{status}:\n#{out}"
    end
  end
end
