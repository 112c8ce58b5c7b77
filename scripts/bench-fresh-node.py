#!/usr/bin/python3
"""First writes into a freshly started node, as an engine meets them: a master and a node started
with the given node flags (default flags unless told), a standalone client attached from Python,
then batch_put_from of 128 x 1 MiB pages with fresh keys, batch after batch, from the moment the
node has mounted. Prints each batch's GB/s, the median, and single-thread memcpy of the same
128 MiB measured in the same run (numpy copy), so the ratio is same-run.

Usage: scripts/bench-fresh-node.py [--batches 16] [--segment 4GB] [--runs 3] [-- NODE FLAGS...]
  e.g. scripts/bench-fresh-node.py -- --prefault false
Needs build/ (the kvpool binary and Python module)."""
import argparse
import statistics
import time

import bench_pool  # noqa: E402  (puts build/python on sys.path)
import numpy as np  # noqa: E402

import kvpool  # noqa: E402

PAGE = 1 << 20
BATCH = 128


def run_once(args, node_flags):
    with bench_pool.pool(args.segment, node_flags) as (_, node):
        store = kvpool.KVPoolStore()
        end = time.monotonic() + 20
        while store.setup_dummy(BATCH * PAGE * 2, 16 << 20, node) != 0:
            if time.monotonic() > end:
                raise RuntimeError("node did not start: " + kvpool.last_error())
            time.sleep(0.02)
        buf = kvpool.HostMemAllocator().alloc_buffer(BATCH * PAGE * 2)
        assert store.register_buffer(buf.ptr, buf.size) == 0, kvpool.last_error()
        view = np.frombuffer(buf, dtype=np.uint8)
        view[:] = np.random.default_rng(1).integers(0, 255, view.size, dtype=np.uint8)
        ptrs = [buf.ptr + i * PAGE for i in range(BATCH)]
        rates = []
        for b in range(args.batches):
            keys = [f"fresh-{b}-{i}" for i in range(BATCH)]
            t = time.perf_counter()
            codes = store.batch_put_from(keys, ptrs, [PAGE] * BATCH)
            dt = time.perf_counter() - t
            assert all(c == 0 for c in codes), (codes[:4], kvpool.last_error())
            rates.append(BATCH * PAGE / dt / 1e9)
        memcpy = bench_pool.memcpy_gbps(view[:BATCH * PAGE], view[BATCH * PAGE:])
        store.close()
        return rates, memcpy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=16)
    ap.add_argument("--segment", default="4GB")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("node_flags", nargs="*")
    args = ap.parse_args()
    for run in range(args.runs):
        rates, memcpy = run_once(args, args.node_flags)
        med = statistics.median(rates)
        print(f"run {run}: node flags {args.node_flags or '(default)'}: first batch "
              f"{rates[0]:.2f} GB/s, median of {len(rates)} {med:.2f} GB/s, memcpy {memcpy:.2f} "
              f"GB/s, ratio {med / memcpy:.2f} (first {rates[0] / memcpy:.2f})")


if __name__ == "__main__":
    main()
