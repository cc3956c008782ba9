defmodule ExZarr.Test.NumcodecsPeer do
  @moduledoc """
  Checks a codec against numcodecs (in the test venv) on whole buffers, and reads the chunk
  files of an array directory for byte-for-byte comparisons.

  `compare/2` takes cases `%{"name", "config" (a numcodecs config), "dtype" (numpy), "shape"?}`
  whose input is `<dir>/<name>.data` and ExZarr's encoding `<dir>/<name>.ex`; numcodecs encodes
  the input to `<name>.py` and decodes ExZarr's encoding to `<name>.pydec`. It returns the names
  of the cases whose encodings differ or whose decoding has another shape.
  """
  alias ExZarr.Test.Python

  @script """
  import json, os, sys
  import numpy as np, numcodecs
  d = sys.argv[1]
  bad = []
  for c in json.load(open(os.path.join(d, "cases.json"))):
      codec = numcodecs.get_codec(c["config"])
      p = os.path.join(d, c["name"])
      data = np.fromfile(p + ".data", dtype=c["dtype"])
      if "shape" in c:
          data = data.reshape(c["shape"])
      theirs = bytes(codec.encode(data))
      open(p + ".py", "wb").write(theirs)
      decoded = np.asarray(codec.decode(open(p + ".ex", "rb").read()))
      open(p + ".pydec", "wb").write(decoded.tobytes())
      if theirs != open(p + ".ex", "rb").read() or decoded.size != data.size:
          bad.append(c["name"])
  print(json.dumps(bad))
  """

  @doc "Runs the cases (see the module doc); the names of those that differ."
  @spec compare(String.t(), [map()]) :: [String.t()]
  def compare(dir, cases) do
    File.write!(Path.join(dir, "cases.json"), :jiffy.encode(cases))
    last_json(Python.run!(@script, [dir]))
  end

  @doc "The JSON value on the last line of a script's output."
  @spec last_json(String.t()) :: term()
  def last_json(out),
    do: out |> String.split("\n", trim: true) |> List.last() |> :jiffy.decode([:return_maps])

  @doc """
  The chunk files of an array directory (everything but metadata), by relative path, each
  passed through `transform`.
  """
  @spec chunk_files(String.t(), (binary() -> binary())) :: %{String.t() => binary()}
  def chunk_files(path, transform \\ & &1) do
    for file <- Path.wildcard(Path.join(path, "**"), match_dot: true),
        File.regular?(file),
        Path.basename(file) not in ~w(.zarray .zattrs .zgroup zarr.json),
        into: %{},
        do: {Path.relative_to(file, path), transform.(File.read!(file))}
  end
end
