"""zarr-python as the oracle of ExZarr's selections (test/interop/selection_test.exs).

Reads a JSON list of cases from argv[1]; for each case opens the array at `path` and answers
every read with numpy's z.oindex / z.vindex / z.blocks / z[slices], and for every write applies
the same selection write to the copy at `py_path` and compares the whole array with the copy
ExZarr wrote (`ex_path`). Writes one JSON answer to argv[2]: per case, the reads' results and
per write whether the two copies are equal. Results are base64 of little-endian C-order bytes,
or lists of str for string arrays; `{"error": message}` where zarr-python itself fails.
"""
import base64
import json
import sys

import numpy as np
import zarr


def entry(e):
    if e == "all":
        return slice(None)
    kind, value = next(iter(e.items()))
    if kind == "int":
        return value
    if kind == "slice":
        return slice(*value)
    if kind == "list":
        return np.array(value, dtype=np.int64)
    if kind == "mask":
        return np.array(value, dtype=bool)
    raise ValueError(e)


def selector(z, kind, sel):
    if kind == "orthogonal":
        return z.oindex, tuple(entry(e) for e in sel)
    if kind == "blocks":
        return z.blocks, tuple(entry(e) for e in sel)
    if kind == "step":
        return z, tuple(slice(*s) for s in sel)
    if kind == "coordinates":
        cols = [np.array(c, dtype=np.int64) for c in zip(*sel)] if sel else [
            np.array([], dtype=np.int64) for _ in z.shape]
        return z.vindex, tuple(cols)
    if kind == "mask":
        mask = np.frombuffer(base64.b64decode(sel), dtype=np.uint8).astype(bool)
        return z.vindex, mask.reshape(z.shape)
    raise ValueError(kind)


def encode(x, dtype):
    x = np.asarray(x)
    if dtype == "string":
        return [str(v) for v in x.reshape(-1).tolist()]
    return base64.b64encode(np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<")).tobytes()).decode()


def main():
    cases = json.load(open(sys.argv[1]))
    answers = []
    for c in cases:
        z = zarr.open_array(c["path"], mode="r")
        reads = []
        for r in c["reads"]:
            try:
                target, key = selector(z, r["kind"], r["sel"])
                reads.append(encode(target[key], c["dtype"]))
            except Exception as e:  # zarr-python cannot answer: no oracle for this one
                reads.append({"error": f"{type(e).__name__}: {e}"})
        writes = []
        for w in c["writes"]:
            zp = zarr.open_array(w["py_path"], mode="r+")
            target, key = selector(zp, w["kind"], w["sel"])
            shape = tuple(w["shape"])
            values = np.frombuffer(base64.b64decode(w["data"]), dtype=zp.dtype.newbyteorder("<")).reshape(shape)
            try:
                target[key] = values
            except Exception as e:  # zarr-python cannot write it: no oracle for this one
                writes.append({"error": f"{type(e).__name__}: {e}"})
                continue
            ze = zarr.open_array(w["ex_path"], mode="r")
            writes.append(bool(np.array_equal(ze[...], zp[...], equal_nan=zp.dtype.kind in "fc")))
        answers.append({"reads": reads, "writes": writes})
    json.dump(answers, open(sys.argv[2], "w"))


main()
