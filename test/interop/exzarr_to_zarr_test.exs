defmodule ExZarr.Interop.ExZarrToZarrTest do
  @moduledoc """
  Direction B: ExZarr writes the case matrix (whole-array writes, and partial writes in two
  pieces that leave chunks missing and read-modify-write shared chunks); zarr-python (and tensorstore, where it has the codecs) then reads
  every array in one Python process, compares it bit for bit, checks the metadata and that the
  stored chunk keys are exactly those zarr-python stores for the same writes.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.Interop
  alias ExZarr.Test.Interop.{Checks, Matrix}

  @moduletag :interop
  @dir Path.join(System.tmp_dir!(), "exzarr-exzarr-to-zarr-#{System.unique_integer([:positive])}")
  @cases Matrix.cases(:exzarr_to_zarr, @dir)

  setup_all do
    File.rm_rf!(@dir)
    on_exit(fn -> File.rm_rf!(@dir) end)
    generated = Interop.run_batch(:write, @cases, @dir)
    written = Map.new(@cases, &{&1.name, Checks.exzarr_write(&1)})
    verified = Interop.run_batch(:verify, Enum.filter(@cases, &(written[&1.name] == :ok)), @dir)
    %{generated: generated, written: written, verified: verified}
  end

  for c <- @cases do
    @tag zcase: c
    test "zarr-python reads ExZarr's #{c.name}", ctx do
      c = ctx.zcase
      assert Interop.result_errors(ctx.generated, c) == nil
      assert ctx.written[c.name] == :ok

      errors = Interop.result_errors(ctx.verified, c)

      assert errors == nil,
             "zarr-python or tensorstore on the array ExZarr wrote:\n" <> (errors || "")

      Checks.assert_round_trip(c)
    end
  end
end
