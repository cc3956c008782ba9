"""Deterministic benchmark and demo data, written as raw little-endian C-order binaries.

Both ExZarr (which File.read's the .bin) and the Python peers (np.fromfile) use the same bytes.

    python gen_data.py OUT_DIR SPEC_JSON

SPEC_JSON is a list of {"name", "kind", "shape", "dtype", "seed"}; kind is one of
"field" (smooth N-D field plus noise), "climate" (time x lat x lon temperature-like cube)
"sensor" (1-D sensor readings with drift, daily cycle and quantised noise) or "volume"
(uint8 3-D image like electron microscopy). dtype is any numpy name, "bfloat16" included.
A dataset whose .bin and matching .json sidecar already exist is not regenerated.
Prints one JSON line per dataset: name, path, bytes, seconds (0 when cached).
"""

import json
import os
import sys
import time

import ml_dtypes  # noqa: F401 (registers "bfloat16" and the other low-precision dtypes with numpy)
import numpy as np


def _axes(shape):
    """Open-grid coordinates in [0, 1) for each axis, broadcastable to `shape`."""
    return np.ogrid[tuple(slice(0, n) for n in shape)], [float(n) for n in shape]


def field(shape, dtype, rng):
    """Sum of a few separable waves (smooth, large scale) plus Gaussian noise, kept to the
    1e-3 precision of the instrument that would have measured it."""
    shape = tuple(shape)
    out = np.zeros(shape, dtype=np.float64)
    grids, sizes = _axes(shape)
    for k in range(1, 4):
        term = np.ones((1,) * len(shape))
        for g, n in zip(grids, sizes):
            phase = rng.uniform(0, 2 * np.pi)
            term = term * np.sin(2 * np.pi * k * g / n + phase)
        out += term / k
    out *= 10.0
    out += 0.05 * rng.standard_normal(shape)
    np.round(out, 3, out=out)
    return out.astype(dtype, copy=False)


def climate(shape, dtype, rng):
    """Temperature-like cube (degrees C): latitude gradient, seasonal cycle, weather waves, noise."""
    nt, ny, nx = shape
    t = np.arange(nt, dtype=np.float32)[:, None, None]
    lat = np.linspace(-89.5, 89.5, ny, dtype=np.float32)[None, :, None]
    lon = np.linspace(0.0, 359.0, nx, dtype=np.float32)[None, None, :]
    rad = np.float32(np.pi / 180.0)
    out = np.empty(shape, dtype=np.float32)
    out[...] = 28.0 * np.cos(lat * rad) - 8.0
    out += 12.0 * np.sin(lat * rad) * np.cos(2 * np.pi * (t - 15.0) / 365.0)
    out += 3.0 * np.sin(3 * lon * rad + 0.07 * t) * np.cos(2 * lat * rad)
    out += rng.standard_normal(shape, dtype=np.float32) * np.float32(0.8)
    np.round(out, 2, out=out)
    return out.astype(dtype, copy=False)


def sensor(shape, dtype, rng):
    """1-D readings of a slowly drifting sensor: daily cycle, random walk, 0.01 quantisation."""
    (n,) = shape
    i = np.arange(n, dtype=np.float64)
    walk = np.cumsum(rng.standard_normal(n) * 0.002)
    x = 21.5 + 4.0 * np.sin(2 * np.pi * i / 86_400.0) + walk + 0.05 * rng.standard_normal(n)
    return np.round(x, 2).astype(dtype, copy=False)


def volume(shape, dtype, rng):
    """uint8 3-D image like electron microscopy: smooth blobs of tissue, dark membranes, shot
    noise, empty background.
    Built one z-slab at a time so that a 1024^3 volume needs no 8-byte temporary of its size."""
    nz, ny, nx = shape
    out = np.empty(shape, dtype=dtype)
    y = np.arange(ny, dtype=np.float32)[:, None]
    x = np.arange(nx, dtype=np.float32)[None, :]
    waves = [(rng.uniform(0.01, 0.05, 3).astype(np.float32), rng.uniform(0, 2 * np.pi, 3).astype(np.float32))
             for _ in range(4)]
    step = 32
    for z0 in range(0, nz, step):
        z = np.arange(z0, min(z0 + step, nz), dtype=np.float32)[:, None, None]
        field = np.zeros((len(z), ny, nx), dtype=np.float32)
        for (fz, fy, fx), (pz, py, px) in waves:
            field += np.sin(fz * z + pz) * np.sin(fy * y + py) * np.sin(fx * x + px)
        img = 128 + 60 * field - 90 * (np.abs(field) < 0.08) + rng.normal(0, 5, field.shape).astype(np.float32)
        img[field < -0.5] = 0  # outside the tissue: empty background, as at the edges of a scan
        out[z0:z0 + len(z)] = np.clip(img, 0, 255).astype(np.uint8)
    return out


KINDS = {"field": field, "climate": climate, "sensor": sensor, "volume": volume}


def generate(out_dir, spec):
    path = os.path.join(out_dir, spec["name"] + ".bin")
    meta_path = os.path.join(out_dir, spec["name"] + ".json")
    want = {k: spec[k] for k in ("kind", "shape", "dtype", "seed")}
    expected = int(np.prod(spec["shape"])) * np.dtype(spec["dtype"]).itemsize
    if os.path.exists(meta_path) and os.path.exists(path):
        with open(meta_path) as f:
            if json.load(f) == want and os.path.getsize(path) == expected:
                return {"name": spec["name"], "path": path, "bytes": expected, "seconds": 0.0}
    t0 = time.perf_counter()
    rng = np.random.default_rng(spec["seed"])
    data = KINDS[spec["kind"]](spec["shape"], np.dtype(spec["dtype"]).newbyteorder("<"), rng)
    data.tofile(path)
    with open(meta_path, "w") as f:
        json.dump(want, f)
    return {"name": spec["name"], "path": path, "bytes": expected,
            "seconds": time.perf_counter() - t0}


def main():
    out_dir, spec_json = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    for spec in json.loads(spec_json):
        print(json.dumps(generate(out_dir, spec)), flush=True)


if __name__ == "__main__":
    main()
