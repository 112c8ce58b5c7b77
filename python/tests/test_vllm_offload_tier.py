"""Route A: kvpool.vllm.KVPoolSecondaryTier as a secondary tier of vLLM's native offloading.

vLLM is not installed here: the tier's own stand-ins of vLLM's JobMetadata / JobResult /
LookupResult (written from vLLM's signatures, docs/vllm.md) drive it the way vLLM's tiering
manager does: a primary view of block rows, keys of block hash + 4-byte group index, jobs
submitted and polled with get_finished_jobs(). Real master and node processes (conftest).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import kvpool
from kvpool.vllm import JobMetadata, KVPoolSecondaryTier, LookupResult

OK = 0
NOT_FOUND = int(kvpool.ErrorCode.OBJECT_NOT_FOUND)
INVALID = int(kvpool.ErrorCode.INVALID_PARAMS)
BLOCK_BYTES = 16 << 10
NUM_BLOCKS = 16


def make_key(block_hash: bytes, group: int = 0) -> bytes:
    """vLLM's OffloadKey: the block hash, then the group index as 4 big-endian bytes."""
    return block_hash + group.to_bytes(4, "big")


def block_hash(uid: str, i: int) -> bytes:
    return f"{uid}-{i}".encode().ljust(32, b".")


def pattern(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, BLOCK_BYTES, dtype=np.uint8)


def primary(alloc=None) -> np.ndarray:
    if alloc is None:
        return np.zeros((NUM_BLOCKS, BLOCK_BYTES), dtype=np.uint8)
    buf = alloc.alloc_buffer(NUM_BLOCKS * BLOCK_BYTES)
    return np.frombuffer(buf, dtype=np.uint8).reshape(NUM_BLOCKS, BLOCK_BYTES)


_job_ids = iter(range(1, 1 << 30))


def job(keys, block_ids) -> JobMetadata:
    return JobMetadata(job_id=next(_job_ids), keys=list(keys),
                       block_ids=np.array(block_ids, dtype=np.int64), is_promotion=False,
                       req_context=None)


def run(tier, meta, submit, timeout=60):
    """Submits a job, waits for it, returns (success, per-block results)."""
    t0 = time.monotonic()
    submit(meta)
    assert time.monotonic() - t0 < 0.5, "submit blocked the caller"
    assert tier.drain_jobs(timeout=timeout)
    done = {r.job_id: r.success for r in tier.get_finished_jobs()}
    assert meta.job_id in done
    return done[meta.job_id], tier.block_results(meta.job_id)


