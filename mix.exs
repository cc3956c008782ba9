defmodule Mix.Tasks.Compile.ExZarrNative do
  @moduledoc """
  Builds the NIF in c_src/ into priv/ with make (no hex dependency needed).

  Mix lays out `_build/<env>/lib/ex_zarr/` (with a `priv` link when priv/ exists) before the
  compilers run; priv/ is kept in git (priv/.gitkeep) so the link is there on a fresh clone,
  and the layout is made again after the build in case priv/ was removed.
  """
  use Mix.Task.Compiler

  @impl true
  def run(_args) do
    case System.cmd("make", ["-s", "-C", "c_src"], stderr_to_stdout: true) do
      {out, 0} ->
        if out != "", do: Mix.shell().info(out)
        Mix.Project.build_structure()
        {:ok, []}

      {out, status} ->
        Mix.shell().error(out)
        Mix.raise("building the ExZarr NIF failed (make exited #{status})")
    end
  end
end

defmodule ExZarr.MixProject do
  use Mix.Project

  def project do
    [
      app: :ex_zarr,
      version: "0.1.0",
      elixir: "~> 1.14",
      start_permanent: Mix.env() == :prod,
      compilers: [:ex_zarr_native] ++ Mix.compilers(),
      elixirc_paths: elixirc_paths(Mix.env()),
      deps: [],
      test_coverage: [ignore_modules: []]
    ]
  end

  # jiffy and proper come from Debian (erlang-jiffy, erlang-proper) and are on the
  # default Erlang code path; no hex package is fetched.
  def application do
    [
      mod: {ExZarr.Application, []},
      extra_applications:
        [:logger, :crypto, :jiffy, :inets, :ssl, :public_key, mnesia: :optional] ++
          test_applications(Mix.env())
    ]
  end

  # PropEr (erlang-proper) is used by the property tests only.
  defp test_applications(:test), do: [proper: :optional]
  defp test_applications(_env), do: []

  defp elixirc_paths(:test), do: ["lib", "test/support"]
  defp elixirc_paths(_), do: ["lib"]
end
