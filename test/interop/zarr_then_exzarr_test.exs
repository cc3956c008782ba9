defmodule ExZarr.Interop.ZarrThenExZarrTest do
  @moduledoc """
  Mixed writers: zarr-python writes the case matrix, ExZarr overwrites a region crossing chunk
  boundaries (read-modify-write of chunks zarr-python encoded, deleting chunks that become all
  fill), then zarr-python and tensorstore read the result and compare it bit for bit, and the
  stored chunk keys must be those zarr-python stores when it makes both writes itself.
  """
  use ExZarr.Test.Interop.Suite,
    cases: :zarr_then_exzarr,
    mode: :modify,
    label: "zarr-python reads, after ExZarr's update,"
end
