defmodule ExZarr.Test.ZarrsTools do
  @moduledoc """
  Runs the zarrs command line tools (`zarrs_reencode`, `zarrs_info`, `zarrs_validate`,
  `zarrs_binary2zarr`; zarrs_tools, built by `scripts/install-zarrs-tools`) for the interop
  tests. Their directory comes from `EXZARR_ZARRS_TOOLS`, else from
  `scripts/install-zarrs-tools --path`.

      {:ok, json} = ExZarr.Test.ZarrsTools.run("zarrs_info", ["/tmp/a.zarr", "shape"])
  """

  @doc "The directory holding the tools, or nil when they are not built (looked up once)."
  @spec dir() :: Path.t() | nil
  def dir do
    with :unknown <- :persistent_term.get({__MODULE__, :dir}, :unknown) do
      dir = find_dir()
      :persistent_term.put({__MODULE__, :dir}, dir)
      dir
    end
  end

  defp find_dir do
    dir =
      case System.get_env("EXZARR_ZARRS_TOOLS") do
        path when is_binary(path) and path != "" ->
          path

        _ ->
          {out, 0} = System.cmd(Path.expand("scripts/install-zarrs-tools"), ["--path"])
          String.trim(out)
      end

    if File.exists?(Path.join(dir, "zarrs_reencode")), do: dir
  end

  @doc """
  Runs `tool` with `args` (and the file `stdin:` as its standard input). Returns `{:ok,
  stdout}` on exit status 0, else `{:error, {status, output}}` (stderr included).
  """
  @spec run(String.t(), [String.t()], keyword()) ::
          {:ok, String.t()} | {:error, {integer(), String.t()}}
  def run(tool, args, opts \\ []) do
    exe = Path.join(dir(), tool)

    {cmd, argv, env} =
      case opts[:stdin] do
        nil ->
          {exe, args, []}

        file ->
          {"sh", ["-c", ~s(exec "$0" "$@" < "$STDIN_FILE"), exe | args], [{"STDIN_FILE", file}]}
      end

    # One rayon thread per tool: the machine is shared and the arrays are small.
    env = [{"RAYON_NUM_THREADS", "1"} | env]

    case System.cmd(cmd, argv, stderr_to_stdout: true, env: env) do
      {out, 0} -> {:ok, out}
      {out, status} -> {:error, {status, out}}
    end
  end

  @doc "Like `run/3` but raises with the tool's output when it fails."
  @spec run!(String.t(), [String.t()], keyword()) :: String.t()
  def run!(tool, args, opts \\ []) do
    case run(tool, args, opts) do
      {:ok, out} -> out
      {:error, {status, out}} -> raise "#{tool} #{Enum.join(args, " ")} exited #{status}:\n#{out}"
    end
  end

  @doc "The JSON a `zarrs_info PATH command` prints, decoded."
  @spec info!(Path.t(), String.t()) :: map()
  def info!(path, command),
    do: :jiffy.decode(run!("zarrs_info", [path, command]), [:return_maps])
end
