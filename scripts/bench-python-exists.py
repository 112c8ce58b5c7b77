#!/usr/bin/python3
"""batch_is_exist of 128 keys from Python, as engines call it (HiCache asks exists before every
prefetch): a master and a node with default flags, 128 small objects, then the call timed in
embedded mode (a store contributing no memory, talking to the master) and in standalone mode
(setup_dummy, attached to the node), the modes alternated. Prints p50 / p99 per mode and run.

Usage: scripts/bench-python-exists.py [--calls 3000] [--runs 3] [--reply_spin_us N]
                                      [--master_spin_us N]
--reply_spin_us sets the embedded store's client option of that name, --master_spin_us the
master's --rpc_idle_spin_us (unset: their defaults); 0 and 0 show what polling saves.
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
    ap.add_argument("--reply_spin_us", type=int)
    ap.add_argument("--master_spin_us", type=int)
    args = ap.parse_args()
    master_flags = [] if args.master_spin_us is None else \
        ["--rpc_idle_spin_us", str(args.master_spin_us)]
    with bench_pool.pool("256MB", master_flags=master_flags) as (master, node):
        embedded = kvpool.KVPoolStore()
        config = {"master_server_address": master, "global_segment_size": 0}
        if args.reply_spin_us is not None:
            config["reply_spin_us"] = args.reply_spin_us
        assert embedded.setup(config) == 0, kvpool.last_error()
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
