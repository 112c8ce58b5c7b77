"""kvpool as a secondary tier of vLLM's native KV offloading (``OffloadingConnector``).

vLLM's tiered offloading keeps a CPU primary tier (one memoryview, one row of bytes per block
slot) and moves blocks between it and secondary tiers through a ``SecondaryTierManager``: the
scheduler calls ``lookup``, ``submit_store``, ``submit_load``, ``get_finished_jobs`` (older:
``get_finished``), ``touch`` and the lifecycle hooks, all of which must return at once.
:class:`KVPoolSecondaryTier` implements that interface over a kvpool pool:

- every transfer runs on worker threads; the caller only queues it. Lookups are answered from
  what the tier knows (its own stores, recent answers of the pool) and otherwise queued for a
  batched ``batch_is_exist`` and answered ``RETRY`` (older vLLM: ``None``) until the answer is in;
- stores are one ``batch_put_from`` and loads one ``batch_get_into`` per job on registered
  memory (zero-copy): the primary view itself in embedded mode, and in standalone mode
  (``node_address``: a ``kvpool node`` on this host, ``setup_dummy``) too when the view lives in
  kvpool's shared memory, else through a staging area in kvpool's shared memory;
- every block gets its own result (:meth:`block_results`): a missing, evicted or unreadable
  block, or a block id outside the primary view, fails that block with a kvpool error code and
  makes the job's ``JobResult.success`` False; a load never reports success for a block whose
  bytes were not all written;
- keys carry the block hash and the KV cache group index of vLLM's ``OffloadKey`` (hybrid
  models' groups are separate objects), under a namespace (the vLLM config's hash by default)
  and the block's byte size, so two layouts never read each other's bytes.

The interface follows vLLM's ``vllm/v1/kv_offload/tiering/base.py`` and
``vllm/v1/kv_offload/base.py`` as read at the versions named in docs/vllm.md; this module holds
stand-ins for vLLM's small data types when vLLM is not installed.
"""

from __future__ import annotations

import collections
import ctypes
import dataclasses
import enum
import logging
import threading
import time
from typing import Any, Collection, Dict, Iterable, List, Optional, Sequence

import numpy as np

import kvpool
from kvpool._kvpool import HostMemAllocator, ReplicateConfig

logger = logging.getLogger(__name__)

TIER_TYPE = "kvpool"

# vLLM's types when vLLM is installed; otherwise stand-ins with the same fields.
try:  # pragma: no cover - depends on vLLM being installed
    from vllm.v1.kv_offload.tiering.base import JobMetadata, JobResult, SecondaryTierManager
    _HAVE_VLLM = True
except Exception:  # ImportError, or a vLLM without tiering
    _HAVE_VLLM = False
    SecondaryTierManager = object

    @dataclasses.dataclass
    class JobMetadata:  # type: ignore[no-redef]
        job_id: int
        keys: Collection[bytes]
        block_ids: np.ndarray
        is_promotion: bool
        req_context: Any

    @dataclasses.dataclass
    class JobResult:  # type: ignore[no-redef]
        job_id: int
        success: bool

try:  # pragma: no cover
    from vllm.v1.kv_offload.base import LookupResult
    _ENUM_LOOKUP = True
except Exception:
    # vLLM without the enum (its tiers answer True / False / None) or no vLLM at all.
    _ENUM_LOOKUP = not _HAVE_VLLM

    class LookupResult(enum.Enum):  # type: ignore[no-redef]
        MISS = enum.auto()
        HIT = enum.auto()
        HIT_PENDING = enum.auto()
        RETRY = enum.auto()

try:  # pragma: no cover
    from vllm.v1.kv_offload.base import RequestOffloadingContext
except Exception:
    @dataclasses.dataclass
    class RequestOffloadingContext:  # type: ignore[no-redef]
        policy: Any = None

