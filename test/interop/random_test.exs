defmodule ExZarr.Interop.RandomReadTest do
  @moduledoc """
  Pseudo-random 1-d to 4-d arrays (shapes, chunks up to larger than the shape, regions,
  selections, v3 transpose permutations, crc32c) written by zarr-python and read by ExZarr.
  Reproducible; set `EXZARR_INTEROP_SEED` to explore other cases.
  """
  use ExZarr.Test.Interop.Suite,
    cases: :random_zarr_to_exzarr,
    mode: :read,
    label: "ExZarr reads zarr-python's"
end

defmodule ExZarr.Interop.RandomWriteTest do
  @moduledoc """
  Pseudo-random 1-d to 4-d arrays written by ExZarr (whole, or a region in two pieces) and
  checked by zarr-python and tensorstore. Reproducible; set `EXZARR_INTEROP_SEED` to explore.
  """
  use ExZarr.Test.Interop.Suite,
    cases: :random_exzarr_to_zarr,
    mode: :write,
    label: "zarr-python reads ExZarr's"
end
