defmodule ExZarr.Interop.TensorstoreTest do
  @moduledoc """
  Tensorstore (zarr and zarr3 drivers) writes arrays in one Python process; ExZarr reads them.
  Tensorstore writes metadata differently from zarr-python (no `.zattrs`, a v3 `v2` key
  encoding without configuration, keys in another order).
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.Interop
  alias ExZarr.Test.Interop.{Checks, Matrix}

  @moduletag :interop
  @dir Path.join(System.tmp_dir!(), "exzarr-tensorstore-#{System.unique_integer([:positive])}")
  @cases Matrix.cases(:tensorstore, @dir)

  setup_all do
    File.rm_rf!(@dir)
    on_exit(fn -> File.rm_rf!(@dir) end)
    %{written: Interop.run_batch(:write, @cases, @dir)}
  end

  for c <- @cases do
    @tag zcase: c
    test "ExZarr reads tensorstore's #{c.name}", %{zcase: c, written: written} do
      assert Interop.result_errors(written, c) == nil
      Checks.assert_reads(c)
    end
  end
end
