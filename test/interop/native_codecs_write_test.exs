defmodule ExZarr.Interop.NativeCodecsWriteTest do
  @moduledoc """
  ExZarr writes v2 and v3 arrays compressed with zstd, blosc (lz4 and zstd, byte and bit
  shuffle) and lz4; zarr-python reads them and checks data, metadata and chunk keys.
  Tagged `:native_codecs`; skipped while ExZarr does not support these codecs yet.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Test.Interop
  alias ExZarr.Test.Interop.{Checks, Matrix}

  @moduletag :interop
  @moduletag :native_codecs
  @dir Path.join(System.tmp_dir!(), "exzarr-native-write-#{System.unique_integer([:positive])}")
  @cases Matrix.cases(:native_codecs_exzarr, @dir)

  unless Interop.native_codecs?() do
    @moduletag skip: "ExZarr does not support zstd, blosc and lz4 yet"
  end

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
