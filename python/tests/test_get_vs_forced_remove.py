"""A get racing a forced remove (issue 30): per key, the exact bytes of a version of that key or
OBJECT_NOT_FOUND (-704) / REPLICA_IS_NOT_READY (-703, a re-put in flight), never a byte count
with other bytes behind it (unwritten destinations, or another object's bytes)."""

import threading
import time

import numpy as np
import pytest

import kvpool
from kvpool import ErrorCode

OK = 0
HALF = 32 << 10  # vLLM's connector: K and V of a block chunk, two buffers per key
SIZE = 2 * HALF
SENTINEL = 0xEE


def pattern(key: str, version: int) -> np.ndarray:
    """SIZE bytes that name `key` and `version` in every 8-byte word (a mix of two is visible)."""
    word = (hash((key, version)) & 0x00FF_FFFF_FFFF_FFFF) | (1 << 56)  # never the sentinel
    return np.full(SIZE // 8, word, dtype=np.uint64).view(np.uint8)


class Pages:
    """Registered memory: one source and one destination slot (two buffers each) per key."""

    def __init__(self, store, n, standalone):
        if standalone:
            self.buf = kvpool.HostMemAllocator().alloc_buffer(2 * n * SIZE)
            self.mem = np.frombuffer(self.buf, dtype=np.uint8)
            base = self.buf.ptr
        else:
            self.mem = np.zeros(2 * n * SIZE, dtype=np.uint8)
            base = self.mem.ctypes.data
        assert store.register_buffer(base, self.mem.nbytes) == OK, kvpool.last_error()
        self.base, self.n = base, n

    def src(self, i):
        return self.mem[i * SIZE:(i + 1) * SIZE]

    def dst(self, i):
        return self.mem[(self.n + i) * SIZE:(self.n + i + 1) * SIZE]

    def ptrs(self, i, dst):
        at = self.base + ((self.n if dst else 0) + i) * SIZE
        return [at, at + HALF]


def make_store(pool, mode):
    s = kvpool.KVPoolStore()
    if mode == "standalone":
        rc = s.setup_dummy(64 << 20, 16 << 20, pool.node_address(0))
    elif mode == "embedded-segment":
        rc = s.setup({"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
                      "global_segment_size": str(32 << 20), "local_buffer_size": "0",
                      "protocol": "tcp", "master_server_addr": pool.master_address})
    else:
        rc = s.setup({"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
                      "global_segment_size": "0", "local_buffer_size": "0", "protocol": "tcp",
                      "master_server_addr": pool.master_address})
    assert rc == OK, kvpool.last_error()
    return s


MODES = ["embedded", "embedded-segment", "standalone"]


@pytest.mark.parametrize("mode", MODES)
def test_removed_keys_answer_not_found(pool, uid, mode):
    """The issue's steps, repeated: put four keys, force-remove two, get all four."""
    s = make_store(pool, mode)
    try:
        pages = Pages(s, 4, mode == "standalone")
        for rnd in range(12):
            keys = [f"{uid}-{rnd}-{i}" for i in range(4)]
            for i, k in enumerate(keys):
                pages.src(i)[:] = pattern(k, 0)
            rc = s.batch_put_from_multi_buffers(keys, [pages.ptrs(i, False) for i in range(4)],
                                                [[HALF, HALF]] * 4)
            assert rc == [OK] * 4, kvpool.last_error()
            assert s.remove(keys[0], force=True) == OK
            assert s.remove(keys[2], force=True) == OK
            for i in range(4):
                pages.dst(i)[:] = SENTINEL
            got = s.batch_get_into_multi_buffers(keys, [pages.ptrs(i, True) for i in range(4)],
                                                 [[HALF, HALF]] * 4)
            assert got[0] == ErrorCode.OBJECT_NOT_FOUND and got[2] == ErrorCode.OBJECT_NOT_FOUND, got
            assert got[1] == SIZE and got[3] == SIZE, got
            for i in (1, 3):
                assert np.array_equal(pages.dst(i), pattern(keys[i], 0)), (rnd, i)
            for i in (0, 2):
                assert (pages.dst(i) == SENTINEL).all(), (rnd, i)
    finally:
        s.close()


@pytest.mark.parametrize("mode", MODES)
def test_get_racing_forced_remove_and_reput(pool, uid, mode):
    """A reader loops over keys that a writer keeps force-removing and putting again with new
    bytes (and other keys that take the freed space): every count the reader sees has the exact
    bytes of one version of that key behind it."""
    n = 16
    writer = make_store(pool, mode)
    reader = make_store(pool, mode)
    try:
        wpages = Pages(writer, n, mode == "standalone")
        rpages = Pages(reader, n, mode == "standalone")
        keys = [f"{uid}-race-{i}" for i in range(n)]
        version = [0] * n
        stop = threading.Event()
        failures = []

        def write():
            rnd = 0
            while not stop.is_set():
                rnd += 1
                for i, k in enumerate(keys):
                    writer.remove(k, force=True)
                    version[i] += 1
                    wpages.src(i)[:] = pattern(k, version[i])
                writer.batch_put_from_multi_buffers(keys, [wpages.ptrs(i, False) for i in range(n)],
                                                    [[HALF, HALF]] * n)

        t = threading.Thread(target=write)
        t.start()
        try:
            end = time.monotonic() + 4
            reads = 0
            while time.monotonic() < end and not failures:
                for i in range(n):
                    rpages.dst(i)[:] = SENTINEL
                got = reader.batch_get_into_multi_buffers(
                    keys, [rpages.ptrs(i, True) for i in range(n)], [[HALF, HALF]] * n)
                for i, r in enumerate(got):
                    if r < 0:
                        assert r in (ErrorCode.OBJECT_NOT_FOUND, ErrorCode.REPLICA_IS_NOT_READY,
                                     ErrorCode.OBJECT_HAS_LEASE), (r, kvpool.last_error())
                        continue
                    assert r == SIZE
                    reads += 1
                    d = rpages.dst(i)
                    words = d.view(np.uint64)
                    if (words != words[0]).any():
                        failures.append((keys[i], "mixed or unwritten bytes"))
                        continue
                    # the version must be one the writer wrote for this key
                    if not any(words[0] == pattern(keys[i], v).view(np.uint64)[0]
                               for v in range(1, version[i] + 2)):
                        failures.append((keys[i], "bytes of another object"))
        finally:
            stop.set()
            t.join()
        assert not failures, failures[:5]
        assert reads > 0
    finally:
        writer.close()
        reader.close()
