"""Rectilinear chunk grids with the Python peers, for test/interop/rectilinear_test.exs.

  read  PEER PATH OUT          read the whole int32 array at PATH into OUT (raw little-endian)
  write PEER PATH SPEC DATA    create at PATH the array SPEC describes (JSON: shape, edges as
                               ExZarr writes chunk_shapes, fill_value, and inner: the inner
                               chunk shape when the grid is of shards) and write DATA into it

Exit status 0 when done, 3 when the peer refuses (its error on stdout), anything else a bug.
"""
import json
import sys

import numpy as np


def zarr_python(peer):
    import zarr

    if peer == "zarrs":
        zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})
    if peer == "zarr-python-newest":
        # experimental there, behind this switch
        zarr.config.set({"array.rectilinear_chunks": True})
    return zarr


def expand(axis, size):
    if isinstance(axis, int):
        return [axis] * max(1, -(-size // axis))
    out = []
    for e in axis:
        out += [e[0]] * e[1] if isinstance(e, list) else [e]
    return out


def read(peer, path):
    if peer == "tensorstore":
        import tensorstore as ts

        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}).result()
        return np.asarray(t.read().result())
    return zarr_python(peer).open_array(path, mode="r")[...]


def write(peer, path, spec, data):
    shape = spec["shape"]
    edges = [expand(a, n) for a, n in zip(spec["chunk_shapes"], shape)]
    if peer == "tensorstore":
        import tensorstore as ts

        grid = {"name": "rectilinear",
                "configuration": {"kind": "inline", "chunk_shapes": spec["chunk_shapes"]}}
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path},
                     "metadata": {"shape": shape, "data_type": "int32", "chunk_grid": grid,
                                  "fill_value": spec["fill_value"]},
                     "create": True}).result()
        t.write(data).result()
        return
    grid = {"chunks": edges}
    if spec.get("inner"):
        grid = {"shards": edges, "chunks": spec["inner"]}
    a = zarr_python(peer).create_array(
        store=path, shape=shape, dtype="int32", zarr_format=3,
        fill_value=spec["fill_value"], **grid)
    a[...] = data


def main():
    mode, peer, path = sys.argv[1:4]
    try:
        if mode == "read":
            arr = read(peer, path)
            with open(sys.argv[4], "wb") as f:
                f.write(np.ascontiguousarray(arr, dtype="<i4").tobytes())
        else:
            spec = json.loads(sys.argv[4])
            with open(sys.argv[5], "rb") as f:
                data = np.frombuffer(f.read(), dtype="<i4").reshape(spec["shape"])
            write(peer, path, spec, data)
    except (TypeError, ValueError, NotImplementedError) as e:  # the peer refuses
        print(f"{type(e).__name__}: {e}")
        sys.exit(3)


main()
