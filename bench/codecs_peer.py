"""numcodecs side of bench/codecs.exs: times encode/decode of each codec config on the same data.

Usage: codecs_peer.py DATA_FILE CONFIGS_JSON REPS
Prints a JSON list of {"encode_s": median seconds, "decode_s": ..., "size": encoded bytes}.
"""
import json
import statistics
import sys
import time

import numcodecs
import numpy as np


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main():
    data_file, configs_file, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    arr = np.fromfile(data_file, dtype="<f8")
    results = []
    for entry in json.load(open(configs_file)):
        config, kind = entry["config"], entry["kind"]
        codec = numcodecs.get_codec(dict(config))
        n = reps if entry.get("slow") is None else max(1, reps // 3)
        enc_s, enc = median_time(lambda: codec.encode(arr), n)
        enc = np.asarray(enc)
        if kind == "bytes":
            # Compressors get bytes to decode, as zarr hands them a chunk read from storage.
            enc = enc.tobytes()
        dec_s, _ = median_time(lambda: codec.decode(enc), n)
        size = len(enc) if isinstance(enc, bytes) else enc.nbytes
        results.append({"encode_s": enc_s, "decode_s": dec_s, "size": size})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
