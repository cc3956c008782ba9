"""Interop fixtures for ExZarr's tests: writes arrays with zarr-python or tensorstore, and
checks arrays ExZarr wrote, all from one JSON batch so that Python starts once per batch.

Usage:  python zarr_fixture.py MODE SPEC
  MODE  write   for every case: generate the deterministic data, write the files named below,
                and (unless "writer" is "none") create the array with zarr-python or tensorstore
        verify  for every case: open the array at "path" (written by ExZarr) with zarr-python
                (and tensorstore, when it has the codecs), compare it bit for bit
                with DATA.full.bin, check its metadata against the case and against what
                zarr-python writes for the same array, and that its stored chunk keys (and,
                without a compressor, the chunks' bytes) are the ones zarr-python stores for
                the same writes
  SPEC  the batch as JSON text, or "@file" naming a JSON file:
        {"results": "/where/results.json", "cases": [case, ...]}

A case (JSON object):
  name            unique name, used in the results
  path            the array directory
  data            where the expected-data files go (below), outside any store
  writer          "zarr" (default), "tensorstore" or "none" (write mode: only generate data)
  zarr_format     2 or 3
  dtype           bool, int8..int64, uint8..uint64, float16, float32, float64, complex64, complex128
  endian          "little" (default) or "big": v2 dtype byte order, v3 bytes codec endian
  shape, chunks   lists of ints
  order           "C" (default) or "F": v2 order; for v3 a transpose codec reversing the axes
  transpose       v3 only: an explicit transpose permutation (overrides order)
  separator       "." or "/" (v2 dimension_separator, v3 chunk key encoding separator)
  key_encoding    v3 only: "default" (default) or "v2"
  compressor      null or {"id": "gzip"|"zlib"|"zstd"|"blosc"|"lz4", ...numcodecs params}
  crc32c          v3 only: append a crc32c codec
  fill_value      as stored in metadata JSON: number, "NaN", "Infinity", "-Infinity", "-0.0", "0x..."
                  (v3 hex bit pattern), [re, im], true/false, or null (v2)
  region          [start, stop] of the written part, null for the whole array, "none" when
                  nothing is written; hex fills need a region aligned to chunk boundaries (data
                  is written before the fill value is set)
  slices          list of [start, stop]: write mode stores the expected bytes of each
  update          [start, stop] of a second write, made by ExZarr after the writer's (the
                  reversed pattern); the expected files then describe the array after it
  attributes      user attributes (optional, zarr writer)
  dimension_names v3 only: names of the dimensions (optional, zarr writer)
  prefix          the array's path inside its store, which is "path" minus "/" + prefix
                  (optional; zarr-python writes every ancestor group, and verify checks
                  that the array is reachable from the root group)

Files, named from the case's "data" (default: its "path"); all raw C-order little-endian
packed elements, bool as 0/1 bytes:
  DATA.full.bin     the whole array as it must read back (fill where nothing was written)
  DATA.region.bin   the data written into the region
  DATA.update.bin   the data of the update (when the case has one)
  DATA.slice<k>.bin the expected content of slices[k]
  DATA.chunks.bin   every chunk of the grid in C order of chunk coordinates, at full chunk
                    shape, the overhang of edge chunks (and missing chunks) filled with the
                    fill value, as zarr-python and tensorstore store them
  DATA.stored.json  the coordinates of the chunks the writer stored (write mode, writer not
                    "none"), sorted

The results file maps every case name to {"ok": bool, "errors": [str, ...]}. Python exits 0
whenever it could process the batch; per-case failures are only in the results.
"""

import importlib.util
import json
import math
import os
import shutil
import sys
import tempfile
import traceback
import warnings

import numpy as np

warnings.filterwarnings("ignore")

import numcodecs  # noqa: E402
import zarr  # noqa: E402
import zarr.codecs as zc  # noqa: E402
import zarr.codecs.numcodecs as znc  # noqa: E402

KINDS = {
    "bool": "b1",
    "int8": "i1",
    "int16": "i2",
    "int32": "i4",
    "int64": "i8",
    "uint8": "u1",
    "uint16": "u2",
    "uint32": "u4",
    "uint64": "u8",
    "float16": "f2",
    "float32": "f4",
    "float64": "f8",
    "complex64": "c8",
    "complex128": "c16",
}


