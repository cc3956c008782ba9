"""Data-type interop cases for test/dtype/interop_test.exs.

  python cases.py write DIR         zarr-python writes every case under DIR/<name>; prints JSON
  python cases.py read DIR NAME...  zarr-python reads DIR/<name> for each name; prints JSON

Each printed entry holds the whole array and one selection of it in ExZarr's data form: packed
little-endian bytes (hex; structured records exactly as numpy holds them) or, for variable-length
types, a list of base64 items.
"""
import base64, json, sys, warnings

import numpy as np
import zarr

warnings.simplefilter("ignore")

UNICODE = np.array(["ab", "é", "日本語", "", "xyz", "q"], dtype="<U3")
REC = np.array([(1, 2.5), (-3, 4.0), (5, -6.25), (7, 8.0), (9, 1e300)], dtype=[("a", "<i4"), ("b", "<f8")])
REC_NESTED = np.zeros(4, dtype=[("id", "<u2"), ("name", "<U2"), ("t", "<M8[s]"), ("p", [("x", "u1"), ("y", "S2")])])
REC_NESTED["id"] = [1, 2, 3, 65535]
REC_NESTED["name"] = ["a", "bé", "", "zz"]
REC_NESTED["t"] = np.array(["2020-01-01T00:00:01", "NaT", "1969-12-31T23:59:59", "2100-01-01"], dtype="M8[s]")
REC_NESTED["p"]["x"] = [9, 8, 7, 6]
REC_NESTED["p"]["y"] = [b"a", b"bc", b"", b"d"]
REC_BE = np.array([(1, 2.0), (300, -1.5), (-7, 0.0)], dtype=[("a", ">i4"), ("b", "<f8")])
STRINGS = np.array([["a", "bc", "", "déf"], ["日本", "x" * 300, "y", ""], ["z", "", "w", "ü"]], dtype=object)
BYTES = np.array([b"\x00\xff", b"", b"abc", b"\x01" * 70, b"z"], dtype=object)
DATES = np.array(["2020-01-01T12:34:56.789123456", "NaT", "1969-07-20T20:17:00", "1970-01-01"], dtype="M8[ns]")
DAYS = np.array(["2000-02-29", "NaT", "1900-01-01", "2262-04-11", "0001-01-01"], dtype="M8[D]")
DELTAS = np.array([1, -2, np.iinfo(np.int64).min, 3000], dtype="m8[10ms]")
# numpy's datetime64 / timedelta64 without a unit ("generic"): zarr-python's default
GENERIC = np.array([0, 5, np.iinfo(np.int64).min, -1], dtype="<i8")


def cases():
    """(name, zarr_format, data, zarr dtype, chunks, fill_value, compressed?, selection[, shards])."""
    vlen_s = zarr.dtype.VariableLengthUTF8()
    vlen_b = zarr.dtype.VariableLengthBytes()
    out = []
    for f in (2, 3):
        out += [
            (f"U_v{f}", f, UNICODE, None, (4,), None, False, [(1, 5)]),
            (f"U_fill_v{f}", f, UNICODE[:3], None, (2,), "é", False, [(0, 3)]),
            (f"S_v{f}", f, np.array([b"ab", b"", b"xyz", b"\x00a"], dtype="S3"), None, (3,), b"q", False, [(2, 4)]),
            (f"V_v{f}", f, np.array([b"ab\x00", b"\xff\xfe\xfd", b"\x00\x00\x01"], dtype="V3"), None, (2,), None, False, [(1, 3)]),
            (f"M_ns_v{f}", f, DATES, None, (3,), None, False, [(1, 4)]),
            (f"M_D_v{f}", f, DAYS, None, (2,), np.datetime64("2000-01-01"), True, [(0, 3)]),
            (f"m_10ms_v{f}", f, DELTAS, None, (3,), None, False, [(2, 4)]),
            (f"M_generic_v{f}", f, GENERIC.view("M8"), None, (3,), None, False, [(1, 3)]),
            (f"m_generic_v{f}", f, GENERIC.view("m8"), None, (3,), None, False, [(0, 2)]),
            (f"rec_v{f}", f, REC, None, (2,), None, False, [(1, 4)]),
            (f"rec_nested_v{f}", f, REC_NESTED, None, (3,), None, False, [(1, 3)]),
            (f"str_v{f}", f, STRINGS, vlen_s, (2, 3), None, False, [(1, 3), (1, 4)]),
            (f"str_zstd_v{f}", f, STRINGS, vlen_s, (2, 2), "zz", True, [(0, 2), (2, 4)]),
            (f"bytes_v{f}", f, BYTES, vlen_b, (2,), b"zz", False, [(1, 4)]),
        ]
    out += [
        ("U_be_v2", 2, UNICODE.astype(">U3"), None, (4,), None, False, [(1, 5)]),
        ("M_be_v2", 2, DATES.astype(">M8[ns]"), None, (3,), None, False, [(1, 4)]),
        ("rec_be_v2", 2, REC_BE, None, (2,), None, False, [(0, 2)]),
        ("str_sharded_v3", 3, STRINGS, vlen_s, (1, 2), "zz", False, [(1, 3), (1, 3)], (2, 4)),
        ("bytes_sharded_v3", 3, BYTES, vlen_b, (1,), None, True, [(2, 5)], (4,)),
        ("U_sharded_v3", 3, UNICODE, None, (2,), None, False, [(1, 5)], (4,)),
        ("str_F_v2", 2, STRINGS, vlen_s, (2, 3), None, False, [(1, 3), (0, 4)]),
        ("U_F_v2", 2, UNICODE.reshape(2, 3), None, (2, 2), None, False, [(0, 2), (1, 3)]),
    ]
    return out


def dump(arr):
    if arr.dtype.kind in "OT":
        items = [x.encode() if isinstance(x, str) else bytes(x) for x in arr.reshape(-1)]
        return {"items": [base64.b64encode(x).decode() for x in items]}
    if arr.dtype.fields is None:
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    return {"hex": np.ascontiguousarray(arr).tobytes().hex()}


def entry(a, sel):
    index = tuple(slice(lo, hi) for lo, hi in sel)
    return {"all": dump(a[...]), "sel": dump(a[index]), "selection": sel, "dtype": str(a.dtype)}


def write(root):
    result = {}
    for name, fmt, data, dtype, chunks, fill, compressed, sel, *shards in cases():
        kwargs = {} if compressed else {"compressors": None}
        if shards:
            kwargs["shards"] = shards[0]
        if name.endswith("_F_v2"):
            kwargs["order"] = "F"
        if fill is not None:
            kwargs["fill_value"] = fill
        a = zarr.create_array(f"{root}/{name}", shape=data.shape, chunks=chunks, zarr_format=fmt,
                              dtype=dtype if dtype is not None else data.dtype, **kwargs)
        if name.startswith("str_zstd"):
            a[0:2, 0:2] = data[0:2, 0:2]  # the other chunks stay missing: fill values
        elif name.startswith("str_sharded"):
            a[0:2, 0:3] = data[0:2, 0:3]  # one inner chunk all fill, one shard missing
        else:
            a[...] = data
        result[name] = entry(a, sel)
    return result


def read(root, names):
    sels = {c[0]: c[7] for c in cases()}
    return {n: entry(zarr.open_array(f"{root}/{n}", mode="r"), sels[n]) for n in names}


if __name__ == "__main__":
    if sys.argv[1] == "write":
        print(json.dumps(write(sys.argv[2])))
    else:
        print(json.dumps(read(sys.argv[2], sys.argv[3:])))
