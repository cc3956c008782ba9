defmodule ExZarr.Interop.NativeCodecsWriteTest do
  @moduledoc """
  ExZarr writes v2 and v3 arrays compressed with zstd, blosc (lz4 and zstd, byte and bit
  shuffle) and lz4; zarr-python (and tensorstore, except lz4) reads them and checks data,
  metadata and chunk keys. Tagged `:native_codecs`; skipped while ExZarr does not support
  these codecs.
  """
  use ExZarr.Test.Interop.Suite,
    cases: :native_codecs_exzarr,
    mode: :write,
    native: true,
    label: "zarr-python reads ExZarr's"
end