def np_dtype(case, endian=None):
    """The numpy dtype of a case, in the case's byte order (or the one given)."""
    kind = KINDS[case["dtype"]]
    if np.dtype(kind).itemsize == 1:
        return np.dtype("|" + kind)
    endian = endian or case.get("endian", "little")
    return np.dtype(("<" if endian == "little" else ">") + kind)


def le_dtype(case):
    return np_dtype(case, "little")


def v2_dtype_str(case):
    return np_dtype(case).str


# ---------------------------------------------------------------- deterministic data


def pattern(shape, case):
    """Deterministic data of the case's dtype, covering negatives, fractions and specials."""
    n = int(np.prod(shape, dtype=np.int64))
    i = np.arange(n, dtype=np.uint64)
    dt = le_dtype(case)
    name = case["dtype"]
    if name == "bool":
        out = ((i * np.uint64(7) + np.uint64(3)) % np.uint64(5)) < np.uint64(2)
    elif name.startswith("int") or name.startswith("uint"):
        h = i * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)
        h ^= h >> np.uint64(29)
        out = h.astype(dt)
    else:
        x = i.astype(np.float64)
        re = np.sin(x * 0.7) * 1000.0 + x * 0.25 - 37.5
        re[i % np.uint64(97) == 5] = -0.0
        re[i % np.uint64(89) == 7] = np.inf
        re[i % np.uint64(83) == 11] = np.nan
        re[i % np.uint64(79) == 13] = -np.inf
        if name.startswith("complex"):
            im = np.cos(x * 0.3) * 500.0 - x * 0.5
            im[i % np.uint64(73) == 17] = np.nan
            out = (re + 1j * im).astype(dt)
        else:
            out = re.astype(dt)
    return out.reshape(shape)


def fill_scalar(case):
    """The fill value as a numpy scalar of the case's little-endian dtype."""
    dt = le_dtype(case)
    f = case.get("fill_value")
    if f is None:
        return np.zeros((), dtype=dt)[()]
    if isinstance(f, str) and f.startswith("0x"):
        raw = int(f, 16).to_bytes(dt.itemsize, "little")
        return np.frombuffer(raw, dtype=dt)[0]
    if isinstance(f, list):
        return np.array(complex(json_float(f[0]), json_float(f[1])), dtype=dt)[()]
    if isinstance(f, str):
        return np.array(json_float(f), dtype=dt)[()]
    return np.array(f, dtype=dt)[()]


def json_float(v):
    """A JSON float; "-0.0" is how the Elixir side sends negative zero."""
    return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0.0": -0.0}.get(v, v)


def region_slices(region, shape):
    if region == "none":
        return tuple(slice(0, 0) for _ in shape) if shape else None
    if region is None:
        return tuple(slice(0, s) for s in shape)
    start, stop = region
    return tuple(slice(a, b) for a, b in zip(start, stop))


def expected_full(case):
    shape = tuple(case["shape"])
    full = np.full(shape, fill_scalar(case), dtype=le_dtype(case))
    data = pattern(shape, case)
    sel = region_slices(case.get("region"), shape)
    if sel is None:  # a 0-d array nothing is written to
        return full, np.zeros((0,), dtype=full.dtype)
    full[sel] = data[sel]
    return full, data[sel]


def update_data(case):
    """The data of the second write ("update"): the pattern reversed, so it differs from the
    first write where they overlap."""
    shape = tuple(case["shape"])
    flipped = np.flip(pattern(shape, case)) if shape else pattern(shape, case)
    return flipped[region_slices(case["update"], shape)]


def with_update(case, full):
    if case.get("update") is None:
        return full
    out = full.copy()
    out[region_slices(case["update"], tuple(case["shape"]))] = update_data(case)
    return out


def chunks_raw(case, full):
    """All chunks in grid order, padded at the edges with the fill value."""
    shape, chunks = tuple(case["shape"]), tuple(case["chunks"])
    grid = tuple(-(-s // c) for s, c in zip(shape, chunks))
    padded = np.full(tuple(g * c for g, c in zip(grid, chunks)), fill_scalar(case), dtype=full.dtype)
    padded[tuple(slice(0, s) for s in shape)] = full
    parts = []
    for idx in np.ndindex(*grid):
        parts.append(raw(padded[tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, chunks))]))
    return b"".join(parts)


def raw(arr):
    return np.ascontiguousarray(arr).tobytes(order="C")


# ---------------------------------------------------------------- writers


