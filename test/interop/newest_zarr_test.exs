# The interop suites (case matrix, mixed writers, random arrays, native codecs) again with the
# newest zarr-python release (scripts/requirements-newest.txt) in place of the pinned 3.1.6,
# since users upgrade: the same cases, run through the same fixture script in the newest venv
# (`python: :newest`; tensorstore is not in that venv).
# Tagged `:newest_zarr`; skipped where there is no Python >= 3.12 for that venv.

defmodule ExZarr.Interop.NewestZarrToExZarrTest do
  @moduledoc "The newest zarr-python writes the case matrix; ExZarr reads it."
  use ExZarr.Test.Interop.Suite,
    cases: :zarr_to_exzarr,
    mode: :read,
    python: :newest,
    label: "ExZarr reads the newest zarr-python's"
end

defmodule ExZarr.Interop.ExZarrToNewestZarrTest do
  @moduledoc """
  ExZarr writes the case matrix; the newest zarr-python reads it bit for bit and checks the
  metadata and chunk keys against its own for the same writes.
  """
  use ExZarr.Test.Interop.Suite,
    cases: :exzarr_to_zarr,
    mode: :write,
    python: :newest,
    label: "the newest zarr-python reads ExZarr's"
end

defmodule ExZarr.Interop.NewestZarrThenExZarrTest do
  @moduledoc "The newest zarr-python writes, ExZarr updates a region, zarr-python reads."
  use ExZarr.Test.Interop.Suite,
    cases: :zarr_then_exzarr,
    mode: :modify,
    python: :newest,
    label: "the newest zarr-python reads, after ExZarr's update,"
end

defmodule ExZarr.Interop.NewestRandomZarrToExZarrTest do
  @moduledoc "The newest zarr-python writes pseudo-random 1-d to 4-d arrays; ExZarr reads them."
  use ExZarr.Test.Interop.Suite,
    cases: :random_zarr_to_exzarr,
    mode: :read,
    python: :newest,
    label: "ExZarr reads the newest zarr-python's"
end

defmodule ExZarr.Interop.NewestRandomExZarrToZarrTest do
  @moduledoc "ExZarr writes pseudo-random 1-d to 4-d arrays; the newest zarr-python reads them."
  use ExZarr.Test.Interop.Suite,
    cases: :random_exzarr_to_zarr,
    mode: :write,
    python: :newest,
    label: "the newest zarr-python reads ExZarr's"
end

defmodule ExZarr.Interop.NewestNativeCodecsTest do
  @moduledoc "The newest zarr-python writes zstd, blosc and lz4 arrays; ExZarr reads them."
  use ExZarr.Test.Interop.Suite,
    cases: :native_codecs,
    mode: :read,
    native: true,
    python: :newest,
    label: "ExZarr reads the newest zarr-python's"
end

defmodule ExZarr.Interop.NewestNativeCodecsWriteTest do
  @moduledoc "ExZarr writes zstd, blosc and lz4 arrays; the newest zarr-python reads them."
  use ExZarr.Test.Interop.Suite,
    cases: :native_codecs_exzarr,
    mode: :write,
    native: true,
    python: :newest,
    label: "the newest zarr-python reads ExZarr's"
end

defmodule ExZarr.Interop.NewestZarrVenvTest do
  @moduledoc "The suites above run a newer zarr-python than the pinned one, not the same twice."
  use ExUnit.Case, async: true

  alias ExZarr.Test.Python

  @moduletag :interop
  @moduletag :newest_zarr
  unless Python.executable(:newest) do
    @moduletag skip: "no venv of the newest zarr-python (it needs Python >= 3.12)"
  end

  test "the newest venv has the zarr of requirements-newest.txt, newer than the default venv's" do
    version = "import zarr; print(zarr.__version__)"
    newest = String.trim(Python.run!(version, [], :newest))
    pinned = String.trim(Python.run!(version))
    [_, wanted] = Regex.run(~r/^zarr==(\S+)$/m, File.read!("scripts/requirements-newest.txt"))
    assert newest == wanted
    assert Version.compare(newest, pinned) == :gt
  end
end
