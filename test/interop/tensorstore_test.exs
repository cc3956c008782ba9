defmodule ExZarr.Interop.TensorstoreTest do
  @moduledoc """
  Tensorstore (zarr and zarr3 drivers) writes arrays in one Python process; ExZarr reads them.
  Tensorstore writes metadata differently from zarr-python (no `.zattrs`, a v3 `v2` key
  encoding without configuration, keys in another order).
  """
  use ExZarr.Test.Interop.Suite,
    cases: :tensorstore,
    mode: :read,
    label: "ExZarr reads tensorstore's"
end
