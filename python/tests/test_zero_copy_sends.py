"""Zero-copy sends (docs/architecture.md, "Zero-copy sends"): puts and gets stay byte-exact
with zero-copy asked for on every send, and a writer killed mid-put commits no half object and
changes no other object's bytes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np

import kvpool

PAGE = 256 << 10


def page_bytes(r: int, i: int) -> np.ndarray:
    """The bytes of page i of round r: a value per page, and (r, i) at the start."""
    p = np.full(PAGE, (r * 31 + i) % 251, dtype=np.uint8)
    p[:8] = np.frombuffer(np.array([r, i], dtype=np.uint32).tobytes(), dtype=np.uint8)
    return p


def open_store(master: str, zero_copy_min: int) -> kvpool.KVPoolStore:
    s = kvpool.KVPoolStore()
    assert s.setup({"master_server_address": master, "global_segment_size": 0,
                    "zero_copy_send_min_bytes": zero_copy_min}) == 0, kvpool.last_error()
    return s


def test_every_send_asked_zero_copy_round_trips_exact(pool, uid):
    """zero_copy_send_min_bytes=1 asks for zero-copy on every send, the master's small calls
    too, so the completions' error queue is exercised on every wait; 0 never asks. Either way,
    and across the two, the bytes read back are the bytes put."""
    n = 16
    stores = {zc: open_store(pool.master_address, zc) for zc in (1, 0)}
    try:
        for zc, s in stores.items():
            src = np.stack([page_bytes(zc, i) for i in range(n)])
            assert s.register_buffer(src.ctypes.data, src.nbytes) == 0
            keys = [f"{uid}-zc{zc}-{i}" for i in range(n)]
            codes = s.batch_put_from(keys, [src.ctypes.data + i * PAGE for i in range(n)],
                                     [PAGE] * n)
            assert codes == [0] * n, (codes, kvpool.last_error())
            s.unregister_buffer(src.ctypes.data)
        for s in stores.values():  # each reads what either wrote
            for zc in (1, 0):
                dst = np.zeros((n, PAGE), dtype=np.uint8)
                assert s.register_buffer(dst.ctypes.data, dst.nbytes) == 0
                got = s.batch_get_into([f"{uid}-zc{zc}-{i}" for i in range(n)],
                                       [dst.ctypes.data + i * PAGE for i in range(n)], [PAGE] * n)
                assert got == [PAGE] * n, (got, kvpool.last_error())
                for i in range(n):
                    assert np.array_equal(dst[i], page_bytes(zc, i)), (zc, i)
                s.unregister_buffer(dst.ctypes.data)
    finally:
        for s in stores.values():
            s.close()


WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    import kvpool
    sys.path.insert(0, sys.argv[3])
    from test_zero_copy_sends import PAGE, open_store, page_bytes
    master, uid, rounds, batch = sys.argv[1], sys.argv[2], int(sys.argv[4]), int(sys.argv[5])
    for r in range(rounds):
        s = open_store(master, 64 << 10)  # new connections: their first sends go zero-copy
        src = np.stack([page_bytes(r, i) for i in range(batch)])
        assert s.register_buffer(src.ctypes.data, src.nbytes) == 0
        if r == 1:
            print("sending", flush=True)
        s.batch_put_from([f"{uid}-v{r}-{i}" for i in range(batch)],
                         [src.ctypes.data + i * PAGE for i in range(batch)], [PAGE] * batch)
        if r == 0:
            print("putting", flush=True)
        s.close()
    print("done", flush=True)
""")


def test_a_writer_killed_mid_put_commits_no_half_object(fresh_pool, uid):
    """kill -9 while a writer's zero-copy sends may be in flight: each of its objects reads back
    whole or not at all, the objects put before are untouched, and the node serves on."""
    master = fresh_pool.master_address
    keep = open_store(master, 64 << 10)
    try:
        kept = np.stack([page_bytes(1000, i) for i in range(8)])
        assert keep.register_buffer(kept.ctypes.data, kept.nbytes) == 0
        assert keep.batch_put_from([f"{uid}-keep-{i}" for i in range(8)],
                                   [kept.ctypes.data + i * PAGE for i in range(8)],
                                   [PAGE] * 8) == [0] * 8
        rounds, batch = 4, 64  # 64 MiB at most: nothing is evicted from the 128 MB node
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        p = subprocess.Popen([sys.executable, "-c", WRITER, master, uid,
                              os.path.dirname(os.path.abspath(__file__)), str(rounds),
                              str(batch)], stdout=subprocess.PIPE, env=env, text=True)
        try:
            assert p.stdout.readline().strip() == "putting"
            assert p.stdout.readline().strip() == "sending"
            time.sleep(0.002)  # into round 1's put: 16 MiB, some milliseconds of sending
            p.send_signal(signal.SIGKILL)
        finally:
            p.wait(timeout=30)
        dst = np.zeros((batch, PAGE), dtype=np.uint8)
        assert keep.register_buffer(dst.ctypes.data, dst.nbytes) == 0
        whole = 0
        for r in range(rounds):
            dst.fill(0xEE)
            got = keep.batch_get_into([f"{uid}-v{r}-{i}" for i in range(batch)],
                                      [dst.ctypes.data + i * PAGE for i in range(batch)],
                                      [PAGE] * batch)
            for i, g in enumerate(got):
                if g == PAGE:
                    whole += 1
                    assert np.array_equal(dst[i], page_bytes(r, i)), f"round {r} page {i}"
                else:
                    assert g < 0, (r, i, g)
        assert whole >= batch, "the writer's first round was acknowledged before the kill"
        print(f"{whole} of {rounds * batch} pages put before the kill")
        got = keep.batch_get_into([f"{uid}-keep-{i}" for i in range(8)],
                                  [dst.ctypes.data + i * PAGE for i in range(8)], [PAGE] * 8)
        assert got == [PAGE] * 8
        for i in range(8):
            assert np.array_equal(dst[i], page_bytes(1000, i)), f"kept page {i} changed"
        # The node serves on: a new put and get of the kept keys' neighbours.
        assert keep.batch_put_from([f"{uid}-after"], [kept.ctypes.data], [PAGE]) == [0]
        assert keep.batch_get_into([f"{uid}-after"], [dst.ctypes.data], [PAGE]) == [PAGE]
        assert np.array_equal(dst[0], kept[0])
    finally:
        keep.close()
