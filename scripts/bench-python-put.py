#!/usr/bin/python3
"""Remote puts and gets from Python as SGLang makes them, on a pool a user starts: a master and
one node with default flags (but --global_segment_size), a `mooncake.store`
MooncakeDistributedStore set up with no segment of its own (every byte crosses TCP to the node),
one registered buffer, then batch_put_from / batch_get_into of BATCH x PAGE:

  fresh  puts from the moment the node has mounted, into segment memory never written before
  warm   the same puts again after remove_all, into memory the first ones wrote
  get    batch_get_into of the warm keys, every batch checked byte-exact

The limits are measured in the same run: one-thread memcpy (numpy) of one batch, and a plain
TCP sender/receiver pair over loopback (blocking sendall / recv_into MSG_WAITALL on threads,
which release the GIL: the syscalls of a C pair), best of 1, 2 and 4 streams, from and into
memory as large as a batch. Also printed: how long the node took from its start to its mount.

Usage: scripts/bench-python-put.py [--segment 1GB] [--rounds 5] [--runs 3] [--page 1MB]
                                   [--batch 128] [--no_limits | --limits_only]
                                   [-- NODE FLAGS...]
Needs build/ (the kvpool binary and Python module)."""
import argparse
import os
import socket
import statistics
import sys
import threading
import time

import bench_pool  # noqa: E402  (puts build/python on sys.path)
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(bench_pool.ROOT, "python", "compat"))
import kvpool  # noqa: E402
from mooncake.store import MooncakeDistributedStore  # noqa: E402


def tcp_pair_gbps(src, dst, streams, page, repeats=8):
    """Sends `repeats` x src over `streams` loopback connections into dst, page by page."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    share = (src.nbytes // streams) // page * page
    senders = [socket.create_connection(("127.0.0.1", port)) for _ in range(streams)]
    receivers = [listener.accept()[0] for _ in range(streams)]
    listener.close()
    src_view, dst_view = memoryview(src), memoryview(dst)

    def send(i):
        base = i * share
        for _ in range(repeats):
            for off in range(0, share, page):
                senders[i].sendall(src_view[base + off:base + off + page])

    def recv(i):
        base = i * share
        for _ in range(repeats):
            for off in range(0, share, page):
                got = receivers[i].recv_into(dst_view[base + off:base + off + page], page,
                                             socket.MSG_WAITALL)
                assert got == page, got

    threads = [threading.Thread(target=f, args=(i,)) for i in range(streams) for f in (send, recv)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    dt = time.perf_counter() - t
    for s in senders + receivers:
        s.close()
    return repeats * share * streams / dt / 1e9


def timed_rounds(fn, rounds, nbytes):
    rates = []
    for r in range(rounds):
        t = time.perf_counter()
        fn(r)
        rates.append(nbytes / (time.perf_counter() - t) / 1e9)
    return rates


def run_once(args):
    page, batch = bench_pool.parse_size(args.page), args.batch
    nbytes = page * batch
    buf = np.empty(3 * nbytes, dtype=np.uint8)
    buf[:nbytes] = np.random.default_rng(1).integers(0, 256, nbytes, dtype=np.uint8)
    buf[nbytes:] = 0
    src, dst = buf[:nbytes], buf[nbytes:2 * nbytes]
    memcpy, tcp = 1.0, 1.0
    if not args.no_limits:
        memcpy = bench_pool.memcpy_gbps(src, dst)
        # Untimed first: on a shadow-paging VM the kernel's first write into dst costs a
        # hypervisor fault per page (docs/benchmarks.md, round 23), a cost of fresh memory,
        # not of the wire; the pool's buffers are past it too when its rows are timed.
        tcp_pair_gbps(src, dst, 1, page, repeats=1)
        tcp = max(tcp_pair_gbps(src, dst, s, page) for s in (1, 2, 4))
    t0 = time.monotonic()
    with bench_pool.pool(args.segment, args.node_flags) as (master, _):
        bench_pool.wait_mounted(master)
        mounted_s = time.monotonic() - t0
        store = MooncakeDistributedStore()
        assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", master,
                           None) == 0, kvpool.last_error()
        base = buf.ctypes.data
        assert store.register_buffer(base, buf.nbytes) == 0, kvpool.last_error()
        ptrs = [base + i * page for i in range(batch)]
        dptrs = [base + nbytes + i * page for i in range(batch)]
        sizes = [page] * batch

        def put(prefix):
            def call(r):
                keys = [f"{prefix}-{r}-{i}" for i in range(batch)]
                codes = store.batch_put_from(keys, ptrs, sizes)
                assert all(c == 0 for c in codes), (codes[:4], kvpool.last_error())
            return call

        fresh = timed_rounds(put("fresh"), args.rounds, nbytes)
        assert store.remove_all() >= 0, kvpool.last_error()
        warm = timed_rounds(put("warm"), args.rounds, nbytes)

        def get(r):
            keys = [f"warm-{r % args.rounds}-{i}" for i in range(batch)]
            got = store.batch_get_into(keys, dptrs, sizes)
            assert all(g == page for g in got), (got[:4], kvpool.last_error())
        gets = timed_rounds(get, args.rounds, nbytes)
        assert np.array_equal(src, dst), "batch_get_into returned wrong bytes"
        store.close()
    return mounted_s, fresh, warm, gets, memcpy, tcp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--segment", default="1GB")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--page", default="1MB")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--no_limits", action="store_true", help="skip memcpy / tcp (for profiling)")
    ap.add_argument("--limits_only", action="store_true", help="only the plain TCP pair")
    ap.add_argument("node_flags", nargs="*")
    args = ap.parse_args()
    size = bench_pool.parse_size
    if size(args.page) * args.batch * args.rounds > size(args.segment) * 0.9:
        ap.error("--rounds x --batch x --page must fit in 90 % of --segment (fresh memory)")
    med = statistics.median
    if args.limits_only:
        page = size(args.page)
        nbytes = page * args.batch
        buf = np.ones(2 * nbytes, dtype=np.uint8)
        for run in range(args.runs):
            each = {n: tcp_pair_gbps(buf[:nbytes], buf[nbytes:], n, page) for n in (1, 2, 4)}
            print(f"run {run}: plain TCP pair, best of 1/2/4 streams {max(each.values()):.2f} "
                  f"GB/s ({', '.join(f'{n}: {v:.2f}' for n, v in each.items())})")
        return
    for run in range(args.runs):
        mounted_s, fresh, warm, gets, memcpy, tcp = run_once(args)
        print(f"run {run}: node {args.segment} {' '.join(args.node_flags) or '(default flags)'}, "
              f"mounted {mounted_s:.2f} s after start; limits: memcpy {memcpy:.2f} GB/s, "
              f"tcp pair {tcp:.2f} GB/s")
        for name, rates in (("put fresh", fresh), ("put warm", warm), ("get", gets)):
            print(f"  {name:9s} median {med(rates):.2f} GB/s = {med(rates) / tcp:.2f} x tcp "
                  f"(rounds: {', '.join(f'{r:.2f}' for r in rates)})")
        print(f"  put fresh / put warm {med(fresh) / med(warm):.2f}, put warm / get "
              f"{med(warm) / med(gets):.2f}")


if __name__ == "__main__":
    main()
