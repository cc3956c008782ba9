defmodule ExZarr.Interop.ZarrToExZarrTest do
  @moduledoc """
  Direction A: zarr-python 3.x writes arrays (v2 and v3, every dtype, both byte orders, C/F
  order, both separators, gzip/zlib/none, special fill values, edge and missing chunks) in one
  Python process; ExZarr reads each whole, in slices crossing chunk boundaries and as a chunk
  stream.
  """
  use ExZarr.Test.Interop.Suite,
    cases: :zarr_to_exzarr,
    mode: :read,
    label: "ExZarr reads zarr-python's"
end
