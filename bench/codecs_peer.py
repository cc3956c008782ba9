"""numcodecs side of bench/codecs.exs, driven line by line so both sides interleave their runs.

Usage: codecs_peer.py DATA_FILE CONFIGS_JSON
Prints "ready", then answers each stdin line "<index> encode|decode|size" with one number:
the seconds one encode/decode of codec <index> took, or the encoded size in bytes.
Blosc runs with one thread, like ExZarr's per-chunk calls (ExZarr parallelises across chunks).
"""
import json
import sys
import time

import numcodecs
import numpy as np
from numcodecs import blosc


def main():
    data_file, configs_file = sys.argv[1], sys.argv[2]
    blosc.set_nthreads(1)
    arr = np.fromfile(data_file, dtype="<f8")
    entries = json.load(open(configs_file))
    codecs = [numcodecs.get_codec(dict(e["config"])) for e in entries]
    encoded = {}
    print("ready", flush=True)
    for line in sys.stdin:
        index, op = line.split()
        i = int(index)
        codec = codecs[i]
        if op == "encode":
            t0 = time.perf_counter()
            enc = codec.encode(arr)
            dt = time.perf_counter() - t0
            enc = np.asarray(enc)
            # Compressors decode bytes, as zarr hands them a chunk read from storage.
            encoded[i] = enc.tobytes() if entries[i]["kind"] == "bytes" else enc
            print(dt, flush=True)
        elif op == "decode":
            enc = encoded[i]
            t0 = time.perf_counter()
            codec.decode(enc)
            print(time.perf_counter() - t0, flush=True)
        else:
            enc = encoded[i]
            print(len(enc) if isinstance(enc, bytes) else enc.nbytes, flush=True)


if __name__ == "__main__":
    main()