def v2_compressor(comp):
    return None if comp is None else numcodecs.get_codec(dict(comp))


def v3_compressors(case):
    comp = case.get("compressor")
    out = []
    if comp is not None:
        cid = comp["id"]
        params = {k: v for k, v in comp.items() if k != "id"}
        if cid == "gzip":
            out.append(zc.GzipCodec(**params))
        elif cid == "zlib":
            out.append(znc.Zlib(**params))
        elif cid == "zstd":
            out.append(zc.ZstdCodec(**params))
        elif cid == "blosc":
            shuffle = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}[params.pop("shuffle", 1)]
            out.append(zc.BloscCodec(shuffle=shuffle, **params))
        elif cid == "lz4":
            out.append(znc.LZ4(**params))
        else:
            raise ValueError(f"unknown compressor {cid}")
    if case.get("crc32c"):
        out.append(zc.Crc32cCodec())
    return out


def v3_permutation(case):
    if case.get("transpose") is not None:
        return list(case["transpose"])
    if case.get("order", "C") == "F":
        return list(reversed(range(len(case["shape"]))))
    return None


def store_and_name(case, path, use_prefix):
    prefix = case.get("prefix") if use_prefix else None
    if not prefix:
        return path, None
    assert path.endswith("/" + prefix), (path, prefix)
    return path[: -len(prefix) - 1], prefix


def zarr_create(case, path, use_prefix=True):
    store, name = store_and_name(case, path, use_prefix)
    shape = tuple(case["shape"])
    chunks = tuple(case["chunks"])
    hexfill = isinstance(case.get("fill_value"), str) and case["fill_value"].startswith("0x")
    fill = 0 if hexfill else zarr_fill(case)
    sep = case.get("separator", "." if case["zarr_format"] == 2 else "/")
    if case["zarr_format"] == 2:
        arr = zarr.create_array(
            store=store,
            name=name,
            shape=shape,
            chunks=chunks,
            dtype=np_dtype(case),
            zarr_format=2,
            order=case.get("order", "C"),
            compressors=v2_compressor(case.get("compressor")),
            filters=None,
            chunk_key_encoding={"name": "v2", "separator": sep},
            fill_value=fill,
            attributes=case.get("attributes"),
            overwrite=True,
        )
    else:
        perm = v3_permutation(case)
        filters = [zc.TransposeCodec(order=tuple(perm))] if perm else []
        dt = np_dtype(case)
        serializer = zc.BytesCodec(endian=case.get("endian", "little")) if dt.itemsize > 1 else "auto"
        arr = zarr.create_array(
            store=store,
            name=name,
            shape=shape,
            chunks=chunks,
            dtype=dt.newbyteorder("<") if dt.itemsize > 1 else dt,
            zarr_format=3,
            filters=filters,
            serializer=serializer,
            compressors=v3_compressors(case),
            chunk_key_encoding={"name": case.get("key_encoding", "default"), "separator": sep},
            fill_value=fill,
            attributes=case.get("attributes"),
            dimension_names=case.get("dimension_names"),
            overwrite=True,
        )
    return arr, hexfill


def zarr_fill(case):
    f = case.get("fill_value")
    if f is None:
        return None
    return fill_scalar(case)


def write_with_zarr(case, path, use_prefix=True):
    arr, hexfill = zarr_create(case, path, use_prefix)
    shape = tuple(case["shape"])
    full = pattern(shape, case)
    if case.get("region") != "none":
        arr[region_slices(case.get("region"), shape)] = full[region_slices(case.get("region"), shape)]
    if hexfill:
        check_chunk_aligned(case)
        meta_path = os.path.join(path, "zarr.json")
        with open(meta_path) as fh:
            meta = json.load(fh)
        meta["fill_value"] = case["fill_value"]
        with open(meta_path, "w") as fh:
            json.dump(meta, fh)


def check_chunk_aligned(case):
    region = case.get("region")
    if region is None or region == "none":
        return
    for a, b, c, s in zip(region[0], region[1], case["chunks"], case["shape"]):
        if a % c != 0 or (b % c != 0 and b != s):
            raise ValueError("a hex fill value needs a chunk-aligned region")


