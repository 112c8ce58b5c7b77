"""Puts beside a killed embedded client (issue 30): its segment stays mounted until the master's
client TTL (10 s) unmounts it, and meanwhile a put placed there must be placed again on a live
segment, not fail with RPC_FAIL (-900). After the first failure the master stops placing there
(the writer reports the segment unreachable)."""

import os
import signal
import subprocess
import sys
import time

import numpy as np

import kvpool

OK = 0

CHILD = r"""
import sys, time, kvpool
s = kvpool.KVPoolStore()
rc = s.setup("127.0.0.1", "P2PHANDSHAKE", 64 << 20, 0, "tcp", "", sys.argv[1])
print("ready" if rc == 0 else f"setup failed {rc} {kvpool.last_error()}", flush=True)
time.sleep(600)
"""


def start_embedded_child(master):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    child = subprocess.Popen([sys.executable, "-c", CHILD, master], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=env)
    line = child.stdout.readline().strip()
    assert line == "ready", line
    return child


def segments(store):
    return store.stat()["segments"]


def test_puts_avoid_a_killed_clients_segment(fresh_pool, uid):
    writer = kvpool.KVPoolStore()
    assert writer.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                        fresh_pool.master_address) == OK, kvpool.last_error()
    child = start_embedded_child(fresh_pool.master_address)
    try:
        assert len(segments(writer)) == 2
        child.send_signal(signal.SIGKILL)  # exits without close(): its segment stays mounted
        child.wait(timeout=10)
        killed_at = time.monotonic()
        n, size = 64, 64 << 10
        src = np.random.default_rng(7).integers(0, 256, (2 * n, size), dtype=np.uint8)
        dst = np.zeros_like(src)
        assert writer.register_buffer(src.ctypes.data, src.nbytes) == OK
        assert writer.register_buffer(dst.ctypes.data, dst.nbytes) == OK
        for batch in range(2):
            keys = [f"{uid}-{batch}-{i}" for i in range(n)]
            rows = range(batch * n, (batch + 1) * n)
            rc = writer.batch_put_from([k for k in keys], [src[r].ctypes.data for r in rows],
                                       [size] * n)
            assert rc == [OK] * n, (sorted(set(rc)), kvpool.last_error())
            got = writer.batch_get_into(keys, [dst[r].ctypes.data for r in rows], [size] * n)
            assert got == [size] * n
            assert np.array_equal(dst[batch * n:(batch + 1) * n], src[batch * n:(batch + 1) * n])
        # all of it happened while the dead client's segment was still mounted
        assert time.monotonic() - killed_at < 10
        assert len(segments(writer)) == 2
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        writer.close()
