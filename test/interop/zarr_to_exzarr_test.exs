defmodule ExZarr.Interop.ZarrToExZarrTest do
  @moduledoc """
  Direction A: zarr-python 3.x writes arrays (v2 and v3, every dtype, both byte orders, C/F
  order, both separators, gzip/zlib/none, special fill values, edge and missing chunks) in one
  Python process; ExZarr reads each whole and in slices crossing chunk boundaries.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.Interop
  alias ExZarr.Test.Interop.{Checks, Matrix}

  @moduletag :interop
  @dir Path.join(System.tmp_dir!(), "exzarr-zarr-to-exzarr-#{System.unique_integer([:positive])}")
  @cases Matrix.cases(:zarr_to_exzarr, @dir)

  setup_all do
    File.rm_rf!(@dir)
    on_exit(fn -> File.rm_rf!(@dir) end)
    %{written: Interop.run_batch(:write, @cases, @dir)}
  end

  for c <- @cases do
    @tag zcase: c
    test "ExZarr reads zarr-python's #{c.name}", %{zcase: c, written: written} do
      assert Interop.result_errors(written, c) == nil
      Checks.assert_reads(c)
    end
  end
end