OK = 0
INVALID_PARAMS = int(kvpool.ErrorCode.INVALID_PARAMS)
OBJECT_NOT_FOUND = int(kvpool.ErrorCode.OBJECT_NOT_FOUND)
#: A load answered a byte count other than the block's size (an object of another layout).
SIZE_MISMATCH = int(kvpool.ErrorCode.INVALID_PARAMS)
_INTERNAL = int(getattr(kvpool.ErrorCode, "INTERNAL_ERROR", -1))


def offload_key_name(namespace: str, block_bytes: int, key: bytes) -> str:
    """The kvpool key of one vLLM ``OffloadKey`` (block hash + 4-byte big-endian group index)."""
    key = bytes(key)
    if len(key) > 4:
        return f"{namespace}/{block_bytes}/{key[:-4].hex()}/g{int.from_bytes(key[-4:], 'big')}"
    return f"{namespace}/{block_bytes}/{key.hex()}"


def _namespace_of(offloading_spec: Any, vllm_config: Any) -> str:
    for cfg in (vllm_config, getattr(offloading_spec, "vllm_config", None)):
        fn = getattr(cfg, "compute_hash", None)
        if callable(fn):
            try:
                return f"vllm-{fn()}"
            except Exception:  # pragma: no cover - a config that cannot hash itself
                pass
    return "vllm"


@dataclasses.dataclass
class _Job:
    job_id: int
    names: List[str]
    block_ids: List[int]
    is_store: bool
    keys: List[bytes]


