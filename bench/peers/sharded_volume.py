"""The sharded-volume workload for one Python library (see bench/sharded_volume.exs).

    python sharded_volume.py gen RAW_FILE SIZE
    python sharded_volume.py run LIB TASK_JSON

`gen` writes the test volume: SIZE^3 uint8, smooth structure plus noise (compresses like
microscopy data, about 2-3x with blosc lz4), seed 0.

`run` runs the workload with LIB ("zarr-python", "zarrs" or "tensorstore") in this process:
create a sharded array (shards 256^3, inner chunks 32^3, inner codecs bytes + blosc lz4,
index bytes + crc32c at the end), write the whole volume, read it back whole, then read each
32^3 cutout of the task's list, `rounds` times, keeping each cutout's best time. Prints one JSON line:
{"write_s", "read_s", "cutout_s": [...], "bytes", "files", "read_sha", "cutouts_sha", "version"}.
"""

import hashlib
import json
import os
import sys
import time

import numpy as np


def sharding_config(inner):
    return {
        "chunk_shape": [inner] * 3,
        "codecs": [
            {"name": "bytes"},
            {
                "name": "blosc",
                "configuration": {
                    "cname": "lz4",
                    "clevel": 5,
                    "shuffle": "shuffle",
                    "typesize": 1,
                    "blocksize": 0,
                },
            },
        ],
        "index_codecs": [
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "crc32c"},
        ],
        "index_location": "end",
    }


def generate(raw, size):
    rng = np.random.default_rng(0)
    axis = np.arange(size, dtype=np.float32)
    out = np.empty((size, size, size), dtype=np.uint8)
    wave_y = np.sin(axis / 9.0)[:, None] * 30
    wave_x = np.cos(axis / 13.0)[None, :] * 30
    for z in range(size):
        plane = 128 + wave_y + wave_x + np.sin(z / 7.0) * 30
        noise = rng.integers(0, 24, size=(size, size), dtype=np.uint8)
        out[z] = plane.astype(np.uint8) + noise
    out.tofile(raw)


class ZarrPython:
    def __init__(self, pipeline=None):
        import zarr

        self.zarr = zarr
        if pipeline:
            zarr.config.set({"codec_pipeline.path": pipeline})

    def version(self):
        return self.zarr.__version__

    def create(self, path, size, shard, inner):
        from zarr.codecs import ShardingCodec

        codec = ShardingCodec.from_dict({"name": "sharding_indexed", "configuration": sharding_config(inner)})
        return self.zarr.create_array(
            store=path,
            shape=(size,) * 3,
            chunks=(shard,) * 3,
            dtype="uint8",
            serializer=codec,
            compressors=None,
            filters=None,
            fill_value=0,
            zarr_format=3,
            overwrite=True,
        )

    def open(self, path):
        return self.zarr.open_array(path, mode="r")

    def write(self, array, data):
        array[...] = data

    def read(self, array, sel=Ellipsis):
        return array[sel]


class Zarrs(ZarrPython):
    def __init__(self):
        import zarrs  # noqa: F401  (registers the pipeline)

        super().__init__("zarrs.ZarrsCodecPipeline")

    def version(self):
        import importlib.metadata

        return f"{self.zarr.__version__} + zarrs {importlib.metadata.version('zarrs')}"


class TensorStore:
    def __init__(self):
        import tensorstore

        self.ts = tensorstore

    def version(self):
        import importlib.metadata

        return importlib.metadata.version("tensorstore")

    def spec(self, path):
        return {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}

    def create(self, path, size, shard, inner):
        spec = self.spec(path)
        spec.update(
            {
                "create": True,
                "delete_existing": True,
                "metadata": {
                    "data_type": "uint8",
                    "shape": [size] * 3,
                    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [shard] * 3}},
                    "codecs": [{"name": "sharding_indexed", "configuration": sharding_config(inner)}],
                    "fill_value": 0,
                },
            }
        )
        return self.ts.open(spec).result()

    def open(self, path):
        return self.ts.open(self.spec(path)).result()

    def write(self, array, data):
        array.write(data).result()

    def read(self, array, sel=Ellipsis):
        return array[sel].read().result()


LIBS = {"zarr-python": ZarrPython, "zarrs": Zarrs, "tensorstore": TensorStore}


def disk_usage(path):
    total, files = 0, 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            total += os.path.getsize(os.path.join(root, name))
            files += 1
    return total, files


def run(lib_name, task):
    lib = LIBS[lib_name]()
    size, shard, inner, cut = task["size"], task["shard"], task["inner"], task["cutout"]
    data = np.fromfile(task["raw"], dtype=np.uint8).reshape((size,) * 3)
    path = task["path"]

    array = lib.create(path, size, shard, inner)
    t0 = time.perf_counter()
    lib.write(array, data)
    write_s = time.perf_counter() - t0
    del data

    array = lib.open(path)
    t0 = time.perf_counter()
    full = np.asarray(lib.read(array))
    read_s = time.perf_counter() - t0
    read_sha = hashlib.sha256(full.tobytes()).hexdigest()
    del full

    cutouts = hashlib.sha256()
    best = [float("inf")] * len(task["positions"])
    for round in range(task["rounds"]):
        for k, (z, y, x) in enumerate(task["positions"]):
            sel = (slice(z, z + cut), slice(y, y + cut), slice(x, x + cut))
            t0 = time.perf_counter()
            got = np.asarray(lib.read(array, sel))
            best[k] = min(best[k], time.perf_counter() - t0)
            if round == 0:
                cutouts.update(got.tobytes())

    total, files = disk_usage(path)
    return {
        "version": lib.version(),
        "write_s": write_s,
        "read_s": read_s,
        "cutout_s": best,
        "bytes": total,
        "files": files,
        "read_sha": read_sha,
        "cutouts_sha": cutouts.hexdigest(),
    }


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        generate(sys.argv[2], int(sys.argv[3]))
    else:
        with open(sys.argv[3]) as f:
            task = json.load(f)
        print(json.dumps(run(sys.argv[2], task)))
