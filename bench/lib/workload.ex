defmodule ExZarr.Bench.Workload do
  @moduledoc """
  The behaviour of one benchmark workload, and what the workloads share: running a task with
  every library, reading the results back and checking that the libraries read the same bytes.

  A workload module says which datasets it needs (`c:datasets/1`, generated once by numpy),
  and runs itself (`c:run/2`): it builds one task (a map `bench/peers/peer.py` understands),
  runs it with ExZarr in this VM (or in a fresh `elixir` process when it measures memory) and
  with each peer in its own Python process, and returns its tables.

  A result is `%{rows: [%{group:, op:, samples: [seconds], digest:, stored_bytes:, files:}]}` whatever
  library produced it; `digest` is the SHA-256 of the bytes a read returned.
  """

  alias ExZarr.Bench.{Python, Table}

  @typedoc "What a workload gets: the profile, the libraries, where data and stores live."
  @type ctx :: %{
          profile: :default | :quick | :smoke,
          runs: pos_integer() | nil,
          large: boolean(),
          libs: [String.t()],
          data: %{String.t() => Path.t()},
          store_root: Path.t(),
          tmp: Path.t(),
          log: (String.t() -> any())
        }

  @type result :: %{rows: [map()]} | {:error, term()}

  @doc "Workload number in the issue (1..5)."
  @callback id() :: pos_integer()
  @doc "One-line title."
  @callback title() :: String.t()
  @doc "The datasets (gen_data.py specs) this workload needs in a profile."
  @callback datasets(ctx()) :: [map()]
  @doc "Runs the workload; returns its tables, or why it was skipped."
  @callback run(ctx()) :: {:ok, [Table.t()]} | {:skip, String.t()}

  @doc "The workload's settings for the ctx's profile, with `--runs` applied."
  @spec config(ctx(), %{atom() => map()}) :: map()
  def config(ctx, profiles) do
    conf = Map.fetch!(profiles, ctx.profile)
    if ctx.runs, do: Map.put(conf, :runs, ctx.runs), else: conf
  end

  @doc """
  Runs `task` with every library of the ctx: ExZarr through `local` (a function of the task,
  returning a result), the peers through `bench/peers/peer.py`. Stores go under
  `store_root/<lib>/<name>`.

  The task's `runs` are done as rounds: each round runs every library once with `runs: 1`
  (one warm-up and one timed run), so that a burst of load on a shared machine hits every
  library alike instead of all the runs of one; the rounds' samples are then merged. Returns
  `%{lib => result}`; failures become `{:error, reason}` and are logged, so one library
  failing does not stop the others.
  """
  @spec each_lib(ctx(), String.t(), map(), (map() -> result())) :: %{String.t() => result()}
  def each_lib(ctx, name, task, local) do
    rounds(ctx, task.runs, fn _round, lib ->
      task = task |> with_stores(ctx, lib, name) |> Map.put(:runs, 1)
      run_one(ctx, lib, task, local)
    end)
  end

  @doc """
  Calls `fun.(round, lib)` for `rounds` rounds over the ctx's libraries (round-robin, each
  round starting one library further down the list) and merges each library's results: their
  rows' samples are concatenated (the first round's digest and sizes are kept); a library
  with a failed round gets that failure.
  """
  @spec rounds(ctx(), pos_integer(), (pos_integer(), String.t() -> result())) ::
          %{String.t() => result()}
  def rounds(ctx, rounds, fun) do
    for round <- 1..rounds, lib <- rotate(ctx.libs, round - 1) do
      ctx.log.("  #{lib} (round #{round}/#{rounds})")
      {lib, fun.(round, lib)}
    end
    |> Enum.group_by(&elem(&1, 0), &elem(&1, 1))
    |> Map.new(fn {lib, results} -> {lib, merge(results)} end)
  end

  defp rotate(libs, by) do
    {head, tail} = Enum.split(libs, rem(by, length(libs)))
    tail ++ head
  end

  defp merge(results) do
    case Enum.find(results, &match?({:error, _}, &1)) do
      nil ->
        [first | rest] = results

        rows =
          Enum.map(first.rows, fn row ->
            more = Enum.flat_map(rest, &find(&1, row.group, row.op).samples)
            %{row | samples: row.samples ++ more}
          end)

        %{first | rows: rows}

      error ->
        error
    end
  end

  @doc "Runs one task with one library (see `each_lib/4`)."
  @spec run_one(ctx(), String.t(), map(), (map() -> result())) :: result()
  def run_one(ctx, lib, task, local) do
    result =
      if lib == "ExZarr" do
        try do
          local.(task)
        rescue
          e -> {:error, Exception.message(e)}
        catch
          :exit, reason -> {:error, {:exit, reason}}
        end
      else
        task |> Map.put(:lib, lib) |> Python.peer(ctx.tmp) |> normalize()
      end

    with {:error, reason} <- result do
      ctx.log.("    #{lib} failed: #{inspect(reason, limit: 20, printable_limit: 2000)}")
      result
    end
  end

  defp with_stores(task, ctx, lib, name) do
    dir = Path.join([ctx.store_root, slug(lib), name])
    task |> Map.put(:store_root, dir) |> Map.put(:store, Path.join(dir, "array"))
  end

  defp slug(lib), do: lib |> String.downcase() |> String.replace(~r/[^a-z0-9]+/, "-")

  @doc "Turns a decoded peer JSON result into the common result shape (atom keys, nil for null)."
  @spec normalize({:ok, map()} | {:error, term()}) :: result()
  def normalize({:ok, %{"rows" => rows} = result}) do
    rows =
      Enum.map(rows, fn row ->
        %{
          group: row["group"],
          op: row["op"],
          samples: row["samples"],
          digest: nil_if_null(row["digest"]),
          stored_bytes: nil_if_null(row["stored_bytes"]),
          files: nil_if_null(row["files"])
        }
      end)

    extra = Map.drop(result, ["rows"]) |> Map.new(fn {k, v} -> {String.to_atom(k), v} end)
    Map.put(extra, :rows, rows)
  end

  def normalize({:error, _} = error), do: error

  defp nil_if_null(:null), do: nil
  defp nil_if_null(v), do: v

  @doc "The row of a result for `group`/`op` (nil when the library failed or has no such row)."
  @spec find(result(), String.t(), String.t()) :: map() | nil
  def find(%{rows: rows}, group, op), do: Enum.find(rows, &(&1.group == group and &1.op == op))
  def find(_error, _group, _op), do: nil

  @doc "Median of a row's samples (nil for a missing row)."
  @spec median(map() | nil) :: float() | nil
  def median(nil), do: nil

  def median(%{samples: samples}) do
    sorted = Enum.sort(samples)
    n = length(sorted)
    mid = div(n, 2)

    if rem(n, 2) == 1,
      do: Enum.at(sorted, mid) / 1,
      else: (Enum.at(sorted, mid - 1) + Enum.at(sorted, mid)) / 2
  end

  @doc "Median time of a row in milliseconds."
  @spec median_ms(map() | nil) :: float() | nil
  def median_ms(row), do: if(m = median(row), do: m * 1000)

  @doc """
  Checks that every library that returned data for `group`/`op` returned the same bytes.
  Returns nil, or a note naming the libraries whose data differs from ExZarr's (or from the first).
  """
  @spec digest_note(%{String.t() => result()}, String.t(), String.t()) :: String.t() | nil
  def digest_note(results, group, op) do
    digests =
      for {lib, result} <- results,
          row = find(result, group, op),
          row && row.digest,
          do: {lib, row.digest}

    case Enum.uniq_by(digests, &elem(&1, 1)) do
      [] ->
        nil

      [_] ->
        nil

      _ ->
        reference = List.keyfind(digests, "ExZarr", 0) || hd(digests)
        differ = for {lib, d} <- digests, d != elem(reference, 1), do: lib

        "**DATA MISMATCH** in #{group} #{op}: #{Enum.join(differ, ", ")} read different bytes " <>
          "than #{elem(reference, 0)}."
    end
  end

  @doc """
  Adds a row `label` to a table: every library's median time (ms) of `group`/`op`, and the
  digest note when the libraries read different bytes.
  """
  @spec time_row(Table.t(), %{String.t() => result()}, String.t(), String.t(), String.t()) ::
          Table.t()
  def time_row(table, results, group, op, label) do
    cells = Map.new(results, fn {lib, r} -> {lib, median_ms(find(r, group, op))} end)
    table = Table.add_row(table, label, cells)

    case digest_note(results, group, op) do
      nil -> table
      note -> Table.add_note(table, note)
    end
  end

  @doc "SHA-256 (lowercase hex) of a list of binaries, as peer.py computes it."
  @spec digest([binary()]) :: String.t()
  def digest(binaries) do
    binaries
    |> Enum.reduce(:crypto.hash_init(:sha256), &:crypto.hash_update(&2, &1))
    |> :crypto.hash_final()
    |> Base.encode16(case: :lower)
  end

  @doc "Runs `fun` and returns `{seconds, result}`."
  @spec timed((() -> any())) :: {float(), any()}
  def timed(fun) do
    {us, result} = :timer.tc(fun)
    {us / 1_000_000, result}
  end

  @doc """
  Runs `fun` once untimed (a warm-up, whose result goes through `check:`, e.g. a digest), then
  `runs` timed times, calling `before:` untimed ahead of each call (as `_measure` in peer.py).
  Returns `{seconds_samples, checked}` (`checked` is nil without `check:`).
  """
  @spec measure(pos_integer(), (() -> any()), keyword()) :: {[float()], any()}
  def measure(runs, fun, opts \\ []) do
    before = Keyword.get(opts, :before, fn -> :ok end)
    before.()
    first = fun.()
    checked = if check = opts[:check], do: check.(first)

    samples =
      for _ <- 1..runs do
        before.()
        elem(timed(fun), 0)
      end

    {samples, checked}
  end

  @doc "ExZarr compressor option from a task's compressor (a numcodecs-style map, or nil/:null)."
  @spec compressor(map() | nil | :null) :: map() | nil
  def compressor(c) when c in [nil, :null], do: nil
  def compressor(%{} = c), do: c

  @doc """
  Creates a v3 filesystem array (fill value 0) for a task's shape, chunks, dtype and
  compressor; `extra` options go to `ExZarr.create!/1` (e.g. `shards:`).
  """
  @spec create(
          Path.t(),
          [pos_integer()],
          [pos_integer()],
          String.t(),
          map() | nil | :null,
          keyword()
        ) ::
          ExZarr.Array.t()
  def create(path, shape, chunks, dtype, compressor, extra \\ []) do
    dtype = String.to_atom(dtype)

    [
      shape: List.to_tuple(shape),
      chunks: List.to_tuple(chunks),
      dtype: dtype,
      storage: :filesystem,
      path: path,
      zarr_format: 3,
      compressor: compressor(compressor),
      fill_value: if(dtype in [:float16, :float32, :float64, :bfloat16], do: 0.0, else: 0),
      overwrite: true
    ]
    |> Keyword.merge(extra)
    |> ExZarr.create!()
  end

  @doc """
  Runs `fun` (returning tables) when ExZarr has the codec `name`, else skips with the reason.
  """
  @spec requiring(String.t(), (() -> [Table.t()])) :: {:ok, [Table.t()]} | {:skip, String.t()}
  def requiring(name, fun) do
    if codec?(name),
      do: {:ok, fun.()},
      else: {:skip, "needs the #{name} codec, which is not registered in ExZarr yet"}
  end

  @doc "True when a codec is registered in ExZarr (so a workload that needs it can run)."
  @spec codec?(String.t()) :: boolean()
  def codec?(name), do: match?({:ok, _}, ExZarr.Codec.Registry.fetch(name))

  @doc "Number of files under a store (metadata documents included)."
  @spec file_count(Path.t()) :: non_neg_integer()
  def file_count(path) do
    path |> Path.join("**") |> Path.wildcard(match_dot: true) |> Enum.count(&File.regular?/1)
  end

  @doc "Total bytes of the chunk files under a store (metadata documents excluded)."
  @spec stored_bytes(Path.t()) :: non_neg_integer()
  def stored_bytes(path) do
    path
    |> Path.join("**")
    |> Path.wildcard(match_dot: true)
    |> Enum.reject(&(File.dir?(&1) or Path.basename(&1) in ["zarr.json", ".zarray", ".zattrs"]))
    |> Enum.map(&File.stat!(&1).size)
    |> Enum.sum()
  end
end