def ts_spec(case, path):
    shape = list(case["shape"])
    sep = case.get("separator", "." if case["zarr_format"] == 2 else "/")
    if case["zarr_format"] == 2:
        meta = {
            "shape": shape,
            "chunks": list(case["chunks"]),
            "dtype": v2_dtype_str(case),
            "compressor": case.get("compressor"),
            "order": case.get("order", "C"),
            "fill_value": case.get("fill_value"),
            "dimension_separator": sep,
        }
        driver = "zarr"
    else:
        codecs = []
        perm = v3_permutation(case)
        if perm:
            codecs.append({"name": "transpose", "configuration": {"order": perm}})
        if np_dtype(case).itemsize > 1:
            codecs.append({"name": "bytes", "configuration": {"endian": case.get("endian", "little")}})
        else:
            codecs.append({"name": "bytes"})
        comp = case.get("compressor")
        if comp is not None:
            conf = {k: v for k, v in comp.items() if k != "id"}
            if comp["id"] == "blosc":
                conf["shuffle"] = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}[conf.get("shuffle", 1)]
                conf["typesize"] = np_dtype(case).itemsize
            codecs.append({"name": comp["id"], "configuration": conf})
        if case.get("crc32c"):
            codecs.append({"name": "crc32c"})
        cke = {"name": case.get("key_encoding", "default"), "configuration": {"separator": sep}}
        meta = {
            "shape": shape,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(case["chunks"])}},
            "chunk_key_encoding": cke,
            "data_type": case["dtype"],
            "fill_value": case.get("fill_value"),
            "codecs": codecs,
        }
        driver = "zarr3"
    return {
        "driver": driver,
        "kvstore": {"driver": "file", "path": path},
        "metadata": meta,
        "create": True,
        "delete_existing": True,
    }


def write_with_tensorstore(case, path):
    import tensorstore as ts

    store = ts.open(ts_spec(case, path)).result()
    shape = tuple(case["shape"])
    full = pattern(shape, case)
    if case.get("region") != "none":
        sel = region_slices(case.get("region"), shape)
        store[sel].write(full[sel].astype(np_dtype(case))).result()
    return store


def write_case(case):
    path = case["path"]
    data = case.get("data", path)
    written, region = expected_full(case)
    full = with_update(case, written)
    with open(data + ".full.bin", "wb") as fh:
        fh.write(raw(full))
    with open(data + ".region.bin", "wb") as fh:
        fh.write(raw(region))
    if case.get("update") is not None:
        with open(data + ".update.bin", "wb") as fh:
            fh.write(raw(update_data(case)))
    with open(data + ".chunks.bin", "wb") as fh:
        fh.write(chunks_raw(case, full))
    for k, (start, stop) in enumerate(case.get("slices") or []):
        with open(f"{data}.slice{k}.bin", "wb") as fh:
            fh.write(raw(full[tuple(slice(a, b) for a, b in zip(start, stop))]))
    writer = case.get("writer", "zarr")
    if writer == "none":
        return []
    if os.path.exists(path):
        shutil.rmtree(path)
    if writer == "zarr":
        write_with_zarr(case, path)
        got = zarr.open_array(path, mode="r")[...]
    elif writer == "tensorstore":
        got = write_with_tensorstore(case, path).read().result()
    else:
        raise ValueError(f"unknown writer {writer}")
    with open(data + ".stored.json", "w") as fh:
        json.dump(stored_coords(case, path), fh)
    # The writer reading its own array back must agree with the expected bytes, or the
    # case itself is wrong (not ExZarr).
    errors = compare(written, np.asarray(got).astype(le_dtype(case)))
    return [f"{writer} does not read back its own array: {e}" for e in errors]


# ---------------------------------------------------------------- verification


def compare(expected, got):
    """Bitwise comparison (NaN == NaN, +0 != -0) with a readable summary of the differences."""
    if expected.shape != got.shape:
        return [f"shape {got.shape} != expected {expected.shape}"]
    ev = expected.reshape(-1).view(np.uint8).reshape(expected.size, -1) if expected.size else None
    gv = got.reshape(-1).view(np.uint8).reshape(got.size, -1) if got.size else None
    if ev is None:
        return []
    diff = np.nonzero((ev != gv).any(axis=1))[0]
    if diff.size == 0:
        return []
    lines = [f"{diff.size} of {expected.size} elements differ"]
    for flat in diff[:8]:
        idx = np.unravel_index(flat, expected.shape) if expected.shape else ()
        e = expected.reshape(-1)[flat]
        g = got.reshape(-1)[flat]
        lines.append(
            f"  at {tuple(int(x) for x in idx)}: got {g!r} (0x{gv[flat].tobytes()[::-1].hex()})"
            f" expected {e!r} (0x{ev[flat].tobytes()[::-1].hex()})"
        )
    return ["\n".join(lines)]


