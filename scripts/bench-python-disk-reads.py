#!/usr/bin/python3
"""Gets of objects that are only on a node's disk tier, from Python as engines call them
(batch_get_into of registered memory, 128 x 1 MiB per call): a master and a node with default
flags but a 16 MB segment, a 1 GB disk tier in a temporary directory on /tmp and
--disk_promote_after 0 (every read goes to the disk). 512 objects are put and wait until they
are on disk; then rounds of reads alternate between an embedded client (no segment of its own:
over TCP to the node) and a standalone client attached to the node (setup_dummy: the node reads
its own disk into the engine's shared pages). The first round of each checks every byte; the
others are timed. Prints MB/s per mode and run.

Usage: scripts/bench-python-disk-reads.py [--rounds 4] [--runs 3]
Needs build/ (the kvpool binary and Python module)."""
import argparse
import tempfile
import time

import numpy as np

import bench_pool  # noqa: E402  (puts build/python on sys.path)

import kvpool  # noqa: E402

MIB = 1 << 20
BATCH = 128
OBJECTS = 512


def expected(i):
    return np.random.default_rng(i).integers(0, 256, MIB, dtype=np.uint8)


def read_rounds(store, view, ptr, rounds):
    """MB/s of the timed rounds (all but the first, which checks every byte)."""
    keys = [f"disk-read/{i}" for i in range(16, OBJECTS)]  # 0..15 may still be in DRAM
    timed_bytes, t0 = 0, None
    for r in range(rounds):
        if r == 1:
            t0, timed_bytes = time.perf_counter(), 0
        for b in range(0, len(keys), BATCH):
            part = keys[b:b + BATCH]
            got = store.batch_get_into(part, [ptr + k * MIB for k in range(len(part))],
                                       [MIB] * len(part))
            assert got == [MIB] * len(part), (got[:4], kvpool.last_error())
            timed_bytes += MIB * len(part)
            if r == 0:
                for k, key in enumerate(part):
                    i = int(key.rsplit("/", 1)[1])
                    assert np.array_equal(view[k * MIB:(k + 1) * MIB], expected(i)), key
    return timed_bytes / (time.perf_counter() - t0) / 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    flags = ["--disk_promote_after", "0"]
    with tempfile.TemporaryDirectory(dir="/tmp") as disk, \
            bench_pool.pool("16MB", ["--disk_path", disk, "--disk_size", "1GB", *flags]) as \
            (master, node):
        embedded = kvpool.KVPoolStore()
        standalone = kvpool.KVPoolStore()
        end = time.monotonic() + 20
        while standalone.setup_dummy(BATCH * MIB, 16 << 20, node) != 0:
            if time.monotonic() > end:
                raise RuntimeError("node did not start: " + kvpool.last_error())
            time.sleep(0.05)
        assert embedded.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", master) == 0, \
            kvpool.last_error()
        for b in range(0, OBJECTS, 8):  # 8 MB at a time: 16 MB of DRAM, copied to disk between
            keys = [f"disk-read/{i}" for i in range(b, b + 8)]
            assert embedded.put_batch(keys, [expected(i).tobytes() for i in range(b, b + 8)]) \
                == 0, kvpool.last_error()
            end = time.monotonic() + 10
            while embedded.stat()["disk_replicas"] < b + 8 and time.monotonic() < end:
                time.sleep(0.005)
        plain = np.zeros(BATCH * MIB, np.uint8)
        assert embedded.register_buffer(plain.ctypes.data, plain.nbytes) == 0
        shared = kvpool.HostMemAllocator().alloc_buffer(BATCH * MIB)
        assert standalone.register_buffer(shared.ptr, shared.size) == 0, kvpool.last_error()
        shared_view = np.frombuffer(shared, dtype=np.uint8)
        for run in range(args.runs):
            tcp = read_rounds(embedded, plain, plain.ctypes.data, args.rounds)
            local = read_rounds(standalone, shared_view, shared.ptr, args.rounds)
            print(f"run {run}: 128 x 1 MiB gets from disk: embedded over TCP {tcp:.0f} MB/s, "
                  f"standalone through its node {local:.0f} MB/s ({local / tcp:.2f} x)")
        standalone.close()
        embedded.close()


if __name__ == "__main__":
    main()
