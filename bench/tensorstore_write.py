#!/usr/bin/env python3
"""Writes a raw uint16 array as a Zarr v3 sharded zstd array with tensorstore
and reports the rate: the reference bench/gpu-host.sh compares zspool with.

The array, chunk and shard shapes and the zstd level are zspool bench's (the
script passes them), the codecs are the ones zspool writes (bytes little
endian then zstd; index bytes + crc32c at the end). tensorstore writes through
its file driver into OUT (use a tmpfs such as /dev/shm to leave the disk out:
zspool's bench discards its output). The clock covers opening the array and
the whole write, which ends once every shard is on the store.
"""
import argparse
import importlib.metadata
import os
import shutil
import sys
import time

import numpy as np
import tensorstore as ts


def ints(s):
    return [int(v) for v in s.split(",")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True, help="the raw file (little-endian uint16, C order)")
    ap.add_argument("--shape", required=True, type=ints, help="t,y,x")
    ap.add_argument("--chunk", required=True, type=ints, help="chunk shape t,y,x")
    ap.add_argument("--shard", required=True, type=ints, help="shard shape in elements t,y,x")
    ap.add_argument("--level", type=int, default=1, help="zstd level")
    ap.add_argument("--out", required=True, help="a directory tensorstore may fill (emptied first)")
    a = ap.parse_args()

    arr = np.memmap(a.raw, dtype="<u2", mode="r", shape=tuple(a.shape))
    np.asarray(arr).sum(dtype=np.uint64)  # page the input in before the clock, as zspool's reader finds it
    shutil.rmtree(a.out, ignore_errors=True)
    spec = {
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": a.out},
        "metadata": {
            "shape": a.shape,
            "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": a.shard}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": a.chunk,
                    "codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "zstd", "configuration": {"level": a.level, "checksum": False}},
                    ],
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"},
                    ],
                    "index_location": "end",
                },
            }],
        },
        "create": True,
        "delete_existing": True,
    }
    t0 = time.perf_counter()
    store = ts.open(spec).result()
    store.write(arr).result()
    elapsed = time.perf_counter() - t0

    out = 0
    for root, _, files in os.walk(a.out):
        for f in files:
            out += os.path.getsize(os.path.join(root, f))
    n = arr.nbytes
    version = importlib.metadata.version("tensorstore")
    print(f"tensorstore {version}: in {n/1e9:.3f} GB, out {out/1e9:.3f} GB, ratio {n/out:.4f}, "
          f"{elapsed:.3f} s, {n/elapsed/1e9:.3f} GB/s ({n/elapsed/2**30:.3f} GiB/s)")
    shutil.rmtree(a.out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