class KVPoolSecondaryTier(SecondaryTierManager):  # type: ignore[misc,valid-type]
    """A vLLM secondary tier on a kvpool pool (see the module docstring).

    Configuration (the ``secondary_tiers`` entry's keys besides ``type``):

    - ``master_server_address``: the master, ``host:port`` (embedded mode, required unless
      ``node_address`` is given);
    - ``node_address``: the local ``kvpool node`` (``host:port``, ``@name``): standalone mode;
    - ``local_hostname`` (``"127.0.0.1"``), ``global_segment_size`` (0): embedded mode's setup;
    - ``namespace``: key prefix (default: ``vllm-<vLLM config hash>``);
    - ``rpc_timeout_ms``, ``transfer_timeout_ms``: kvpool's deadlines (None: kvpool's);
    - ``replica_num`` (1), ``n_io_threads`` (1), ``lookup_ttl_s`` (1.0: how long an answer of
      the pool is reused), ``staging_bytes`` (64 MiB: standalone staging area when needed),
      ``bytes_per_block`` (only for a one-dimensional primary view);
    - ``store``: an already set-up ``kvpool.KVPoolStore`` to use instead (tests, sharing).
    """

    def __init__(self, offloading_spec: Any = None, primary_kv_view: Any = None,
                 tier_type: str = TIER_TYPE, *, vllm_config: Any = None,
                 master_server_address: Optional[str] = None, node_address: Optional[str] = None,
                 local_hostname: str = "127.0.0.1", global_segment_size: Any = 0,
                 namespace: Optional[str] = None, rpc_timeout_ms: Optional[int] = None,
                 transfer_timeout_ms: Optional[int] = None, replica_num: int = 1,
                 n_io_threads: int = 1, lookup_ttl_s: float = 1.0,
                 staging_bytes: int = 64 << 20, bytes_per_block: Optional[int] = None,
                 store: Any = None, **unknown: Any) -> None:
        if unknown:
            raise ValueError(f"kvpool tier: unknown option(s) {sorted(unknown)}")
        if primary_kv_view is None:
            raise ValueError("kvpool tier: primary_kv_view is required")
        # Fields vLLM's base class sets (both generations), without calling an __init__ whose
        # signature changed between them.
        self._offloading_spec = offloading_spec
        self._vllm_config = vllm_config
        self._primary_kv_view = primary_kv_view
        self.tier_type = tier_type

        arr = np.asarray(primary_kv_view)
        if not arr.flags.c_contiguous:
            raise ValueError("kvpool tier: the primary view must be C-contiguous")
        arr = arr.reshape(-1).view(np.uint8)
        if bytes_per_block is None:
            shape = getattr(primary_kv_view, "shape", None) or (arr.size,)
            if len(shape) < 2:
                raise ValueError("kvpool tier: a one-dimensional primary view needs "
                                 "bytes_per_block")
            bytes_per_block = arr.size // shape[0]
        if bytes_per_block <= 0 or arr.size % bytes_per_block:
            raise ValueError(f"kvpool tier: {arr.size} bytes are not whole blocks of "
                             f"{bytes_per_block}")
        self._arr = arr  # keeps the memory alive
        self.block_bytes = int(bytes_per_block)
        self.num_blocks = arr.size // self.block_bytes
        self._base = arr.ctypes.data
        self.namespace = namespace or _namespace_of(offloading_spec, vllm_config)
        self._config = ReplicateConfig()
        self._config.replica_num = replica_num
        self._lookup_ttl = float(lookup_ttl_s)

        self._own_store = store is None
        self.standalone = False
        if store is None:
            store = kvpool.KVPoolStore()
            if node_address:
                rc = store.setup_dummy(64 << 20, 16 << 20, node_address,
                                       rpc_timeout_ms=rpc_timeout_ms,
                                       transfer_timeout_ms=transfer_timeout_ms)
            elif master_server_address:
                rc = store.setup(local_hostname, "P2PHANDSHAKE", global_segment_size, 0, "tcp",
                                 "", master_server_address, rpc_timeout_ms=rpc_timeout_ms,
                                 transfer_timeout_ms=transfer_timeout_ms)
            else:
                raise ValueError("kvpool tier: set master_server_address (embedded) or "
                                 "node_address (standalone)")
            if rc != OK:
                raise RuntimeError(f"kvpool tier: setup failed: {kvpool.last_error()}")
        self.store = store
        self.standalone = bool(store.is_standalone())

        # Zero-copy on the primary view, or (standalone, view outside kvpool's shared memory) a
        # staging area the node can reach.
        self._staging = None
        self._staging_blocks = 0
        rc = store.register_buffer(self._base, arr.size)
        self.zero_copy = rc == OK
        if not self.zero_copy:
            if not self.standalone:
                raise RuntimeError(f"kvpool tier: register_buffer failed: {kvpool.last_error()}")
            n = max(1, int(staging_bytes) // self.block_bytes)
            self._staging_alloc = HostMemAllocator()
            self._staging = self._staging_alloc.alloc_buffer(n * self.block_bytes)
            if store.register_buffer(self._staging.ptr, self._staging.size) != OK:
                raise RuntimeError(f"kvpool tier: register_buffer (staging) failed: "
                                   f"{kvpool.last_error()}")
            self._staging_blocks = n
            logger.info("kvpool tier: primary view outside kvpool's shared memory; staging "
                        "through %d blocks", n)

        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._jobs: collections.deque = collections.deque()
        self._finished: List[Any] = []
        self._results: "collections.OrderedDict[int, List[int]]" = collections.OrderedDict()
        self._in_flight = 0
        self._storing: Dict[str, int] = {}  # key name -> stores in flight
        self._known: Dict[str, tuple] = {}  # key name -> (present, monotonic time)
        self._lookups: Dict[str, None] = {}  # key names waiting for batch_is_exist
        self._lookup_busy: set = set()
        self._closed = False
        self._threads = [threading.Thread(target=self._io_loop, name=f"kvpool-tier-io{i}",
                                          daemon=True) for i in range(max(1, n_io_threads))]
        self._threads.append(threading.Thread(target=self._lookup_loop,
                                              name="kvpool-tier-lookup", daemon=True))
        for t in self._threads:
            t.start()

    # ---- vLLM's interface --------------------------------------------------------------------

    @staticmethod
    def get_tier_type() -> str:
        return TIER_TYPE

    def key_name(self, key: bytes) -> str:
        return offload_key_name(self.namespace, self.block_bytes, key)

    def lookup(self, key: bytes, req_context: Any = None):
        """HIT / MISS from what the tier knows, HIT_PENDING while this tier stores the block,
        else RETRY after queueing a pool query (vLLM without the enum: True / False / None)."""
        name = self.key_name(key)
        now = time.monotonic()
        with self._lock:
            if self._storing.get(name):
                return self._answer(LookupResult.HIT_PENDING)
            known = self._known.get(name)
            if known is not None and now - known[1] <= self._lookup_ttl:
                return self._answer(LookupResult.HIT if known[0] else LookupResult.MISS)
            if name not in self._lookup_busy:
                self._lookups[name] = None
                self._cv.notify_all()
        return self._answer(LookupResult.RETRY)

    def submit_store(self, job_metadata: Any) -> None:
        self._submit(job_metadata, True)

    def submit_load(self, job_metadata: Any) -> None:
        self._submit(job_metadata, False)

    def get_finished_jobs(self) -> Iterable[Any]:
        with self._lock:
            out, self._finished = self._finished, []
        return out

    get_finished = get_finished_jobs  # vLLM before the rename

    def touch(self, keys: Collection[bytes], req_context: Any = None) -> None:
        """Recency is the pool's business (its eviction); nothing to record here."""
        return

    def on_new_request(self, req_context: Any = None):
        return RequestOffloadingContext()

    get_request_offloading_context = on_new_request

    def on_request_finished(self, req_context: Any = None) -> None:
        return

    request_finished = on_request_finished

    def on_schedule_end(self, context: Any = None) -> None:
        return

    def has_pending_work(self) -> bool:
        with self._lock:
            return bool(self._in_flight or self._finished or self._lookups or self._lookup_busy)

    def take_events(self) -> Iterable[Any]:
        return ()

    def drain_jobs(self, timeout: Optional[float] = None) -> bool:
        """Waits until every submitted job finished (its result is then in get_finished_jobs)."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._in_flight:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left)
        return True

    def shutdown(self) -> None:
        with self._lock:
            if self._closed:
                return
        self.drain_jobs(timeout=60)
        with self._lock:
            self._closed = True
            self._cv.notify_all()
        for t in self._threads:
            t.join(timeout=10)
        if self._own_store:
            self.store.close()
        else:
            self.store.unregister_buffer(self._base if self.zero_copy else self._staging.ptr)

    # ---- kvpool extras ----------------------------------------------------------------------

    def block_results(self, job_id: int) -> Optional[List[int]]:
        """Per-block results of a finished job (the last 4,096 jobs): for a store 0 or a negative
        kvpool error code, for a load the block's byte count or a negative code."""
        with self._lock:
            return self._results.get(job_id)

    # ---- internals --------------------------------------------------------------------------

    @staticmethod
    def _answer(result):
        if _ENUM_LOOKUP:
            return result
        return {LookupResult.HIT: True, LookupResult.MISS: False}.get(result)

    def _submit(self, meta: Any, is_store: bool) -> None:
        keys = [bytes(k) for k in meta.keys]
        block_ids = [int(b) for b in np.asarray(meta.block_ids).reshape(-1)]
        job = _Job(int(meta.job_id), [self.key_name(k) for k in keys], block_ids, is_store, keys)
        with self._lock:
            if self._closed:
                raise RuntimeError("kvpool tier: shut down")
            self._in_flight += 1
            if is_store:
                for n in job.names:
                    self._storing[n] = self._storing.get(n, 0) + 1
            self._jobs.append(job)
            self._cv.notify_all()

    def _io_loop(self) -> None:
        while True:
            with self._lock:
                while not self._jobs and not self._closed:
                    self._cv.wait()
                if not self._jobs:
                    return
                job = self._jobs.popleft()
            try:
                results = self._run(job)
            except Exception as e:  # never lose a job: a bug fails it, the caller carries on
                logger.exception("kvpool tier: job %d failed", job.job_id)
                results = [_INTERNAL] * len(job.names)
                del e
            self._finish(job, results)

    def _finish(self, job: _Job, results: List[int]) -> None:
        ok = len(results) == len(job.names) and all(
            (r == OK if job.is_store else r == self.block_bytes) for r in results)
        now = time.monotonic()
        with self._lock:
            if job.is_store:
                for n, r in zip(job.names, results):
                    c = self._storing.get(n, 0) - 1
                    if c > 0:
                        self._storing[n] = c
                    else:
                        self._storing.pop(n, None)
                    if r == OK:
                        self._known[n] = (True, now)
            else:
                for n, r in zip(job.names, results):
                    if r == OBJECT_NOT_FOUND:
                        self._known[n] = (False, now)
            self._results[job.job_id] = results
            while len(self._results) > 4096:
                self._results.popitem(last=False)
            self._finished.append(JobResult(job_id=job.job_id, success=ok))
            self._in_flight -= 1
            self._cv.notify_all()

    def _run(self, job: _Job) -> List[int]:
        n = len(job.names)
        if len(job.block_ids) != n:
            return [INVALID_PARAMS] * n
        results = [INVALID_PARAMS] * n
        valid = [i for i, b in enumerate(job.block_ids) if 0 <= b < self.num_blocks]
        bad = [job.block_ids[i] for i in range(n) if not 0 <= job.block_ids[i] < self.num_blocks]
        if bad:
            logger.warning("kvpool tier: job %d: block ids %s outside the primary view "
                           "(0..%d)", job.job_id, bad[:8], self.num_blocks - 1)
        step = len(valid) if self.zero_copy else self._staging_blocks
        for s in range(0, len(valid), max(1, step)):
            part = valid[s:s + step]
            names = [job.names[i] for i in part]
            sizes = [self.block_bytes] * len(part)
            if self.zero_copy:
                ptrs = [self._base + job.block_ids[i] * self.block_bytes for i in part]
            else:
                ptrs = [self._staging.ptr + j * self.block_bytes for j in range(len(part))]
            if job.is_store:
                if not self.zero_copy:
                    for j, i in enumerate(part):
                        ctypes.memmove(ptrs[j], self._base + job.block_ids[i] * self.block_bytes,
                                       self.block_bytes)
                rs = self.store.batch_put_from(names, ptrs, sizes, self._config)
            else:
                rs = self.store.batch_get_into(names, ptrs, sizes)
                if not self.zero_copy:
                    for j, i in enumerate(part):
                        if rs[j] == self.block_bytes:
                            ctypes.memmove(self._base + job.block_ids[i] * self.block_bytes,
                                           ptrs[j], self.block_bytes)
            for i, r in zip(part, rs):
                r = int(r)
                if not job.is_store and r >= 0 and r != self.block_bytes:
                    r = SIZE_MISMATCH  # never a partial block reported as loaded
                results[i] = r
        return results

    def _lookup_loop(self) -> None:
        while True:
            with self._lock:
                while not self._lookups and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                names = list(self._lookups)
                self._lookups.clear()
                self._lookup_busy.update(names)
            try:
                rs = self.store.batch_is_exist(names)
            except Exception:  # pragma: no cover
                logger.exception("kvpool tier: batch_is_exist failed")
                rs = [-1] * len(names)
            now = time.monotonic()
            with self._lock:
                for n, r in zip(names, rs):
                    self._lookup_busy.discard(n)
                    # an error is a miss (a lookup that cannot be answered must not hit)
                    self._known[n] = (r == 1, now)
                if len(self._known) > 1_000_000:
                    cutoff = now - self._lookup_ttl
                    self._known = {k: v for k, v in self._known.items() if v[1] >= cutoff}