def read_json(path):
    with open(path) as fh:
        return json.load(fh)


def chunk_keys(path):
    keys = []
    for root, _dirs, files in os.walk(path):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), path).replace(os.sep, "/")
            if rel.split("/")[-1] not in (".zarray", ".zattrs", ".zgroup", "zarr.json"):
                keys.append(rel)
    return sorted(keys)


def stored_coords(case, path):
    """Chunk coordinates from the stored chunk keys, whatever the key encoding."""
    fmt = case["zarr_format"]
    sep = case.get("separator", "." if fmt == 2 else "/")
    default = fmt == 3 and case.get("key_encoding", "default") == "default"
    out = []
    for key in chunk_keys(path):
        if default:
            assert key == "c" or key.startswith("c" + sep), key
            key = key[2:]
        parts = [p for p in key.split(sep) if p != ""] if case["shape"] else []
        out.append([int(p) for p in parts])
    return sorted(out)


def same_fill(stored, case):
    """Compares a stored JSON fill value with the case's, by the bits they decode to."""
    want = case.get("fill_value")
    if want is None or stored is None:
        return stored == want
    a = np.array([fill_scalar(dict(case, fill_value=stored))])
    b = np.array([fill_scalar(case)])
    return a.view(np.uint8).tobytes() == b.view(np.uint8).tobytes()


def check_metadata(case, path):
    errors = []
    fmt = case["zarr_format"]
    sep = case.get("separator", "." if fmt == 2 else "/")
    comp = case.get("compressor")
    if fmt == 2:
        meta = read_json(os.path.join(path, ".zarray"))
        expect = {
            "zarr_format": 2,
            "shape": case["shape"],
            "chunks": case["chunks"],
            "dtype": v2_dtype_str(case),
            "order": case.get("order", "C"),
            "dimension_separator": sep,
        }
        got = dict(meta)
        got.setdefault("dimension_separator", ".")
        for k, v in expect.items():
            if got.get(k) != v:
                errors.append(f".zarray {k}: {got.get(k)!r}, expected {v!r}")
        if meta.get("filters") not in (None, []):
            errors.append(f".zarray filters: {meta.get('filters')!r}, expected null")
        stored_comp = meta.get("compressor")
        if comp is None and stored_comp is not None:
            errors.append(f".zarray compressor: {stored_comp!r}, expected null")
        if comp is not None:
            if stored_comp is None or any(stored_comp.get(k) != v for k, v in comp.items()):
                errors.append(f".zarray compressor: {stored_comp!r}, expected {comp!r}")
    else:
        meta = read_json(os.path.join(path, "zarr.json"))
        grid = meta.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape")
        if meta.get("node_type") != "array":
            errors.append(f"zarr.json node_type: {meta.get('node_type')!r}")
        if meta.get("shape") != case["shape"]:
            errors.append(f"zarr.json shape: {meta.get('shape')!r}, expected {case['shape']!r}")
        if grid != case["chunks"]:
            errors.append(f"zarr.json chunk_shape: {grid!r}, expected {case['chunks']!r}")
        if meta.get("data_type") != case["dtype"]:
            errors.append(f"zarr.json data_type: {meta.get('data_type')!r}, expected {case['dtype']!r}")
        cke = meta.get("chunk_key_encoding", {})
        cke_name = cke.get("name")
        cke_sep = cke.get("configuration", {}).get("separator", "/" if cke_name == "default" else ".")
        want_name = case.get("key_encoding", "default")
        if (cke_name, cke_sep) != (want_name, sep):
            errors.append(f"zarr.json chunk_key_encoding: {cke!r}, expected {want_name} {sep!r}")
        names = [c.get("name") for c in meta.get("codecs", [])]
        perm = v3_permutation(case)
        transposes = [c for c in meta.get("codecs", []) if c.get("name") == "transpose"]
        got_perm = transposes[0]["configuration"]["order"] if transposes else None
        identity = list(range(len(case["shape"])))
        if (got_perm or identity) != (perm or identity):
            errors.append(f"zarr.json transpose order: {got_perm!r}, expected {perm!r}")
        byte_codecs = [c for c in meta.get("codecs", []) if c.get("name") == "bytes"]
        if len(byte_codecs) != 1:
            errors.append(f"zarr.json codecs {names!r}: expected exactly one bytes codec")
        elif np_dtype(case).itemsize > 1:
            endian = (byte_codecs[0].get("configuration") or {}).get("endian")
            if endian != case.get("endian", "little"):
                errors.append(f"zarr.json bytes endian: {endian!r}, expected {case.get('endian', 'little')!r}")
        want_names = {"gzip": "gzip", "zlib": "numcodecs.zlib", "zstd": "zstd", "blosc": "blosc", "lz4": "numcodecs.lz4"}
        if comp is not None and want_names[comp["id"]] not in names:
            errors.append(f"zarr.json codecs {names!r}: no {want_names[comp['id']]} codec")
        if case.get("crc32c") and names[-1:] != ["crc32c"]:
            errors.append(f"zarr.json codecs {names!r}: expected crc32c last")
    if not same_fill(meta.get("fill_value"), case):
        errors.append(f"fill_value {meta.get('fill_value')!r}, expected {case.get('fill_value')!r}")
    return errors


