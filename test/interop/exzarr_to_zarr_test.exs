defmodule ExZarr.Interop.ExZarrToZarrTest do
  @moduledoc """
  Direction B: ExZarr writes the case matrix (whole-array writes, and partial writes in two
  pieces that leave chunks missing and read-modify-write shared chunks); zarr-python (and
  tensorstore, where it has the codecs) then reads every array in one Python process, compares
  it bit for bit, checks the metadata against zarr-python's for the same array, and checks that
  the stored chunk keys are exactly those zarr-python stores for the same writes.
  """
  use ExZarr.Test.Interop.Suite,
    cases: :exzarr_to_zarr,
    mode: :write,
    label: "zarr-python reads ExZarr's"
end
