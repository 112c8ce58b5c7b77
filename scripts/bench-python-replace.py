#!/usr/bin/python3
"""What replacing and removing a key costs from Python, on a pool a user starts: a master and one
node with default flags (but --global_segment_size), a `kvpool.KVPoolStore` without a segment of
its own, one registered page. Per run, KEYS keys are put, then each is replaced
(batch_upsert_from), then removed (remove), then put again into the space the removes freed;
the p50 of each call is printed.

An upsert that replaces an object and a remove are answered once the old replica's node has
dropped it from its object list (docs/failure-model.md, "A replace or a remove is acknowledged
only once the old replicas' hosts dropped them"); `--compare` also runs each round with the
master's `--commit_ack_timeout_ms 0` (answered at once, as before), alternating the two.

Usage: scripts/bench-python-replace.py [--runs 3] [--keys 400] [--page 256KB] [--compare]
Needs build/ (the kvpool binary and Python module)."""
import argparse
import statistics
import time

import bench_pool  # noqa: E402  (puts build/python on sys.path)
import numpy as np  # noqa: E402

import kvpool  # noqa: E402


def p50_us(fn, keys):
    lat = []
    for k in keys:
        t = time.perf_counter()
        fn(k)
        lat.append(time.perf_counter() - t)
    return statistics.median(lat) * 1e6


def run_once(page, n, master_flags):
    with bench_pool.pool("1GB", master_flags=master_flags) as (master, _):
        bench_pool.wait_mounted(master)
        store = kvpool.KVPoolStore()
        assert store.setup({"master_server_address": master, "global_segment_size": 0}) == 0, \
            kvpool.last_error()
        try:
            buf = np.random.default_rng(1).integers(0, 256, page, dtype=np.uint8)
            assert store.register_buffer(buf.ctypes.data, buf.nbytes) == 0
            ptr = buf.ctypes.data
            keys = [f"replace-{i}" for i in range(n)]

            def put(k):
                assert store.batch_put_from([k], [ptr], [page]) == [0], kvpool.last_error()

            def upsert(k):
                assert store.batch_upsert_from([k], [ptr], [page]) == [0], kvpool.last_error()

            def remove(k):
                assert store.remove(k) == 0, kvpool.last_error()

            first = p50_us(put, keys)
            return {"put": first, "upsert": p50_us(upsert, keys), "remove": p50_us(remove, keys),
                    "put again": p50_us(put, keys)}
        finally:
            store.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keys", type=int, default=400)
    ap.add_argument("--page", default="256KB")
    ap.add_argument("--compare", action="store_true",
                    help="alternate each run with --commit_ack_timeout_ms 0 on the master")
    args = ap.parse_args()
    page = bench_pool.parse_size(args.page)
    settings = [("default", [])]
    if args.compare:
        settings.append(("--commit_ack_timeout_ms 0", ["--commit_ack_timeout_ms", "0"]))
    results = {name: [] for name, _ in settings}
    for run in range(args.runs):
        for name, flags in (settings if run % 2 == 0 else settings[::-1]):
            r = run_once(page, args.keys, flags)
            results[name].append(r)
            print(f"run {run + 1} {name}: " + ", ".join(f"{k} {v:.0f} us" for k, v in r.items()),
                  flush=True)
    for name, rs in results.items():
        print(f"median of {len(rs)} ({name}, p50 us): " +
              ", ".join(f"{k} {statistics.median(r[k] for r in rs):.0f}" for k in rs[0]))


if __name__ == "__main__":
    main()