def tensorstore_reads(case):
    """Whether tensorstore can read the case (it has no lz4, and no numcodecs.* codecs in v3;
    the venv of the newest zarr-python has no tensorstore)."""
    if importlib.util.find_spec("tensorstore") is None:
        return False
    comp = case.get("compressor")
    if comp is None:
        return True
    return comp["id"] != "lz4" and not (case["zarr_format"] == 3 and comp["id"] == "zlib")


def read_with_tensorstore(case, path):
    import tensorstore as ts

    driver = "zarr" if case["zarr_format"] == 2 else "zarr3"
    store = ts.open({"driver": driver, "kvstore": {"driver": "file", "path": path}, "open": True}).result()
    return np.asarray(store.read().result()).astype(le_dtype(case))


def normal_codecs(case, codecs):
    """Drops what is equivalent either way: an identity transpose, a 1-byte type's bytes
    endian, and a v2 blosc blocksize of 0 (numcodecs' default)."""
    if case["zarr_format"] == 2:
        if codecs and codecs.get("id") == "blosc" and codecs.get("blocksize", 0) == 0:
            codecs = {k: v for k, v in codecs.items() if k != "blocksize"}
        return codecs
    out = []
    for c in codecs or []:
        conf = c.get("configuration") or {}
        if c.get("name") == "transpose" and conf.get("order") == list(range(len(case["shape"]))):
            continue
        if c.get("name") == "bytes" and np_dtype(case).itemsize == 1:
            c = {"name": "bytes"}
        out.append(c)
    return out


GROUP_DOCS = ("zarr.json", ".zgroup", ".zattrs")


def ancestor_docs(root, prefix):
    """The metadata documents of the groups above the array at prefix."""
    docs = {}
    parts = prefix.split("/")
    for depth in range(len(parts)):
        rel = "/".join(parts[:depth])
        for name in GROUP_DOCS:
            f = os.path.join(root, rel, name)
            if os.path.exists(f):
                docs[f"{rel}/{name}" if rel else name] = read_json(f)
    return docs


def compare_ancestors(case, root, prefix):
    """The ancestor groups are those zarr-python writes when it creates the same array."""
    ref_root = tempfile.mkdtemp(prefix="exzarr-ref-")
    try:
        zarr_create(case, os.path.join(ref_root, prefix))
        got, want = ancestor_docs(root, prefix), ancestor_docs(ref_root, prefix)
    finally:
        shutil.rmtree(ref_root)
    if got != want:
        return [f"ancestor group documents {got!r}, zarr-python writes {want!r}"]
    return []


def compare_raw_chunks(case, path, ref_path):
    """Without a compressor, stored chunks are byte-for-byte those zarr-python stores."""
    if case.get("compressor") is not None:
        return []
    differ = []
    for key in sorted(set(chunk_keys(path)) & set(chunk_keys(ref_path))):
        with open(os.path.join(path, key), "rb") as a, open(os.path.join(ref_path, key), "rb") as b:
            if a.read() != b.read():
                differ.append(key)
    return [f"uncompressed chunks differ from zarr-python's: {differ}"] if differ else []