def resolve(tier, key, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = tier.lookup(key, None)
        if r not in (LookupResult.RETRY, LookupResult.HIT_PENDING):
            return r
        time.sleep(0.01)
    raise TimeoutError("lookup never resolved")


def embedded(pool, view, **kw):
    return KVPoolSecondaryTier(None, memoryview(view), "kvpool",
                               master_server_address=pool.master_address, namespace="t", **kw)


def round_trip(writer, wview, reader, rview, uid):
    keys = [make_key(block_hash(uid, i), i % 2) for i in range(6)]  # two KV cache groups
    keys.append(make_key(block_hash(uid, 0), 1))  # same hash, other group: its own object
    src = [1, 3, 4, 7, 8, 10, 12]
    for n, b in enumerate(src):
        wview[b] = pattern(n)
    ok, rs = run(writer, job(keys, src), writer.submit_store)
    assert ok and rs == [OK] * len(keys)
    for k in keys:
        assert resolve(reader, k) == LookupResult.HIT
    dst = [0, 2, 5, 6, 9, 11, 13]
    ok, rs = run(reader, job(keys, dst), reader.submit_load)
    assert ok and rs == [BLOCK_BYTES] * len(keys)
    for n, b in enumerate(dst):
        assert np.array_equal(rview[b], pattern(n)), f"block {n} differs"


def test_round_trip_embedded(pool, uid):
    wv, rv = primary(), primary()
    w, r = embedded(pool, wv), embedded(pool, rv)
    try:
        assert w.zero_copy and not w.standalone
        round_trip(w, wv, r, rv, uid)
    finally:
        w.shutdown()
        r.shutdown()


@pytest.mark.skipif(not kvpool.HAS_STANDALONE, reason="no standalone mode in build")
@pytest.mark.parametrize("shared", [True, False], ids=["kvpool-shm", "staged"])
def test_round_trip_standalone(pool, uid, shared):
    """Beside a local node: the primary in kvpool's shared memory moves once (zero-copy); any
    other primary goes through the tier's staging area."""
    alloc = kvpool.HostMemAllocator() if shared else None
    wv, rv = primary(alloc), primary(alloc)
    w = KVPoolSecondaryTier(None, memoryview(wv), node_address=pool.node_address(0),
                            namespace="t", staging_bytes=3 * BLOCK_BYTES)
    r = KVPoolSecondaryTier(None, memoryview(rv), node_address=pool.node_address(0),
                            namespace="t", staging_bytes=3 * BLOCK_BYTES)
    try:
        assert w.standalone and w.zero_copy == shared
        round_trip(w, wv, r, rv, uid)
    finally:
        w.shutdown()
        r.shutdown()


def test_prefix_with_evicted_middle_block(pool, store, uid):
    """A removed (evicted) middle block: its lookup is a miss and its load fails that block
    (-704) with the job, while the other blocks load their exact bytes."""
    wv, rv = primary(), primary()
    w = embedded(pool, wv)
    try:
        keys = [make_key(block_hash(uid, i)) for i in range(4)]
        for i in range(4):
            wv[i] = pattern(100 + i)
        assert run(w, job(keys, range(4)), w.submit_store)[0]
    finally:
        w.shutdown()
    assert store.remove(offload_name(keys[2]), True) == OK
    r = embedded(pool, rv)
    try:
        assert [resolve(r, k) for k in keys] == [LookupResult.HIT, LookupResult.HIT,
                                                  LookupResult.MISS, LookupResult.HIT]
        rv[:] = 0xEE
        ok, rs = run(r, job(keys, [4, 5, 6, 7]), r.submit_load)
        assert not ok
        assert rs == [BLOCK_BYTES, BLOCK_BYTES, NOT_FOUND, BLOCK_BYTES]
        for i in (0, 1, 3):
            assert np.array_equal(rv[4 + i], pattern(100 + i))
        assert resolve(r, keys[2]) == LookupResult.MISS
    finally:
        r.shutdown()


def offload_name(key):
    from kvpool.vllm import offload_key_name
    return offload_key_name("t", BLOCK_BYTES, key)


def test_block_ids_outside_the_primary(pool, uid):
    """Block ids past the primary view (or negative): those blocks fail with INVALID_PARAMS,
    the others are stored and loaded; nothing is written outside the view."""
    v = primary()
    t = embedded(pool, v)
    try:
        keys = [make_key(block_hash(uid, i)) for i in range(4)]
        v[0], v[1] = pattern(1), pattern(2)
        ok, rs = run(t, job(keys, [0, NUM_BLOCKS, 1, -1]), t.submit_store)
        assert not ok and rs == [OK, INVALID, OK, INVALID]
        assert resolve(t, keys[1]) == LookupResult.MISS
        ok, rs = run(t, job([keys[0], keys[2]], [5, 10**9]), t.submit_load)
        assert not ok and rs == [BLOCK_BYTES, INVALID]
        assert np.array_equal(v[5], pattern(1))
        ok, rs = run(t, job(keys[:2], [3]), t.submit_load)  # lengths differ: every block fails
        assert not ok and rs == [INVALID, INVALID]
    finally:
        t.shutdown()


def test_store_while_the_node_restarts(fresh_pool, uid):
    """The only node dies: a store fails per block within the deadline (nothing hangs, the
    caller never blocks); a node back in the pool takes the next store, read back exactly."""
    v = primary()
    t = KVPoolSecondaryTier(None, memoryview(v), master_server_address=fresh_pool.master_address,
                            namespace="t", rpc_timeout_ms=2000, transfer_timeout_ms=3000)
    try:
        keys = [make_key(block_hash(uid, i)) for i in range(8)]
        for i in range(8):
            v[i] = pattern(200 + i)
        fresh_pool.nodes[0].stop()
        ok, rs = run(t, job(keys[:4], range(4)), t.submit_store, timeout=60)
        assert not ok and all(r < 0 for r in rs), rs
        fresh_pool.add_node("128MB")
        end = time.monotonic() + 30
        while True:  # the master drops the dead segment within its client TTL
            ok, rs = run(t, job(keys[4:], range(4, 8)), t.submit_store)
            if ok or time.monotonic() > end:
                break
            time.sleep(0.5)
        assert ok, rs
        v[8:] = 0
        ok, rs = run(t, job(keys[4:], range(8, 12)), t.submit_load)
        assert ok
        for i in range(4):
            assert np.array_equal(v[8 + i], pattern(204 + i))
        ok, rs = run(t, job(keys[:4], range(12, 16)), t.submit_load)
        assert all(r in (BLOCK_BYTES, NOT_FOUND) or r < 0 for r in rs)
        for i, r in enumerate(rs):
            if r == BLOCK_BYTES:
                assert np.array_equal(v[12 + i], pattern(200 + i))
    finally:
        t.shutdown()


WRITER = textwrap.dedent("""
    import sys, numpy as np
    from kvpool.vllm import JobMetadata, KVPoolSecondaryTier
    master, uid, bb, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    v = np.zeros((n, bb), dtype=np.uint8)
    for i in range(n):
        v[i] = np.random.default_rng(1000 + i).integers(0, 256, bb, dtype=np.uint8)
    t = KVPoolSecondaryTier(None, memoryview(v), master_server_address=master, namespace="t")
    for j in range(0, n, 8):
        keys = [(f"{uid}-{i}".encode().ljust(32, b".")) + bytes(4) for i in range(j, j + 8)]
        t.submit_store(JobMetadata(j, keys, np.arange(j, j + 8), False, None))
    while not list(t.get_finished_jobs()):
        pass
    print("storing", flush=True)
    t.drain_jobs()
    print("done", flush=True)
""")


def test_worker_killed_mid_store(pool, uid):
    """A process killed while its tier stores: every block another tier then loads is either
    the exact bytes or a per-block failure, never other bytes."""
    n, bb = 96, 1 << 20
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    p = subprocess.Popen([sys.executable, "-c", WRITER, pool.master_address, uid, str(bb),
                          str(n)], stdout=subprocess.PIPE, env=env, text=True)
    try:
        assert p.stdout.readline().strip() == "storing"
        p.send_signal(signal.SIGKILL)
    finally:
        p.wait(timeout=30)
    v = np.full((n, bb), 0xEE, dtype=np.uint8)
    t = KVPoolSecondaryTier(None, memoryview(v), master_server_address=pool.master_address,
                            namespace="t")
    try:
        keys = [(f"{uid}-{i}".encode().ljust(32, b".")) + bytes(4) for i in range(n)]
        ok, rs = run(t, job(keys, range(n)), t.submit_load)
        loaded = 0
        for i, r in enumerate(rs):
            if r == bb:
                loaded += 1
                want = np.random.default_rng(1000 + i).integers(0, 256, bb, dtype=np.uint8)
                assert np.array_equal(v[i], want), f"block {i}: wrong bytes"
            else:
                assert r < 0, (i, r)
        assert loaded >= 8 and ok == (loaded == n)
        print(f"{loaded} of {n} blocks stored before the kill")
    finally:
        t.shutdown()
