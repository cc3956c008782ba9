defmodule ExZarr.Interop.NativeCodecsTest do
  @moduledoc """
  zarr-python writes v2 and v3 arrays compressed with zstd, blosc (lz4 and zstd, byte and bit
  shuffle) and lz4; ExZarr reads them. Tagged `:native_codecs`; skipped while ExZarr does not
  support these codecs.
  """
  use ExZarr.Test.Interop.Suite,
    cases: :native_codecs,
    mode: :read,
    native: true,
    label: "ExZarr reads zarr-python's"
end