def compare_with_reference(case, path, ref_path):
    """The metadata documents must be those zarr-python writes for the same array (codecs
    up to equivalent forms), and a v2 array has a .zattrs exactly when zarr-python's has."""
    fmt = case["zarr_format"]
    key, field = (".zarray", "compressor") if fmt == 2 else ("zarr.json", "codecs")
    got, want = read_json(os.path.join(path, key)), read_json(os.path.join(ref_path, key))
    got[field] = normal_codecs(case, got.get(field))
    want[field] = normal_codecs(case, want.get(field))
    errors = []
    for k in sorted(set(got) | set(want)):
        if got.get(k, "<absent>") != want.get(k, "<absent>"):
            errors.append(
                f"{key} {k}: {json.dumps(got.get(k, '<absent>'))}, zarr-python writes "
                f"{json.dumps(want.get(k, '<absent>'))}"
            )
    if fmt == 2:
        attrs = [os.path.join(p, ".zattrs") for p in (path, ref_path)]
        has = [os.path.exists(a) for a in attrs]
        if has[0] != has[1]:
            errors.append(f".zattrs present: {has[0]}, zarr-python: {has[1]}")
        elif has[0] and read_json(attrs[0]) != read_json(attrs[1]):
            errors.append(f".zattrs {read_json(attrs[0])!r}, zarr-python writes {read_json(attrs[1])!r}")
    return errors


def verify_case(case):
    path = case["path"]
    errors = check_metadata(case, path)
    dt = le_dtype(case)
    with open(case.get("data", path) + ".full.bin", "rb") as fh:
        expected = np.frombuffer(fh.read(), dtype=dt).reshape(tuple(case["shape"]))
    arr = zarr.open_array(path, mode="r")
    if tuple(arr.shape) != tuple(case["shape"]) or tuple(arr.chunks) != tuple(case["chunks"]):
        errors.append(f"zarr-python sees shape {arr.shape} chunks {arr.chunks}")
    got = np.asarray(arr[...]).astype(dt)
    errors += [f"zarr-python reads different data: {e}" for e in compare(expected, got)]
    root, prefix = store_and_name(case, path, True)
    if prefix:
        try:
            via_group = zarr.open_group(root, mode="r")[prefix]
            if tuple(via_group.shape) != tuple(case["shape"]):
                errors.append(f"{prefix} from the root group has shape {via_group.shape}")
        except Exception as e:
            errors.append(f"zarr-python cannot reach {prefix!r} from the root group: {e!r}")
        errors += compare_ancestors(case, root, prefix)
    if tensorstore_reads(case):
        try:
            ts_got = read_with_tensorstore(case, path)
            errors += [f"tensorstore reads different data: {e}" for e in compare(expected, ts_got)]
        except Exception as e:  # tensorstore rejecting the metadata or a chunk is a finding
            errors.append(f"tensorstore cannot read the array: {e}")
    # The chunk keys must be those zarr-python itself stores for the same writes
    # (same key encoding, all-fill chunks not stored).
    ref_dir = tempfile.mkdtemp(prefix="exzarr-ref-")
    try:
        ref_path = os.path.join(ref_dir, "ref.zarr")
        write_with_zarr(case, ref_path, use_prefix=False)
        if case.get("update") is not None:
            ref = zarr.open_array(ref_path, mode="r+")
            ref[region_slices(case["update"], tuple(case["shape"]))] = update_data(case)
        errors += compare_with_reference(case, path, ref_path)
        errors += compare_raw_chunks(case, path, ref_path)
        want_keys, got_keys = chunk_keys(ref_path), chunk_keys(path)
        if want_keys != got_keys:
            errors.append(
                f"stored chunk keys {got_keys!r}, zarr-python stores {want_keys!r}"
            )
    finally:
        shutil.rmtree(ref_dir)
    return errors


def main(argv):
    mode, spec = argv[1], argv[2]
    if spec.startswith("@"):
        with open(spec[1:]) as fh:
            spec = fh.read()
    batch = json.loads(spec)
    run = {"write": write_case, "verify": verify_case}[mode]
    results = {}
    for case in batch["cases"]:
        try:
            errors = run(case)
        except Exception:  # a broken case is reported, the batch goes on
            errors = [traceback.format_exc()]
        results[case["name"]] = {"ok": not errors, "errors": errors}
    with open(batch["results"], "w") as fh:
        json.dump(results, fh)


if __name__ == "__main__":
    main(sys.argv)
