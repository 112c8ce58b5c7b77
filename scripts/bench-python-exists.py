#!/usr/bin/python3
"""batch_is_exist of 128 keys from Python, as engines call it (HiCache asks exists before every
prefetch): a master and a node with default flags, 128 small objects, then the call timed in
embedded mode (a store contributing no memory, talking to the master) and in standalone mode
(setup_dummy, attached to the node), the modes alternated. Prints p50 / p99 per mode and run.

Usage: scripts/bench-python-exists.py [--calls 3000] [--runs 3]
Needs build/ (the kvpool binary and Python module)."""
import argparse
import time

import bench_pool  # noqa: E402  (puts build/python on sys.path)

import kvpool  # noqa: E402

KEYS = [f"bench-exists/{i:06d}" for i in range(128)]


def timed(store, calls):
    for _ in range(200):  # warm-up: connections, caches
        store.batch_is_exist(KEYS)
    lat = []
    for _ in range(calls):
        t = time.perf_counter_ns()
        got = store.batch_is_exist(KEYS)
        lat.append((time.perf_counter_ns() - t) / 1000)
    assert got == [1] * len(KEYS), got[:4]
    lat.sort()
    return lat[len(lat) // 2], lat[int(len(lat) * 0.99)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with bench_pool.pool("256MB") as (master, node):
        embedded = kvpool.KVPoolStore()
        assert embedded.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", master) == 0, \
            kvpool.last_error()
        standalone = kvpool.KVPoolStore()
        end = time.monotonic() + 20
        while standalone.setup_dummy(16 << 20, 16 << 20, node) != 0:
            if time.monotonic() > end:
                raise RuntimeError("node did not start: " + kvpool.last_error())
            time.sleep(0.05)
        for k in KEYS:
            assert embedded.put(k, b"x" * 4096) == 0, kvpool.last_error()
        for run in range(args.runs):
            for name, store in (("embedded", embedded), ("standalone", standalone)):
                p50, p99 = timed(store, args.calls)
                print(f"run {run}: {name:10s} batch_is_exist(128) p50 {p50:.1f} us, "
                      f"p99 {p99:.1f} us")
        standalone.close()
        embedded.close()


if __name__ == "__main__":
    main()
