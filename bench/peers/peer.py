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

import ml_dtypes  # noqa: F401 (registers "bfloat16" with numpy, for workload 10)
import numpy as np


# --------------------------------------------------------------------------- libraries


class ZarrPython:
    """zarr-python 3 with its default (Python) codec pipeline."""

    name = "zarr-python"
    # The numcodecs array->bytes codecs it writes in v3 (workload 4's serializers).
    serializers = ("pcodec", "zfpy")

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

    def create(self, path, shape, chunks, dtype, compressor, shards=None, serializer=None):
        return self.zarr.create_array(
            store=path,
            shape=tuple(shape),
            chunks=tuple(chunks),
            shards=tuple(shards) if shards else None,
            dtype=dtype,
            serializer=_zarr_serializer(serializer) if serializer else "auto",
            compressors=_zarr_compressors(self.zarr, compressor),
            fill_value=0,
            zarr_format=3,
            overwrite=True,
        )

    def open(self, path):
        return self.zarr.open_array(path, mode="r")

    def open_writable(self, path):
        return self.zarr.open_array(path, mode="r+")

    def open_cached(self, path, nbytes):
        """The array through zarr-python's experimental CacheStore (stored bytes, in memory)."""
        from zarr.experimental.cache_store import CacheStore
        from zarr.storage import LocalStore, MemoryStore

        store = CacheStore(LocalStore(path, read_only=True), cache_store=MemoryStore(), max_size=nbytes)
        return self.zarr.open_array(store=store, mode="r")

    def write(self, array, data, selection=Ellipsis):
        array[selection] = data

    def read(self, array, selection=Ellipsis):
        return array[selection]

    def select(self, array, kind, selection):
        """A selection read: kind "basic" (steps), "oindex" or "vindex"."""
        return array[selection] if kind == "basic" else getattr(array, kind)[selection]


class Zarrs(ZarrPython):
    """zarr-python 3 with the Rust codec pipeline of the `zarrs` package (strict: no fallback)."""

    name = "zarrs"
    # zarrs (0.2.3) has numcodecs.pcodec but not numcodecs.zfpy (UnsupportedMetadataError).
    serializers = ("pcodec",)

    def __init__(self, concurrency):
        if concurrency:
            # zarrs decodes and encodes on rayon's global pool, whose size neither
            # `threading.max_workers` nor `chunk_concurrent_maximum` caps (measured: CPU time
            # 1.8x wall time on 2 cores at concurrency 1). The pool reads this variable when
            # it starts, at the first codec call, so setting it here is early enough.
            os.environ["RAYON_NUM_THREADS"] = str(concurrency)
        super().__init__(concurrency)
        extra = {"codec_pipeline.strict": True}
        if concurrency:
            extra["codec_pipeline.chunk_concurrent_maximum"] = concurrency
        self.zarr.config.set(extra)

    def pipeline(self):
        return "zarrs.ZarrsCodecPipeline"

    # zarrs has no cache of its own.
    open_cached = None

    # zarrs (strict) supports no step, oindex or vindex (DiscontiguousArrayError,
    # UnsupportedVIndexingError): workload 9 has no zarrs cells.
    select = None

    def version(self):
        return "zarr %s + zarrs %s" % (self.zarr.__version__, importlib.metadata.version("zarrs"))


