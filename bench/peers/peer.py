"""One Python peer of `make bench`: runs one task with one library and prints a JSON result.

    python peer.py TASK_JSON_FILE

The task (written by bench/lib/peer.ex) names the library ("zarr-python", "zarrs",
"tensorstore"), the workload and its parameters; the ExZarr side runs the same task in
bench/lib/workloads/*.ex. Every library reads the raw input file the orchestrator generated
(np.fromfile), writes its own store and reads its own store back. Times are wall-clock seconds
(time.perf_counter); memory is the process's resident set (VmRSS/VmHWM from /proc/self/status,
peak reset through /proc/self/clear_refs), the same measure the ExZarr side uses.

The last line of stdout is the JSON result: {"rows": [{"group", "op", "samples", ...}], ...}.
"""

import gc
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


# --------------------------------------------------------------------------- libraries


class ZarrPython:
    """zarr-python 3 with its default (Python) codec pipeline."""

    name = "zarr-python"

    def __init__(self, concurrency):
        import zarr

        self.zarr = zarr
        settings = {"codec_pipeline.path": self.pipeline()}
        if concurrency:
            # The executor is created on first use, so this must happen before any I/O.
            settings.update({"async.concurrency": concurrency, "threading.max_workers": concurrency})
        zarr.config.set(settings)
        self.settings = settings

    def pipeline(self):
        return "zarr.core.codec_pipeline.BatchedCodecPipeline"

    def version(self):
        return self.zarr.__version__

    def create(self, path, shape, chunks, dtype, compressor):
        return self.zarr.create_array(
            store=path,
            shape=tuple(shape),
            chunks=tuple(chunks),
            dtype=dtype,
            compressors=_zarr_compressors(self.zarr, compressor),
            fill_value=0,
            zarr_format=3,
            overwrite=True,
        )

    def open(self, path):
        return self.zarr.open_array(path, mode="r")

    def write(self, array, data, selection=Ellipsis):
        array[selection] = data

    def read(self, array, selection=Ellipsis):
        return array[selection]


class Zarrs(ZarrPython):
    """zarr-python 3 with the Rust codec pipeline of the `zarrs` package (strict: no fallback)."""

    name = "zarrs"

    def __init__(self, concurrency):
        super().__init__(concurrency)
        extra = {"codec_pipeline.strict": True}
        if concurrency:
            extra["codec_pipeline.chunk_concurrent_maximum"] = concurrency
        self.zarr.config.set(extra)

    def pipeline(self):
        return "zarrs.ZarrsCodecPipeline"

    def version(self):
        return "zarr %s + zarrs %s" % (self.zarr.__version__, importlib.metadata.version("zarrs"))


class TensorStore:
    """tensorstore's zarr3 driver on the local file kvstore, cache disabled (the default)."""

    name = "tensorstore"

    def __init__(self, concurrency):
        import tensorstore as ts

        self.ts = ts
        spec = {}
        if concurrency:
            spec = {
                "data_copy_concurrency": {"limit": concurrency},
                "file_io_concurrency": {"limit": concurrency},
            }
        self.context = ts.Context(spec)

    def version(self):
        return importlib.metadata.version("tensorstore")

    def create(self, path, shape, chunks, dtype, compressor):
        codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
        if compressor:
            codecs.append(_v3_compressor(compressor))
        spec = {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": path},
            "metadata": {
                "shape": list(shape),
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
                "chunk_key_encoding": {"name": "default"},
                "data_type": dtype,
                "codecs": codecs,
                "fill_value": 0,
            },
        }
        return self.ts.open(spec, create=True, delete_existing=True, context=self.context).result()

    def open(self, path):
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
        return self.ts.open(spec, open=True, read=True, context=self.context).result()

    def write(self, array, data, selection=Ellipsis):
        array[selection].write(data).result()

    def read(self, array, selection=Ellipsis):
        return array[selection].read().result()


LIBRARIES = {cls.name: cls for cls in (ZarrPython, Zarrs, TensorStore)}


def _v3_compressor(compressor):
    cid = compressor["id"]
    if cid == "zstd":
        return {"name": "zstd", "configuration": {"level": compressor.get("level", 3), "checksum": False}}
    if cid == "gzip":
        return {"name": "gzip", "configuration": {"level": compressor.get("level", 5)}}
    raise ValueError("unsupported compressor for the bench: %r" % (compressor,))


def _zarr_compressors(zarr, compressor):
    if not compressor:
        return None
    cid = compressor["id"]
    if cid == "zstd":
        return [zarr.codecs.ZstdCodec(level=compressor.get("level", 3), checksum=False)]
    if cid == "gzip":
        return [zarr.codecs.GzipCodec(level=compressor.get("level", 5))]
    raise ValueError("unsupported compressor for the bench: %r" % (compressor,))


# --------------------------------------------------------------------------- helpers


def _status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no %s in /proc/self/status" % field)


def _reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def _load(task):
    data = np.fromfile(task["raw"], dtype=np.dtype(task["dtype"]).newbyteorder("<"))
    return data.reshape(task["shape"])


def _digest(arrays):
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes())
    return h.hexdigest()


def _slices(start, stop):
    return tuple(slice(a, b) for a, b in zip(start, stop))


def _stored_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            if name != "zarr.json":
                total += os.path.getsize(os.path.join(root, name))
    return total


def _chunk_selections(shape, chunks):
    grid = [range(0, n, c) for n, c in zip(shape, chunks)]
    out = [()]
    for axis, starts in enumerate(grid):
        out = [s + (slice(b, min(b + chunks[axis], shape[axis])),) for s in out for b in starts]
    return out


