defmodule ExZarr.Interop.NativeCodecsTest do
  @moduledoc """
  zarr-python writes v2 and v3 arrays compressed with zstd, blosc (lz4 and zstd, byte and bit
  shuffle) and lz4; ExZarr reads them. Tagged `:native_codecs`; skipped while ExZarr does not
  support these codecs yet.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.Interop
  alias ExZarr.Test.Interop.{Checks, Matrix}

  @moduletag :interop
  @moduletag :native_codecs
  @dir Path.join(System.tmp_dir!(), "exzarr-native-codecs-#{System.unique_integer([:positive])}")
  @cases Matrix.cases(:native_codecs, @dir)

  unless Interop.native_codecs?() do
    @moduletag skip: "ExZarr does not support zstd, blosc and lz4 yet"
  end

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