class TensorStore:
    """tensorstore's zarr3 driver on the local file kvstore (or a kvstore spec given as the
    path, e.g. s3), cache disabled (the default)."""

    name = "tensorstore"
    # tensorstore's zarr3 driver has neither numcodecs.pcodec nor numcodecs.zfpy.
    serializers = ()

    def __init__(self, concurrency):
        import tensorstore as ts

        self.ts = ts
        spec = {}
        if concurrency:
            spec = {
                "data_copy_concurrency": {"limit": concurrency},
                "file_io_concurrency": {"limit": concurrency},
                "s3_request_concurrency": {"limit": concurrency},
            }
        self.context = ts.Context(spec)

    def version(self):
        return importlib.metadata.version("tensorstore")

    def create(self, path, shape, chunks, dtype, compressor, shards=None, serializer=None):
        if serializer:
            raise ValueError("tensorstore has no %s codec" % serializer["id"])
        codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
        if compressor:
            codecs.append(_v3_compressor(compressor))
        if shards:
            index = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
            sharding = {"chunk_shape": list(chunks), "codecs": codecs, "index_codecs": index, "index_location": "end"}
            codecs, chunks = [{"name": "sharding_indexed", "configuration": sharding}], shards
        spec = {
            "driver": "zarr3",
            "kvstore": _ts_kvstore(path),
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
        spec = {"driver": "zarr3", "kvstore": _ts_kvstore(path)}
        return self.ts.open(spec, open=True, read=True, context=self.context).result()

    def open_writable(self, path):
        spec = {"driver": "zarr3", "kvstore": _ts_kvstore(path)}
        return self.ts.open(spec, open=True, read=True, write=True, context=self.context).result()

    def open_cached(self, path, nbytes):
        """The array with a cache_pool of `nbytes` (decoded chunks), in a fresh context."""
        context = self.ts.Context({"cache_pool": {"total_bytes_limit": nbytes}})
        spec = {"driver": "zarr3", "kvstore": _ts_kvstore(path), "recheck_cached_data": "open"}
        return self.ts.open(spec, open=True, read=True, context=context).result()

    def write(self, array, data, selection=Ellipsis):
        array[selection].write(data).result()

    def read(self, array, selection=Ellipsis):
        return array[selection].read().result()

    def select(self, array, kind, selection):
        """A selection read: kind "basic" (strides), "oindex" or "vindex"."""
        view = array[selection] if kind == "basic" else getattr(array, kind)[selection]
        return view.read().result()


def _ts_kvstore(path):
    return path if isinstance(path, dict) else {"driver": "file", "path": path}


class Rechunker:
    """rechunker with zarr 2 (its own venv, `scripts/setup --rechunker-venv-path`: rechunker
    0.5.4 needs zarr < 3); only workload 12's `rechunker` task."""

    name = "rechunker"

    def __init__(self, concurrency):
        import rechunker
        import zarr

        self.rechunker = rechunker
        self.zarr = zarr

    def version(self):
        return "rechunker %s, zarr %s" % (self.rechunker.__version__, self.zarr.__version__)


LIBRARIES = {cls.name: cls for cls in (ZarrPython, Zarrs, TensorStore, Rechunker)}


SHUFFLES = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


def _v3_compressor(compressor):
    """The v3 codec for a numcodecs-style compressor of the task (zstd, gzip, blosc)."""
    cid = compressor["id"]
    if cid == "zstd":
        return {"name": "zstd", "configuration": {"level": compressor.get("level", 3), "checksum": False}}
    if cid == "gzip":
        return {"name": "gzip", "configuration": {"level": compressor.get("level", 5)}}
    if cid == "blosc":
        config = {k: compressor[k] for k in ("cname", "clevel", "blocksize")}
        config.update(shuffle=SHUFFLES[compressor["shuffle"]], typesize=compressor["typesize"])
        return {"name": "blosc", "configuration": config}
    raise ValueError("unsupported compressor for the bench: %r" % (compressor,))


def _zarr_serializer(config):
    """numcodecs' v3 array->bytes codec for a numcodecs config (pcodec, zfpy)."""
    import numcodecs.zarr3 as nz

    config = dict(config)
    cls = {"pcodec": nz.PCodec, "zfpy": nz.ZFPY}[config.pop("id")]
    return cls(**config)


def _zarr_compressors(zarr, compressor):
    if not compressor:
        return None
    codec = _v3_compressor(compressor)
    classes = {"zstd": zarr.codecs.ZstdCodec, "gzip": zarr.codecs.GzipCodec, "blosc": zarr.codecs.BloscCodec}
    return [classes[codec["name"]](**codec["configuration"])]


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


def _file_count(path):
    return sum(len(files) for _root, _dirs, files in os.walk(path))


def _chunk_selections(shape, chunks):
    grid = [range(0, n, c) for n, c in zip(shape, chunks)]
    out = [()]
    for axis, starts in enumerate(grid):
        out = [s + (slice(b, min(b + chunks[axis], shape[axis])),) for s in out for b in starts]
    return out


def _fresh(path):
    """Removes an old store before a timed write (untimed, as on the ExZarr side)."""
    shutil.rmtree(path, ignore_errors=True)


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


def _measure(runs, fun, before=None, check=None):
    """Runs `fun` once untimed (warm-up; `check` of its result is returned, e.g. a digest), then
    `runs` timed times; `before` runs untimed ahead of each call. Returns (samples, checked)."""
    if before:
        before()
    first = fun()
    checked = check(first) if check else None
    del first
    samples = []
    for _ in range(runs):
        if before:
            before()
        t0 = time.perf_counter()
        fun()
        samples.append(time.perf_counter() - t0)
    return samples, checked


def _write_rows(lib, task, path, chunks, compressor, data, group, op, shards=None, serializer=None, runs=None):
    samples, _ = _measure(
        runs or task["runs"],
        lambda: lib.write(
            lib.create(path, task["shape"], chunks, task["dtype"], compressor, shards, serializer=serializer), data
        ),
        before=lambda: _fresh(path),
    )
    return {"group": group, "op": op, "samples": samples}


def _read_rows(lib, runs, selections, group, op):
    samples, digest = _measure(runs, lambda: [lib.read(*sel) for sel in selections], check=_digest)
    return {"group": group, "op": op, "samples": samples, "digest": digest}


def slicing(lib, task):
    """Workload 2: full write/read, random regions and slabs, for each chunking."""
    data = _load(task)
    runs, rows = task["runs"], []
    region_shape = task["region_shape"]
    regions = [_slices(r, [a + b for a, b in zip(r, region_shape)]) for r in task["regions"]]
    for chunking in task["chunkings"]:
        group, path = chunking["name"], os.path.join(task["store_root"], chunking["name"])
        rows.append(
            _write_rows(
                lib, task, path, chunking["chunks"], task["compressor"], data, group, "write_full",
                runs=task["write_repeats"],
            )
        )
        array = lib.open(path)
        rows.append(_read_rows(lib, runs, [(array,)], group, "read_full"))
        rows.append(_read_rows(lib, runs, [(array, sel) for sel in regions], group, "regions"))
        for op in ("row_slab", "col_slab"):
            rows.append(_read_rows(lib, task["repeats"], [(array, _slices(*task[op]))], group, op))
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
    with ThreadPoolExecutor(max_workers=c) as pool:
        samples, _ = _measure(task["runs"], lambda: list(pool.map(lambda sel: lib.read(array, sel), selections)))
    return {"rows": [{"group": "chunks", "op": "c%d" % c, "samples": samples}]}


def zstd_levels(lib, task):
    """Workload 4: write (encode) and read (decode) at each zstd level, then with each array
    codec (pcodec, zfp) the library has, one worker, each timed `repeats` times."""
    data, repeats = _load(task), task["repeats"]
    runs = [("level %d" % level, "level%d" % level, {"id": "zstd", "level": level}, None) for level in task["levels"]]
    runs += [
        (c["name"], "codec%d" % i, None, c["config"])
        for i, c in enumerate(task.get("array_codecs", []))
        if c["config"]["id"] in lib.serializers
    ]
    rows = []
    for group, name, compressor, serializer in runs:
        path = os.path.join(task["store_root"], name)
        encode = _write_rows(
            lib, task, path, task["chunks"], compressor, data, group, "encode", serializer=serializer, runs=repeats
        )
        decode = _read_rows(lib, repeats, [(lib.open(path),)], group, "decode")
        stored = _stored_bytes(path)
        encode["stored_bytes"] = decode["stored_bytes"] = stored
        rows += [encode, decode]
    return {"rows": rows}


def full_io(lib, task):
    """Workload 10: full write and full read of one array per compressor (a bfloat16 array)."""
    data, rows = _load(task), []
    for comp in task["compressors"]:
        group, path = comp["name"], os.path.join(task["store_root"], comp["name"])
        rows.append(_write_rows(lib, task, path, task["chunks"], comp["compressor"], data, group, "write"))
        rows.append(_read_rows(lib, task["runs"], [(lib.open(path),)], group, "read"))
        rows[-1]["stored_bytes"] = _stored_bytes(path)
    return {"rows": rows}


def sharded(lib, task):
    """Workload 5: a sharded uint8 volume: full write, full read, latency of each random cutout."""
    data, path, runs = _load(task), task["store"], task["runs"]
    inner, shards, comp = task["chunks"], task["shards"], task["compressor"]
    write = _write_rows(lib, task, path, inner, comp, data, "volume", "write_full", shards=shards)
    write.update(stored_bytes=_stored_bytes(path), files=_file_count(path))
    array = lib.open(path)
    read = _read_rows(lib, runs, [(array,)], "volume", "read_full")
    return {"rows": [write, read, _cutout_row(lib, array, task)]}


def _cutout_row(lib, array, task):
    """Each of the task's cutouts read and timed, after the first `warm_cutouts` untimed."""
    cut = task["cutout_shape"]
    cutouts = [_slices(c, [a + b for a, b in zip(c, cut)]) for c in task["cutouts"]]
    for sel in cutouts[: task["warm_cutouts"]]:
        lib.read(array, sel)
    latencies, outs = [], []
    for sel in cutouts:
        t0 = time.perf_counter()
        outs.append(lib.read(array, sel))
        latencies.append(time.perf_counter() - t0)
    return {"group": "volume", "op": "cutout", "samples": latencies, "digest": _digest(outs)}


def http(lib, task):
    """Workload 7: one sharded store served by nginx, read over HTTP by every library (fsspec's
    http filesystem for zarr-python and zarrs, the `http` kvstore for tensorstore) with
    `concurrency` requests in flight: full reads, then the latency of each random cutout."""
    url, c = task["url"], task["concurrency"]
    if lib.name == "tensorstore":
        lib.context = lib.ts.Context({"http_request_concurrency": {"limit": c}, "data_copy_concurrency": {"limit": c}})
        store = {"driver": "http", "base_url": url}
    else:
        store = lib.zarr.storage.FsspecStore.from_url(url, read_only=True)
    array = lib.open(store)
    read = _read_rows(lib, task["runs"], [(array,)], "volume", "read_full")
    return {"rows": [read, _cutout_row(lib, array, task)]}


def _s3_store(lib, task, prefix, concurrency):
    """The store at `prefix` in the task's MinIO bucket, as `lib.create`/`lib.open` take it:
    an s3fs-backed FsspecStore for zarr-python (its connection pool as large as the
    concurrency), a kvstore spec for tensorstore."""
    s3 = task["s3"]
    if lib.name == "tensorstore":
        os.environ.update(AWS_ACCESS_KEY_ID=s3["access_key_id"], AWS_SECRET_ACCESS_KEY=s3["secret_access_key"])
        return {
            "driver": "s3",
            "bucket": s3["bucket"],
            "path": prefix + "/",
            "endpoint": s3["endpoint"],
            "aws_region": s3["region"],
            "aws_credentials": {"type": "environment"},
        }
    options = _s3_options(s3, concurrency)
    return lib.zarr.storage.FsspecStore.from_url("s3://%s/%s" % (s3["bucket"], prefix), storage_options=options)


def _s3_options(s3, concurrency):
    """s3fs's options for the task's MinIO server `s3`, with a connection pool of `concurrency`."""
    return {
        "key": s3["access_key_id"],
        "secret": s3["secret_access_key"],
        "endpoint_url": s3["endpoint"],
        "client_kwargs": {"region_name": s3["region"]},
        "config_kwargs": {"max_pool_connections": max(10, concurrency)},
    }


def _s3_limit(lib, c):
    """Sets the library's S3 requests in flight to `c` for the stores and arrays opened next
    (the stores from `_s3_store` size their connection pools by `c` too)."""
    if lib.name == "tensorstore":
        lib.context = lib.ts.Context({"s3_request_concurrency": {"limit": c}, "data_copy_concurrency": {"limit": c}})
    else:
        lib.zarr.config.set({"async.concurrency": c})
        if lib.name == "zarrs":
            lib.zarr.config.set({"codec_pipeline.chunk_concurrent_maximum": c})


def object_store(lib, task):
    """Workload 6, on MinIO: full writes (each to a fresh prefix, the first one untimed) and
    full reads with `full_concurrency` requests in flight, then at each level `c` every chunk
    read on its own, `c` at a time (threads), with each chunk's latency; each timed `repeats`
    times."""
    runs, f, rows = task["repeats"], task["full_concurrency"], []
    _s3_limit(lib, f)
    data, writes = _load(task), iter(range(runs + 1))

    def write():
        store = _s3_store(lib, task, "%s-w%d" % (task["write_prefix"], next(writes)), f)
        lib.write(lib.create(store, task["shape"], task["chunks"], task["dtype"], task["compressor"]), data)

    rows.append({"group": "full", "op": "write", "samples": _measure(runs, write)[0]})
    array = lib.open(_s3_store(lib, task, task["read_prefix"], f))
    rows.append(_read_rows(lib, runs, [(array,)], "full", "read"))
    selections = _chunk_selections(task["shape"], task["chunks"])
    for c in task["levels"]:
        _s3_limit(lib, c)
        array, latencies = lib.open(_s3_store(lib, task, task["read_prefix"], c)), []

        def timed(sel):
            t0 = time.perf_counter()
            out = lib.read(array, sel)
            latencies.append(time.perf_counter() - t0)
            return out

        with ThreadPoolExecutor(max_workers=c) as pool:
            samples, digest = _measure(runs, lambda: list(pool.map(timed, selections)), check=_digest)
        rows.append({"group": "c%d" % c, "op": "wall", "samples": samples, "digest": digest})
        rows.append({"group": "c%d" % c, "op": "latency", "samples": latencies[len(selections) :]})
    return {"rows": rows}


def chunk_cache(lib, task):
    """Workload 8: sliding windows read cold (fresh handle and cache) and warm, without a cache
    and with the library's own (none for zarrs)."""
    path, runs, rows = task["store"], task["runs"], []
    lib.write(lib.create(path, task["shape"], task["chunks"], task["dtype"], task["compressor"]), _load(task))
    windows = [_slices(w, [a + b for a, b in zip(w, task["window"])]) for w in task["windows"]]
    state = {}
    modes = [("none", lib.open)]
    if lib.open_cached:
        modes.append(("cache", lambda p: lib.open_cached(p, task["cache_bytes"])))
    for group, opener in modes:
        def reopen():
            state["array"] = opener(path)

        def read_all():
            return [lib.read(state["array"], sel) for sel in windows]

        for op, before in (("cold", reopen), ("warm", None)):
            if before is None:
                reopen()
            samples, digest = _measure(runs, read_all, before=before, check=_digest)
            rows.append({"group": group, "op": op, "samples": samples, "digest": digest})
    return {"rows": rows}


def selections(lib, task):
    """Workload 9: steps, orthogonal rows, an axis mask, and points of a sharded volume."""
    if lib.select is None:
        return {"rows": []}
    arrays = {}
    for name in ("field", "volume"):
        spec, path = task[name], os.path.join(task["store_root"], name)
        _fresh(path)
        created = lib.create(path, spec["shape"], spec["chunks"], spec["dtype"], spec["compressor"], spec.get("shards"))
        lib.write(created, _load(spec))
        del created
        arrays[name] = lib.open(path)
    s = task["step"]
    points = tuple(np.array(axis, dtype=np.int64) for axis in zip(*task["points"]))
    reads = [
        ("field", "step", "basic", (slice(None, None, s), slice(None, None, s))),
        ("field", "rows", "oindex", (np.array(task["rows"], dtype=np.int64), slice(None))),
        ("field", "mask", "oindex", (np.array(task["mask"], dtype=bool), slice(None))),
        ("volume", "points", "vindex", points),
    ]
    rows = []
    for group, op, kind, sel in reads:
        array = arrays[group]
        samples, digest = _measure(task["repeats"], lambda: [lib.select(array, kind, sel)], check=_digest)
        rows.append({"group": group, "op": op, "samples": samples, "digest": digest})
    return {"rows": rows}


def rechunk(lib, task):
    """Workload 12: a plain copy with new chunks (the venv has no Dask, rechunker or Cubed): the
    whole source read, then written with the target chunks."""
    src_path = os.path.join(task["store_root"], "source")
    dst_path = os.path.join(task["store_root"], "target")
    shape, dtype, comp = task["shape"], task["dtype"], task["compressor"]
    lib.write(lib.create(src_path, shape, task["source_chunks"], dtype, comp), _load(task))
    source = lib.open(src_path)

    def copy():
        lib.write(lib.create(dst_path, shape, task["target_chunks"], dtype, comp), lib.read(source))

    samples, _ = _measure(task["runs"], copy, before=lambda: _fresh(dst_path))
    digest = _digest([lib.read(lib.open(dst_path))])
    shutil.rmtree(task["store_root"], ignore_errors=True)
    return {"rows": [{"group": "rechunk", "op": "plain copy", "samples": samples, "digest": digest}]}


def _hwm_reset():
    """Resets this process's peak RSS (run in each Dask worker too)."""
    _reset_peak()
    return True


def _hwm():
    return _status("VmHWM")


def _engine_store(lib, task, name):
    """The store `name` of workload 12b: a folder under `store_root`, or with `s3` in the task
    a prefix of the MinIO bucket (a fresh one for each "target" there; a target folder is
    removed first)."""
    if task.get("s3"):
        name += "-%d" % time.monotonic_ns() if name == "target" else ""
        return _s3_store(lib, task, "%s/%s" % (task["prefix"], name), 8)
    path = os.path.join(task["store_root"], name)
    _fresh(path)
    return path


def _dask_job(client, job, src, dst, target_chunks):
    """The Dask graph of a job: `rechunk` (to `target_chunks`) or `map_blocks` (x * 2 + 1) of
    the zarr array `src`, stored into the zarr array `dst`; returns a future."""
    import dask.array as da

    x = da.from_zarr(src)
    y = x.rechunk(tuple(target_chunks)) if job == "rechunk" else x.map_blocks(lambda b: b * 2.0 + 1.0)
    return client.compute(y.to_zarr(dst, compute=False))


def _kill_worker(client):
    """SIGKILLs one of the client's worker processes (its nanny starts another; the scheduler
    recomputes the tasks whose results it held)."""
    import signal

    pids = client.run(os.getpid)
    os.kill(sorted(pids.values())[0], signal.SIGKILL)


def _dask_run(client, job, task, chunks, kill_after=None):
    """Runs one Dask job; with `kill_after` (seconds), SIGKILLs one worker process then.
    Returns (seconds, peak RSS per process: client then workers)."""
    lib = ZarrPython(None)
    dst = lib.create(_engine_store(lib, task, "target"), task["shape"], chunks, task["dtype"], task["compressor"])
    client.run(_hwm_reset)
    _reset_peak()
    start = time.perf_counter()
    future = _dask_job(client, job, lib.open(task["source"]), dst, chunks)
    if kill_after is not None:
        time.sleep(kill_after)
        _kill_worker(client)
    future.result()
    seconds = time.perf_counter() - start
    peaks = [_hwm()] + ([] if kill_after is not None else sorted(client.run(_hwm).values()))
    return seconds, peaks, dst


def _cubed_run(lib, task, job, chunks):
    """One Cubed job (rechunk or map_blocks) with its processes executor (2 workers)."""
    import cubed
    from cubed.runtime.executors.local import ProcessesExecutor

    spec = cubed.Spec(work_dir=os.path.join(task["store_root"], "cubed-work"), allowed_mem=task["cubed_mem"])
    x = cubed.from_zarr(task["source"], spec=spec)
    y = x.rechunk(tuple(chunks)) if job == "rechunk" else cubed.map_blocks(lambda b: b * 2.0 + 1.0, x, dtype=x.dtype)
    dst = _engine_store(lib, task, "target")
    _reset_peak()
    start = time.perf_counter()
    cubed.to_zarr(y, dst, executor=ProcessesExecutor(max_workers=2))
    return time.perf_counter() - start, [_hwm()], lib.open(dst)


def engines(lib, task):
    """Workload 12b: rechunk (row to column chunks) and map_blocks (x * 2 + 1) with Dask
    (LocalCluster, 2 worker processes of 1 thread) and Cubed (2 processes); and the Dask
    rechunk and map_blocks with one worker killed mid-job (at half the median time). `peaks`: the
    peak RSS per process (bytes, the client first) of each row; `killed_after`: seconds."""
    from dask.distributed import Client, LocalCluster

    shape, dtype, comp = task["shape"], task["dtype"], task["compressor"]
    task["source"] = _engine_store(lib, task, "source")
    lib.write(lib.create(task["source"], shape, task["source_chunks"], dtype, comp), _load(task))
    jobs = (("rechunk", task["target_chunks"]), ("map_blocks", task["source_chunks"]))
    rows, errors, peaks, killed = [], {}, {}, {}

    def row(group, op, runs):
        digest = _digest([lib.read(runs[0][2])])
        rows.append({"group": group, "op": op, "samples": [s for s, _, _ in runs], "digest": digest})
        peaks["%s %s" % (group, op)] = [max(p[i] for _, p, _ in runs) for i in range(len(runs[0][1]))]

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            for job, chunks in jobs:
                runs = [_dask_run(client, job, task, chunks) for _ in range(task["runs"] + 1)][1:]
                row("dask", job, runs)
            for job, chunks in jobs:
                op = job + ", 1 worker killed"
                killed[op] = float(np.median(rows[len(killed)]["samples"])) / 2
                try:
                    row("dask", op, [_dask_run(client, job, task, chunks, killed[op])])
                except Exception as e:  # Dask failing the job when a worker dies is a result too
                    errors["dask " + op] = "%s: %s" % (type(e).__name__, e)
    for job, chunks in jobs:
        try:
            row("cubed", job, [_cubed_run(lib, task, job, chunks) for _ in range(task["runs"])])
        except Exception as e:  # a version mismatch says so in the table instead of failing the peer
            errors["cubed " + job] = "%s: %s" % (type(e).__name__, e)
    import cubed
    import dask

    shutil.rmtree(task["store_root"], ignore_errors=True)
    versions = {"dask": dask.__version__, "cubed": cubed.__version__}
    return {"rows": rows, "errors": errors, "peaks": peaks, "killed_after": killed, "versions": versions}


def _rechunker_store(lib, task, name):
    """A zarr 2 store `name` of the rechunker task: a fresh folder under `store_root`, or with `s3`
    a fresh prefix of the MinIO bucket (an s3fs-backed FSStore)."""
    if task.get("s3"):
        s3 = task["s3"]
        url = "s3://%s/%s/rechunker-%s-%d" % (s3["bucket"], task["prefix"], name, time.monotonic_ns())
        return lib.zarr.storage.FSStore(url, **_s3_options(s3, 8))
    path = os.path.join(task["store_root"], name)
    _fresh(path)
    return path


def _rechunker_run(lib, client, task, source, codec, kill_after=None):
    """One `rechunker.rechunk` of `source` to the target chunks under `max_memory` (per task),
    planned and executed (dask executor, on `client`'s cluster) into fresh target and temporary
    stores; with `kill_after` (seconds) one worker SIGKILLed then. Returns (seconds, peak RSS per
    process: client then workers, the target array)."""
    import threading

    options = {"compressor": codec}
    target, temp = _rechunker_store(lib, task, "target"), _rechunker_store(lib, task, "temp")
    client.run(_hwm_reset)
    _reset_peak()
    killer = threading.Timer(kill_after, _kill_worker, (client,)) if kill_after is not None else None
    start = time.perf_counter()
    if killer:
        killer.start()
    plan = lib.rechunker.rechunk(
        source,
        tuple(task["target_chunks"]),
        task["max_memory"],
        target,
        target_options=options,
        temp_store=temp,
        temp_options=options,
        executor="dask",
    )
    plan.execute()
    seconds = time.perf_counter() - start
    if killer:
        killer.join()
    peaks = [_hwm()] + ([] if kill_after is not None else sorted(client.run(_hwm).values()))
    return seconds, peaks, lib.zarr.open_array(target, mode="r")


def rechunker(lib, task):
    """Workload 12b, rechunker: a zarr 2 copy of the source (the same raw data, chunks and codec,
    written untimed), rechunked to the target chunks with `rechunker.rechunk` (`max_mem` the task's
    `max_memory`) executed by Dask on a LocalCluster of 2 worker processes of 1 thread, as the
    Dask peer; then one run with a worker killed at half the median time. Rows, `peaks` and
    `killed_after` as `engines` gives them."""
    from dask.distributed import Client, LocalCluster
    from numcodecs import get_codec

    codec = get_codec(dict(task["compressor"]))
    source = lib.zarr.open_array(
        _rechunker_store(lib, task, "source"),
        mode="w",
        shape=tuple(task["shape"]),
        chunks=tuple(task["source_chunks"]),
        dtype=np.dtype(task["dtype"]).newbyteorder("<"),
        compressor=codec,
        fill_value=0,
    )
    source[...] = _load(task)
    rows, peaks, killed = [], {}, {}

    def row(op, runs):
        rows.append({"group": "rechunker", "op": op, "samples": [s for s, _, _ in runs], "digest": _digest([runs[0][2][...]])})
        peaks["rechunker " + op] = [max(p[i] for _, p, _ in runs) for i in range(len(runs[0][1]))]

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            row("rechunk", [_rechunker_run(lib, client, task, source, codec) for _ in range(task["runs"] + 1)][1:])
            killed["rechunk"] = float(np.median(rows[0]["samples"])) / 2
            row("rechunk, 1 worker killed", [_rechunker_run(lib, client, task, source, codec, killed["rechunk"])])
    shutil.rmtree(task["store_root"], ignore_errors=True)
    return {"rows": rows, "peaks": peaks, "killed_after": killed}


def _concurrent_writer(args):
    """One writer process of workload 13: its rows, one write each, on a handle of its own."""
    lib_name, path, rows, width, start = args
    lib = LIBRARIES[lib_name](None)
    array = lib.open_writable(path)
    time.sleep(max(0.0, start - time.time()))
    for r in rows:
        lib.write(array, np.full((1, width), r + 1, dtype="int32"), (slice(r, r + 1), slice(None)))
    return len(rows)


def concurrent_writers(lib, task):
    """Workload 13b: `processes` OS processes (multiprocessing, spawn) write the rows of one
    chunk, and of one shard, row by row (row r by process r mod processes); counts the rows that
    do not end holding r + 1, and says which writers crashed."""
    import multiprocessing

    n, width, procs = task["rows"], task["width"], task["processes"]
    rows, lost, errors = [], {}, {}
    for group, chunks, shards in (("chunk", [n, width], None), ("shard", [4, width], [n, width])):
        path = os.path.join(task["store"], group)
        _fresh(path)
        # stored chunks (not fill) for every writer to read and merge into
        lib.write(lib.create(path, [n, width], chunks, "int32", None, shards), np.full((n, width), -1, dtype="int32"))
        # every writer starts then (its start-up is not timed)
        start = time.time() + task["start_after_ms"] / 1000
        parts = [(task["lib"], path, list(range(p, n, procs)), width, start) for p in range(procs)]
        with multiprocessing.get_context("spawn").Pool(procs) as pool:
            try:
                pool.map(_concurrent_writer, parts)
            except Exception as e:  # a writer that crashed (its rows left unwritten count as lost)
                errors[group] = "%s: %s" % (type(e).__name__, e)
        seconds = time.time() - start
        data = np.asarray(lib.read(lib.open(path)))
        expected = (np.arange(n, dtype="int32") + 1)[:, None]
        lost[group] = int(np.sum(np.any(data != expected, axis=1)))
        rows.append({"group": group, "op": "write", "samples": [seconds]})
    return {"rows": rows, "lost": lost, "errors": errors}


WORKLOADS = {
    "single_chunk": single_chunk,
    "slicing": slicing,
    "concurrency": concurrency,
    "zstd_levels": zstd_levels,
    "full_io": full_io,
    "sharded": sharded,
    "object_store": object_store,
    "http": http,
    "chunk_cache": chunk_cache,
    "selections": selections,
    "rechunk": rechunk,
    "engines": engines,
    "rechunker": rechunker,
    "concurrent_writers": concurrent_writers,
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
