#!/usr/bin/python3
"""Route A's speed: kvpool.vllm's tier against kvpool's own batch calls on the same bytes.

16-token blocks of a 7B-shaped model (32 layers, 8 KV heads x 128, bf16: 2 MiB a block) in
jobs of 256 tokens (16 blocks, 32 MiB). Stores then loads `--chunks` jobs, first with
batch_put_from / batch_get_into called directly (one call per chunk), then through the tier
(submit_store / submit_load of every chunk, then drain_jobs), on fresh keys each round; prints
GB/s of each and the tier's ratio, best of `--rounds`.

Starts its own master and node (the binary: $KVPOOL_BINARY, else build/src/tools/kvpool) unless
--master is given. Embedded client by default; --standalone attaches to the node (setup_dummy)
with the primary in kvpool's shared memory.

    PYTHONPATH=build/python /usr/bin/python3 scripts/bench-vllm-tier.py --chunks 4 --rounds 3
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import uuid

import numpy as np

import bench_pool  # scripts/: free ports, and build/python on sys.path
import kvpool
from kvpool.vllm import JobMetadata, KVPoolSecondaryTier

LAYERS, KV_HEADS, HEAD, DTYPE_BYTES, BLOCK_TOKENS, CHUNK_TOKENS = 32, 8, 128, 2, 16, 256
BLOCK_BYTES = BLOCK_TOKENS * LAYERS * 2 * KV_HEADS * HEAD * DTYPE_BYTES
BLOCKS_PER_CHUNK = CHUNK_TOKENS // BLOCK_TOKENS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chunks", type=int, default=4, help="256-token jobs per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--master", help="an existing master (host:port); else start one")
    ap.add_argument("--node", help="the local node for --standalone with --master")
    ap.add_argument("--node-size", default="1GB")
    ap.add_argument("--standalone", action="store_true")
    args = ap.parse_args()

    with contextlib.ExitStack() as stack:
        master, node = args.master, args.node
        if not master:
            master, node = stack.enter_context(bench_pool.pool(args.node_size))
            bench_pool.wait_mounted(master)
        return run(args, master, node)


def run(args, master: str, node: str) -> int:
    """The rounds against the pool at `master` (`node`: the one --standalone attaches to)."""
    n_blocks = args.chunks * BLOCKS_PER_CHUNK
    store = kvpool.KVPoolStore()
    if args.standalone:
        rc = store.setup_dummy(64 << 20, 16 << 20, node)
        buf = kvpool.HostMemAllocator().alloc_buffer(2 * n_blocks * BLOCK_BYTES)
        mem = np.frombuffer(buf, dtype=np.uint8).reshape(2 * n_blocks, BLOCK_BYTES)
    else:
        rc = store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", master)
        mem = np.zeros((2 * n_blocks, BLOCK_BYTES), dtype=np.uint8)
    assert rc == 0, kvpool.last_error()
    mem[:n_blocks] = np.random.default_rng(0).integers(0, 256, mem[:n_blocks].shape,
                                                       dtype=np.uint8)
    tier = KVPoolSecondaryTier(None, memoryview(mem), store=store, namespace="bench")
    base = mem.ctypes.data
    total = n_blocks * BLOCK_BYTES
    best = {"direct store": 0.0, "direct load": 0.0, "tier store": 0.0, "tier load": 0.0}

    def rate(name, seconds):
        best[name] = max(best[name], total / seconds / 1e9)

    for rnd in range(args.rounds):
        tag = uuid.uuid4().hex[:8]
        # kvpool's own batch calls, one per chunk
        keys = [f"direct-{tag}-{i}" for i in range(n_blocks)]
        t0 = time.perf_counter()
        for c in range(args.chunks):
            s = slice(c * BLOCKS_PER_CHUNK, (c + 1) * BLOCKS_PER_CHUNK)
            ids = range(s.start, s.stop)
            rs = store.batch_put_from(keys[s], [base + i * BLOCK_BYTES for i in ids],
                                      [BLOCK_BYTES] * BLOCKS_PER_CHUNK)
            assert all(r == 0 for r in rs), rs
        rate("direct store", time.perf_counter() - t0)
        t0 = time.perf_counter()
        for c in range(args.chunks):
            s = slice(c * BLOCKS_PER_CHUNK, (c + 1) * BLOCKS_PER_CHUNK)
            ids = range(n_blocks + s.start, n_blocks + s.stop)
            rs = store.batch_get_into(keys[s], [base + i * BLOCK_BYTES for i in ids],
                                      [BLOCK_BYTES] * BLOCKS_PER_CHUNK)
            assert all(r == BLOCK_BYTES for r in rs), rs
        rate("direct load", time.perf_counter() - t0)
        assert np.array_equal(mem[:n_blocks], mem[n_blocks:])
        store.batch_remove(keys, True)

        # the tier: every chunk submitted, then drained
        okeys = [f"{tag}-{i}".encode() + bytes(4) for i in range(n_blocks)]
        mem[n_blocks:] = 0
        for phase, submit, offset in (("tier store", tier.submit_store, 0),
                                      ("tier load", tier.submit_load, n_blocks)):
            t0 = time.perf_counter()
            for c in range(args.chunks):
                lo = c * BLOCKS_PER_CHUNK
                submit(JobMetadata(rnd * 1000 + c + offset,
                                   okeys[lo:lo + BLOCKS_PER_CHUNK],
                                   np.arange(offset + lo, offset + lo + BLOCKS_PER_CHUNK),
                                   False, None))
            tier.drain_jobs()
            rate(phase, time.perf_counter() - t0)
            results = list(tier.get_finished_jobs())
            assert len(results) == args.chunks and all(r.success for r in results), results
        assert np.array_equal(mem[:n_blocks], mem[n_blocks:])
        store.batch_remove([tier.key_name(k) for k in okeys], True)

    mode = "standalone (setup_dummy)" if args.standalone else "embedded"
    print(f"{mode}: {args.chunks} chunks x {BLOCKS_PER_CHUNK} blocks x "
          f"{BLOCK_BYTES >> 20} MiB, best of {args.rounds}")
    for k, v in best.items():
        print(f"  {k:13s} {v:6.2f} GB/s")
    print(f"  ratio store {best['tier store'] / best['direct store']:.2f}, "
          f"load {best['tier load'] / best['direct load']:.2f}")
    tier.shutdown()
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
