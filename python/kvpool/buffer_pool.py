"""Mooncake's BufferPool / BufferLease on kvpool: leases of memory registered with a store, for
the zero-copy calls (put_from, get_into, ...). Mooncake carves leases from the store's local
buffer; kvpool has none in embedded mode, so each size class is allocated once (numpy memory in
embedded mode, the node-shared HostMemAllocator in standalone mode), registered with the store
and reused after release. Thread-safe."""

from __future__ import annotations

import threading
import time
from typing import Dict, List, Optional

import numpy as np


class BufferLease:
    """A registered region of at least `size` bytes until release() (or the with-block ends)."""

    def __init__(self, pool: "BufferPool", region, ptr: int, size: int, capacity: int):
        self._pool, self._region, self._ptr, self._size, self._capacity = (pool, region, ptr,
                                                                           size, capacity)
        self._released = False

    @property
    def ptr(self) -> int:
        self._check()
        return self._ptr

    @property
    def size(self) -> int:
        return self._size

    @property
    def buffer(self) -> memoryview:
        self._check()
        return memoryview(self._region).cast("B")[:self._size]

    def release(self) -> None:
        if not self._released:
            self._released = True
            self._pool._give_back(self._capacity, self._region, self._ptr)

    def _check(self) -> None:
        if self._released:
            raise RuntimeError("BufferLease used after release()")

    def __enter__(self) -> "BufferLease":
        return self

    def __exit__(self, *exc) -> bool:
        self.release()
        return False


BufferLeaseView = memoryview  # what BufferLease.buffer returns


class BufferPool:
    def __init__(self, store, max_bytes: int = 0, min_size_class: int = 65536,
                 max_size_class: Optional[int] = None, alignment: int = 8388608,
                 block_on_exhaustion: bool = True, default_timeout: Optional[float] = None,
                 max_regions: Optional[int] = None, prewarm_size: Optional[int] = None,
                 prewarm_count: int = 0):
        if store.get_hostname() == "":
            raise RuntimeError("BufferPool needs a store that is set up")
        if alignment <= 0 or alignment & (alignment - 1):
            raise RuntimeError(f"alignment {alignment} is not a power of two")
        self._store = store
        self._max_bytes = max_bytes if max_bytes > 0 else 1 << 30
        self._min_class = max(1, min_size_class)
        self._max_class = max_size_class
        self._alignment = min(alignment, 4096)  # page alignment is what registration needs
        self._block = block_on_exhaustion
        self._timeout = default_timeout
        self._max_regions = max_regions
        self._cv = threading.Condition()
        self._free: Dict[int, List[tuple]] = {}
        self._regions: List[tuple] = []  # (capacity, region, ptr)
        self._leased = 0
        self._closed = False
        if prewarm_size and prewarm_count:
            self.prewarm(prewarm_size, prewarm_count)

    def _class_of(self, size: int) -> int:
        c = self._min_class
        while c < size:
            c <<= 1
        if self._max_class is not None and c > self._max_class:
            raise RuntimeError(f"size {size} is above max_size_class {self._max_class}")
        return c

    def _allocate(self, capacity: int):
        if self._store.is_standalone():
            from kvpool import HostMemAllocator  # noqa: PLC0415
            region = HostMemAllocator().alloc_buffer(capacity)
            ptr = region.ptr
        else:
            raw = np.empty(capacity + self._alignment, dtype=np.uint8)
            off = (-raw.ctypes.data) % self._alignment
            region = raw[off:off + capacity]
            ptr = region.ctypes.data
        rc = self._store.register_buffer(ptr, capacity)
        if rc != 0:
            raise RuntimeError(f"BufferPool: register_buffer failed ({rc})")
        self._regions.append((capacity, region, ptr))
        return region, ptr

    def acquire(self, size: int, block: Optional[bool] = None,
                timeout: Optional[float] = None) -> BufferLease:
        cap = self._class_of(size)
        block = self._block if block is None else block
        timeout = self._timeout if timeout is None else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while True:
                if self._closed:
                    raise RuntimeError("BufferPool is closed")
                free = self._free.get(cap)
                if free:
                    region, ptr = free.pop()
                    break
                room = self._leased + cap <= self._max_bytes and (
                    self._max_regions is None or len(self._regions) < self._max_regions)
                if room:
                    region, ptr = self._allocate(cap)
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if not block or (left is not None and left <= 0):
                    raise RuntimeError(f"BufferPool exhausted: {self._leased} of "
                                       f"{self._max_bytes} bytes leased")
                self._cv.wait(left)
            self._leased += cap
        return BufferLease(self, region, ptr, size, cap)

    buffer = acquire

    def prewarm(self, size: int, count: int) -> None:
        cap = self._class_of(size)
        with self._cv:
            for _ in range(count):
                region, ptr = self._allocate(cap)
                self._free.setdefault(cap, []).append((region, ptr))

    def _give_back(self, cap: int, region, ptr: int) -> None:
        with self._cv:
            self._leased -= cap
            if not self._closed:
                self._free.setdefault(cap, []).append((region, ptr))
            self._cv.notify_all()

    def close(self) -> None:
        with self._cv:
            self._closed = True
            for _, _, ptr in self._regions:
                self._store.unregister_buffer(ptr)
            self._regions.clear()
            self._free.clear()
            self._cv.notify_all()


RegisteredBufferPool = BufferPool
RegisteredBufferLease = BufferLease
RegisteredBufferLeaseView = BufferLeaseView