def _fresh(path):
    """Removes an old store before a timed write (untimed, as on the ExZarr side)."""
    shutil.rmtree(path, ignore_errors=True)


def _timed(fun):
    t0 = time.perf_counter()
    result = fun()
    return time.perf_counter() - t0, result


# --------------------------------------------------------------------------- workloads


def single_chunk(lib, task):
    """Workload 1: one op (write or read) of a one-chunk array, memory measured around it."""
    dtype, shape, comp = task["dtype"], task["shape"], task["compressor"]
    warm = task["store"] + ".warm"
    small = lib.create(warm, [8, 8], [8, 8], dtype, comp)
    lib.write(small, np.ones((8, 8), dtype=dtype))
    lib.read(lib.open(warm))
    del small
    if task["op"] == "write":
        _fresh(task["store"])
    gc.collect()
    _reset_peak()
    baseline = _status("VmRSS")
    if task["op"] == "write":
        data = _load(task)
        t0 = time.perf_counter()
        lib.write(lib.create(task["store"], shape, shape, dtype, comp), data)
        seconds = time.perf_counter() - t0
        digest = None
    else:
        t0 = time.perf_counter()
        data = lib.read(lib.open(task["store"]))
        seconds = time.perf_counter() - t0
    peak = _status("VmHWM")
    if task["op"] == "read":
        digest = _digest([data])
    return {
        "rows": [{"group": task["group"], "op": task["op"], "samples": [seconds], "digest": digest}],
        "baseline_bytes": baseline,
        "peak_bytes": peak,
        "array_bytes": int(data.nbytes),
    }


def slicing(lib, task):
    """Workload 2: full write/read, random regions and slabs, for each chunking."""
    data = _load(task)
    runs, rows = task["runs"], []
    region_shape = task["region_shape"]
    regions = [_slices(r, [a + b for a, b in zip(r, region_shape)]) for r in task["regions"]]
    for chunking in task["chunkings"]:
        group, path = chunking["name"], os.path.join(task["store_root"], chunking["name"])

        def write():
            _fresh(path)
            t0 = time.perf_counter()
            lib.write(lib.create(path, task["shape"], chunking["chunks"], task["dtype"], task["compressor"]), data)
            return time.perf_counter() - t0

        rows.append({"group": group, "op": "write_full", "samples": [write() for _ in range(runs)]})
        array = lib.open(path)
        samples, digest = [], None
        for i in range(runs):
            seconds, out = _timed(lambda: lib.read(array))
            samples.append(seconds)
            if i == 0:
                digest = _digest([out])
            del out
        rows.append({"group": group, "op": "read_full", "samples": samples, "digest": digest})
        samples = []
        for i in range(runs):
            outs = []
            seconds, _ = _timed(lambda: [outs.append(lib.read(array, sel)) for sel in regions])
            samples.append(seconds)
            if i == 0:
                digest = _digest(outs)
        rows.append({"group": group, "op": "regions", "samples": samples, "digest": digest})
        for op in ("row_slab", "col_slab"):
            sel = _slices(*task[op])
            samples = []
            for i in range(runs):
                seconds, out = _timed(lambda: lib.read(array, sel))
                samples.append(seconds)
                if i == 0:
                    digest = _digest([out])
            rows.append({"group": group, "op": op, "samples": samples, "digest": digest})
        del array
    return {"rows": rows}


def concurrency(lib, task):
    """Workload 3: read every chunk on its own, `concurrency` at a time (threads)."""
    c = task["concurrency"]
    if task.get("create"):
        _fresh(task["store"])
        lib.write(lib.create(task["store"], task["shape"], task["chunks"], task["dtype"], task["compressor"]), _load(task))
    array = lib.open(task["store"])
    selections = _chunk_selections(task["shape"], task["chunks"])
    samples = []
    with ThreadPoolExecutor(max_workers=c) as pool:
        for _ in range(task["runs"]):
            seconds, _ = _timed(lambda: list(pool.map(lambda sel: lib.read(array, sel), selections)))
            samples.append(seconds)
    return {"rows": [{"group": "chunks", "op": "c%d" % c, "samples": samples}]}


def zstd_levels(lib, task):
    """Workload 4: write (encode) and read (decode) at each zstd level, one worker."""
    data = _load(task)
    rows = []
    for level in task["levels"]:
        path = os.path.join(task["store_root"], "level%d" % level)
        comp = {"id": "zstd", "level": level}
        writes = []
        for _ in range(task["runs"]):
            _fresh(path)
            writes.append(_timed(lambda: lib.write(lib.create(path, task["shape"], task["chunks"], task["dtype"], comp), data))[0])
        array = lib.open(path)
        reads, digest = [], None
        for i in range(task["runs"]):
            seconds, out = _timed(lambda: lib.read(array))
            reads.append(seconds)
            if i == 0:
                digest = _digest([out])
        stored = _stored_bytes(path)
        group = "level %d" % level
        rows.append({"group": group, "op": "encode", "samples": writes, "stored_bytes": stored})
        rows.append({"group": group, "op": "decode", "samples": reads, "digest": digest, "stored_bytes": stored})
    return {"rows": rows}


WORKLOADS = {
    "single_chunk": single_chunk,
    "slicing": slicing,
    "concurrency": concurrency,
    "zstd_levels": zstd_levels,
}


def main():
    with open(sys.argv[1]) as f:
        task = json.load(f)
    lib = LIBRARIES[task["lib"]](task.get("concurrency"))
    result = WORKLOADS[task["workload"]](lib, task)
    result["lib"] = lib.name
    result["version"] = lib.version()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
