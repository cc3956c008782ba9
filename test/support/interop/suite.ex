defmodule ExZarr.Test.Interop.Suite do
  @moduledoc """
  Turns a case list of `ExZarr.Test.Interop.Matrix` into an ExUnit module with one test per
  case, running Python once per batch in `setup_all`:

    * `mode: :read`: the fixture script writes every array (zarr-python or tensorstore), then
      each test reads one with ExZarr (`ExZarr.Test.Interop.Checks.assert_reads/1`);
    * `mode: :write`: the script generates the data, ExZarr writes every array, the script
      verifies them all, then each test reports its case and reads it back with ExZarr;
    * `mode: :modify`: zarr-python writes every array, ExZarr overwrites a region of each
      (read-modify-write of the other library's chunks), then as for `:write`.

  Options: `cases:` (the `Matrix.cases/2` kind), `mode:`, `label:` (test name prefix),
  `native: true` to skip the module while ExZarr lacks the native codecs, `python:` the venv
  whose zarr-python writes and verifies (`:default`, or `:newest`: the newest zarr-python
  release; the module skips where that venv does not exist).

      use ExZarr.Test.Interop.Suite, cases: :tensorstore, mode: :read,
        label: "ExZarr reads tensorstore's"
  """

  alias ExZarr.Test.Interop
  alias ExZarr.Test.Interop.Checks

  defmacro __using__(opts) do
    quote bind_quoted: [opts: opts] do
      use ExUnit.Case, async: true

      @moduletag :interop
      @interop_mode Keyword.fetch!(opts, :mode)
      @interop_dir ExZarr.Test.Interop.unique_tmp_path(Atom.to_string(opts[:cases]))
      @interop_cases ExZarr.Test.Interop.Matrix.cases(Keyword.fetch!(opts, :cases), @interop_dir)
      @interop_python Keyword.get(opts, :python, :default)

      if @interop_python == :newest do
        @moduletag :newest_zarr
        unless ExZarr.Test.Python.executable(:newest) do
          @moduletag skip: "no venv of the newest zarr-python (it needs Python >= 3.12)"
        end
      end

      if opts[:native] do
        @moduletag :native_codecs
        unless ExZarr.Test.Interop.native_codecs?() do
          @moduletag skip: "ExZarr does not support zstd, blosc and lz4 yet"
        end
      end

      setup_all do
        File.rm_rf!(@interop_dir)
        on_exit(fn -> File.rm_rf!(@interop_dir) end)

        batch =
          ExZarr.Test.Interop.Suite.run(
            @interop_mode,
            @interop_cases,
            @interop_dir,
            @interop_python
          )

        %{batch: batch}
      end

      for c <- @interop_cases do
        @tag zcase: c
        test "#{opts[:label]} #{c.name}", %{zcase: c, batch: batch} do
          ExZarr.Test.Interop.Suite.assert_case(@interop_mode, c, batch)
        end
      end
    end
  end

  @doc "The batch work of a suite's `setup_all`: what the per-case assertions need."
  @spec run(:read | :write | :modify, [map()], Path.t(), ExZarr.Test.Python.venv()) :: map()
  def run(mode, cases, dir, venv \\ :default)
  def run(:read, cases, dir, venv), do: %{written: Interop.run_batch(:write, cases, dir, venv)}

  def run(:write, cases, dir, venv),
    do: write_and_verify(cases, dir, venv, &Checks.exzarr_write/1)

  def run(:modify, cases, dir, venv),
    do: write_and_verify(cases, dir, venv, &Checks.exzarr_update/1)

  defp write_and_verify(cases, dir, venv, exzarr_write) do
    generated = Interop.run_batch(:write, cases, dir, venv)
    written = Map.new(cases, &{&1.name, exzarr_write.(&1)})
    ok = Enum.filter(cases, &(written[&1.name] == :ok))
    verified = Interop.run_batch(:verify, ok, dir, venv)
    %{generated: generated, written: written, verified: verified}
  end

  @doc "The assertions for one case of a suite."
  @spec assert_case(:read | :write | :modify, map(), map()) :: :ok
  def assert_case(:read, c, batch) do
    errors = Interop.result_errors(batch.written, c)
    assert_no_errors(errors, "the writer failed on this case")
    Checks.assert_reads(c)
  end

  def assert_case(mode, c, batch) when mode in [:write, :modify] do
    assert_no_errors(Interop.result_errors(batch.generated, c), "generating the data failed")

    if batch.written[c.name] != :ok,
      do: ExUnit.Assertions.flunk("ExZarr could not write: #{inspect(batch.written[c.name])}")

    errors = Interop.result_errors(batch.verified, c)
    assert_no_errors(errors, "zarr-python or tensorstore on the array ExZarr wrote")
    Checks.assert_round_trip(c)
  end

  defp assert_no_errors(nil, _what), do: :ok
  defp assert_no_errors(errors, what), do: ExUnit.Assertions.flunk("#{what}:\n#{errors}")
end
