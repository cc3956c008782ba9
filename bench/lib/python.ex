defmodule ExZarr.Bench.Python do
  @moduledoc """
  Runs the Python side of the benchmark (the venv `scripts/setup` builds): data generation
  (`bench/peers/gen_data.py`), the peers (`bench/peers/peer.py`, one OS process per task) and
  the chart (`bench/chart.py`). The `rechunker` peer runs in a venv of its own (zarr 2).

      {:ok, %{"rows" => rows}} = ExZarr.Bench.Python.peer(%{lib: "zarrs", workload: "slicing"}, "/tmp")
  """

  @peer_libs ["zarr-python", "zarrs", "tensorstore"]
  @bench_dir Path.expand("..", __DIR__)

  @doc "The peer libraries the harness knows, in table order."
  @spec peer_libs() :: [String.t()]
  def peer_libs, do: @peer_libs

  @doc "Path of the venv's python: `EXZARR_PYTHON`, else `scripts/setup --venv-path`."
  @spec executable() :: String.t()
  def executable, do: venv_python("EXZARR_PYTHON", "--venv-path")

  @doc """
  Path of the rechunker venv's python (zarr 2): `EXZARR_PYTHON_RECHUNKER`, else
  `scripts/setup --rechunker-venv-path`.
  """
  @spec rechunker_executable() :: String.t()
  def rechunker_executable, do: venv_python("EXZARR_PYTHON_RECHUNKER", "--rechunker-venv-path")

  defp venv_python(variable, flag) do
    case System.get_env(variable) do
      path when is_binary(path) and path != "" ->
        path

      _ ->
        {venv, 0} = System.cmd(Path.join(@bench_dir, "../scripts/setup"), [flag])
        Path.join(String.trim(venv), "bin/python")
    end
  end

  @doc """
  Generates (or reuses) the raw datasets `specs` (maps with name, kind, shape, dtype, seed)
  in `dir`. Returns `%{name => path}`.
  """
  @spec gen_data(Path.t(), [map()]) :: {:ok, %{String.t() => Path.t()}} | {:error, term()}
  def gen_data(dir, specs) do
    with {:ok, out} <-
           run([Path.join(@bench_dir, "peers/gen_data.py"), dir, :jiffy.encode(specs)]) do
      {:ok,
       out
       |> String.split("\n", trim: true)
       |> Map.new(fn line ->
         %{"name" => name, "path" => path} = :jiffy.decode(line, [:return_maps])
         {name, path}
       end)}
    end
  end

  @doc """
  Runs one peer task (a map that `bench/peers/peer.py` understands) in a fresh Python process
  (of the rechunker venv for `lib: "rechunker"`). The task is written as JSON into `tmp_dir`.
  Returns the decoded result map.
  """
  @spec peer(map(), Path.t()) :: {:ok, map()} | {:error, term()}
  def peer(task, tmp_dir) do
    file = Path.join(tmp_dir, "task-#{System.unique_integer([:positive])}.json")
    File.write!(file, :jiffy.encode(task))
    python = if task[:lib] == "rechunker", do: rechunker_executable(), else: executable()

    try do
      with {:ok, out} <- run([Path.join(@bench_dir, "peers/peer.py"), file], python) do
        # the result is the last line that is a JSON object: Dask's and s3fs's processes may
        # print warnings after it (stderr goes to the same output)
        last =
          out |> String.split("\n", trim: true) |> Enum.filter(&(&1 =~ ~r/^\{"/)) |> List.last()

        {:ok, :jiffy.decode(last, [:return_maps])}
      end
    after
      File.rm(file)
    end
  end

  @doc "Versions of the Python packages behind the given libraries (and numpy), as `{name, version}`."
  @spec versions([String.t()]) :: [{String.t(), String.t()}]
  def versions(libs) do
    packages =
      ["numpy"] ++
        Enum.flat_map(libs, fn
          "zarr-python" -> ["zarr", "numcodecs"]
          "zarrs" -> ["zarr", "zarrs"]
          "tensorstore" -> ["tensorstore"]
          _ -> []
        end)

    code =
      "import importlib.metadata as m, sys; print(' '.join(m.version(p) for p in sys.argv[1:]))"

    case run(["-c", code | Enum.uniq(packages)]) do
      {:ok, out} -> Enum.zip(Enum.uniq(packages), String.split(out))
      {:error, _} -> []
    end
  end

  @doc "Draws the PNG chart of a results JSON file with matplotlib."
  @spec chart(Path.t(), Path.t()) :: :ok | {:error, term()}
  def chart(json, png) do
    with {:ok, _} <- run([Path.join(@bench_dir, "chart.py"), json, png]), do: :ok
  end

  defp run(args, python \\ executable()) do
    if File.exists?(python) do
      case System.cmd(python, args, stderr_to_stdout: true) do
        {out, 0} -> {:ok, out}
        {out, status} -> {:error, {:python_failed, status, tail(out)}}
      end
    else
      {:error, {:no_python, "#{python} is missing: run scripts/setup"}}
    end
  end

  defp tail(out), do: out |> String.split("\n", trim: true) |> Enum.take(-6) |> Enum.join("\n")
end
