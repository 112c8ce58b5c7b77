"""kvpool's SGLang HiCache storage backend (L3), loadable through SGLang's ``dynamic`` backend:

    --hicache-storage-backend dynamic --hicache-mem-layout page_first
    --hicache-storage-backend-extra-config '{"backend_name": "kvpool",
        "module_path": "kvpool.sglang", "class_name": "KVPoolHiCacheStorage",
        "interface_v1": 1, "master_server_address": "10.0.0.1:50051"}'

Modes:
  embedded    (standalone_storage false): this process is a kvpool client and contributes
              global_segment_size / (tp_size * pp_size) bytes of DRAM per rank; pages move
              zero-copy between the host pool and the pool's segments.
  standalone  (standalone_storage true): the process attaches to the local ``kvpool node`` at
              client_server_address; the node moves pages straight into and out of the host
              pool, which must live in kvpool's shared memory (KVPoolHostTensorAllocator).
With standalone_storage true and a host pool from any other allocator, the backend does what
``standalone_allocator_mismatch`` says, decided once when the pool is registered:
  "error"    (default) raise a RuntimeError naming the allocator found, the one required and
             the three ways out;
  "copy"     stay standalone and move pages through the node's staging buffer (one extra copy
             per page; a warning says so);
  "embedded" fall back to embedded mode (needs master_server_address; a warning says so).
Hybrid models' side pools (register_mem_host_pool_v2, batch_*_v2): hybrid.py; the same
modes and mismatch policy apply to each side pool.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kvpool import ErrorCode, KVPoolStore, ReplicateConfig, error_name, last_error
from kvpool.config import KVPoolStoreConfig
from kvpool.sglang import pool as poolmod
from kvpool.sglang.base import HiCacheStorageBase, StorageMetrics
from kvpool.sglang.hybrid import HybridPoolsMixin
from kvpool.sglang.hybrid_keys import group_config, group_id
from kvpool.sglang.keys import KeyScheme

logger = logging.getLogger("kvpool.sglang")

SETUP_TIMEOUT_S = 600  # check_server: how long to wait for the pool to have a segment
REQUIRED_ALLOCATOR = "kvpool.sglang.KVPoolHostTensorAllocator (kvpool.HostMemAllocator memory)"


def _mismatch_message(found: str, node: str, detail: str = "") -> str:
    return (
        f"kvpool: standalone_storage=true needs the host KV pool in kvpool's shared memory so "
        f"the kvpool node at {node} can map it, but the pool's allocator is {found} (required: "
        f"{REQUIRED_ALLOCATOR}).{(' ' + detail) if detail else ''} Ways out:\n"
        f"  1. allocate the pool with kvpool's allocator: start SGLang with "
        f"`python -m kvpool.sglang.launch_server ...` (dynamic backend), or use "
        f"`--hicache-storage-backend mooncake` with kvpool's compatibility package on "
        f"PYTHONPATH (SGLang's MooncakeHostTensorAllocator is then backed by kvpool);\n"
        f"  2. turn standalone mode off: \"standalone_storage\": false (embedded mode), or "
        f"\"standalone_allocator_mismatch\": \"embedded\" to fall back automatically;\n"
        f"  3. keep standalone mode with a copy: \"standalone_allocator_mismatch\": \"copy\" "
        f"(pages pass through the node's staging buffer, one extra copy each).")


class KVPoolHiCacheStorage(HybridPoolsMixin, HiCacheStorageBase):
    """SGLang HiCacheStorage on kvpool (see the module docstring); hybrid models' side pools
    through SGLang's v2 calls (hybrid.py)."""

    def __init__(self, storage_config: Any = None, mem_pool_host: Any = None, **_: Any):
        # SGLang's dynamic backend calls cls(storage_config, kwargs): a dict, not the pool.
        if isinstance(mem_pool_host, dict):
            mem_pool_host = mem_pool_host.get("mem_pool_host")
        self.storage_config = storage_config
        extra = dict(getattr(storage_config, "extra_config", None) or {})
        self.config = KVPoolStoreConfig.load(extra)
        self.keys = KeyScheme.from_storage_config(storage_config, extra)
        self.tp_rank = int(getattr(storage_config, "tp_rank", 0) or 0)
        self.tp_size = int(getattr(storage_config, "tp_size", 1) or 1)
        self.pp_size = int(getattr(storage_config, "pp_size", 1) or 1)
        self.split_factor = len(self.keys.mha_suffixes) if \
            getattr(storage_config, "should_split_heads", False) else 0
        self.enable_storage_metrics = bool(getattr(storage_config, "enable_storage_metrics",
                                                   False))
        self.store: Optional[KVPoolStore] = None
        self.mode: Optional[str] = None  # "embedded" | "standalone" | "standalone-copy"
        self.mem_pool_host = None
        self._v2_pools = {}  # pool name -> hybrid.SidePool, by register_mem_host_pool_v2
        self.gb_per_page = 0.0
        self._prefetch_pgs: List[int] = []
        self._backup_pgs: List[int] = []
        self._prefetch_bw: List[float] = []
        self._backup_bw: List[float] = []
        if not self.config.standalone_storage:
            self._connect_embedded()
        if mem_pool_host is not None:
            self.register_mem_pool_host(mem_pool_host)

    # ---- connection --------------------------------------------------------------------
    def _connect_embedded(self) -> None:
        cfg = self.config
        if cfg.master_server_address is None:
            raise RuntimeError("kvpool: embedded mode needs master_server_address (the kvpool "
                               "master, host:port) in the configuration")
        if cfg.protocol == "rdma":
            raise RuntimeError("kvpool: protocol 'rdma' is not available yet; set protocol to "
                               "'tcp' (MOONCAKE_PROTOCOL=tcp or \"protocol\": \"tcp\")")
        store = KVPoolStore()
        segment = cfg.per_rank_segment_size(self.tp_size, self.pp_size)
        rc = store.setup(cfg.local_hostname, cfg.metadata_server, segment, cfg.local_buffer_size,
                         cfg.protocol, cfg.device_for_rank(self.tp_rank),
                         cfg.master_server_address, tenant_id=cfg.tenant_id,
                         verify_checksum=cfg.verify_checksum,
                         tenant_key_file=cfg.tenant_key_file or "", **self._ssd_offload())
        if rc != 0:
            raise RuntimeError(
                f"kvpool: could not join the pool of master {cfg.master_server_address} "
                f"(contributing {segment} bytes as {cfg.local_hostname}): {error_name(rc)}: "
                f"{last_error()}")
        self.store = store
        self.mode = "embedded"
        if cfg.check_server:
            self._wait_for_segments()
        logger.info("kvpool: embedded mode, master %s, contributing %d bytes",
                    cfg.master_server_address, segment)

    def _ssd_offload(self) -> Dict[str, Any]:
        """setup()'s SSD-offload arguments: a disk tier in <ssd_offload_path>/rank-<tp_rank>
        (rank-<tp_rank>-pp<pp_rank> with pipeline parallelism), so the ranks of one host never
        share a disk file and each finds its own again after a restart."""
        cfg = self.config
        if not cfg.enable_ssd_offload:
            return {}
        if cfg.ssd_offload_path is None:
            raise RuntimeError(
                "kvpool: enable_ssd_offload needs ssd_offload_path (a directory on a local SSD; "
                "MOONCAKE_OFFLOAD_FILE_STORAGE_PATH when configured from the environment)")
        pp_rank = int(getattr(self.storage_config, "pp_rank", 0) or 0)
        rank = f"rank-{self.tp_rank}" + (f"-pp{pp_rank}" if self.pp_size > 1 else "")
        path = os.path.join(cfg.ssd_offload_path, rank)
        if os.path.isdir(cfg.ssd_offload_path):  # a missing parent is setup()'s error to name
            os.makedirs(path, exist_ok=True)
        args: Dict[str, Any] = dict(enable_ssd_offload=True, ssd_offload_path=path)
        if cfg.ssd_offload_size is not None:
            args["ssd_offload_size"] = cfg.ssd_offload_size
        logger.info("kvpool: disk tier of this rank in %s (%s bytes)", path,
                    cfg.ssd_offload_size or "4 x the segment's")
        return args

    def _connect_standalone(self, pool: Any) -> None:
        cfg = self.config
        if cfg.tenant_id != "default":
            raise RuntimeError(
                f"kvpool: tenant_id={cfg.tenant_id!r} is not available in standalone mode yet "
                f"(the local node serves the default tenant only); use embedded mode with "
                f"global_segment_size 0 and the tenant's key (docs/security.md, \"Tenants\")")
        if cfg.enable_ssd_offload:
            logger.warning("kvpool: enable_ssd_offload has no effect in standalone mode: the "
                           "local kvpool node holds the data, so give it the disk tier "
                           "(`kvpool node --disk_path DIR --disk_size SIZE`, docs/sglang.md)")
        store = KVPoolStore()
        rc = store.setup_dummy(poolmod.required_bytes(pool), cfg.local_buffer_size,
                               cfg.client_server_address,
                               verify_checksum=cfg.verify_checksum)
        if rc != 0:
            raise RuntimeError(
                f"kvpool: could not attach to the kvpool node at {cfg.client_server_address}: "
                f"{error_name(rc)}: {last_error()} (start one on this host with `kvpool node "
                f"--port <port> --master_server_address <master>`)")
        self.store = store
        self.mode = "standalone"
        if cfg.check_server:
            self._wait_for_segments()

    def _wait_for_segments(self) -> None:
        """check_server: wait until the pool has storage (SGLang polls the master likewise)."""
        deadline = time.monotonic() + SETUP_TIMEOUT_S
        while True:
            try:
                if self.store.stat()["segments"]:
                    return
            except RuntimeError as e:
                logger.info("kvpool: waiting for the pool: %s", e)
            if time.monotonic() > deadline:
                raise RuntimeError(f"kvpool: the pool has no storage segment after "
                                   f"{SETUP_TIMEOUT_S} s (check_server)")
            time.sleep(1)

    def _register_buffers(self, pool: Any) -> Tuple[int, str]:
        """Registers the pool's memory; (0, "") or (first error code, its message)."""
        return self._register_ranges(poolmod.merged_ranges(poolmod.pool_buffers(pool)))

    def _register_ranges(self, ranges) -> Tuple[int, str]:
        for address, size in ranges:
            rc = self.store.register_buffer(address, size)
            if rc != 0:
                return rc, last_error()
        return 0, ""

    def _close_store(self) -> None:
        if self.store is not None:
            self.store.close()
        self.store = None
        self.mode = None

    # ---- HiCacheStorage: set-up ----------------------------------------------------------
    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        """Registers the host KV pool (standalone mode: attaches to the node first). Called by
        SGLang once; a second call with the same pool (a pool given to the constructor, then
        registered again) changes nothing."""
        if mem_pool_host is self.mem_pool_host and self.mode is not None:
            return
        super().register_mem_pool_host(mem_pool_host)
        self.mem_pool_host = mem_pool_host
        self._check_layout(mem_pool_host)
        page_bytes = sum(poolmod.tensor_range(b)[1] for b in poolmod.pool_buffers(mem_pool_host))
        pages = max(1, getattr(mem_pool_host, "size", 0) // max(1, mem_pool_host.page_size))
        self.gb_per_page = page_bytes / pages / (1 << 30)
        if not self.config.standalone_storage:
            rc, message = self._register_buffers(mem_pool_host)
            if rc != 0:
                raise RuntimeError(f"kvpool: could not register the host KV pool: "
                                   f"{error_name(rc)}: {message}")
            return
        known, ok = poolmod.allocator_is_kvpool(mem_pool_host)
        found = poolmod.describe_allocator(mem_pool_host)
        if known and not ok:
            self._on_mismatch(mem_pool_host, found)
            return
        if self.store is None:
            self._connect_standalone(mem_pool_host)
        rc, message = self._register_buffers(mem_pool_host)
        if rc == ErrorCode.UNAVAILABLE_IN_CURRENT_MODE:
            self._on_mismatch(mem_pool_host, found, f"The node refused it: {message}")
        elif rc != 0:
            self._close_store()
            raise RuntimeError(f"kvpool: could not register the host KV pool with the node at "
                               f"{self.config.client_server_address}: {error_name(rc)}: "
                               f"{message}")

    def _on_mismatch(self, pool: Any, found: str, detail: str = "") -> None:
        action = self.config.standalone_allocator_mismatch
        message = _mismatch_message(found, self.config.client_server_address, detail)
        if action == "error":
            self._close_store()
            raise RuntimeError(message)
        if action == "copy":
            logger.warning("kvpool: the host KV pool is not in kvpool's shared memory (allocator "
                           "%s); standalone_allocator_mismatch=copy: pages pass through the "
                           "node's staging buffer, one extra copy each. Allocate the pool with "
                           "KVPoolHostTensorAllocator to avoid it.", found)
            if self.store is None:
                self._connect_standalone(pool)
            self.mode = "standalone-copy"
            return
        logger.warning("kvpool: the host KV pool is not in kvpool's shared memory (allocator "
                       "%s); standalone_allocator_mismatch=embedded: falling back to embedded "
                       "mode (this process joins the pool through master %s).", found,
                       self.config.master_server_address)
        self._close_store()
        if self.config.master_server_address is None:
            raise RuntimeError(message + "\n(standalone_allocator_mismatch=embedded needs "
                               "master_server_address as well; none is configured.)")
        self._connect_embedded()
        # Every pool registered so far moves to the embedded store (the anchor, side pools),
        # each byte range once.
        pools = [pool, self.mem_pool_host] + [s.pool for s in self._v2_pools.values()]
        tensors = [t for p in pools if p is not None for t in poolmod.pool_buffers(p)]
        rc, err = self._register_ranges(poolmod.merged_ranges(tensors))
        if rc != 0:
            raise RuntimeError(f"kvpool: could not register the host KV pool: "
                               f"{error_name(rc)}: {err}")

    def _check_layout(self, pool: Any) -> None:
        layout = getattr(pool, "layout", "page_first")
        if layout in poolmod.PAGE_FIRST_LAYOUTS:
            return
        if layout == "layer_first" and self.keys.is_mla:
            return  # one object from L layer slices (multi-buffer), still zero copy
        raise ValueError(
            f"kvpool: host KV pool layout {layout!r} cannot be moved zero-copy for "
            f"{'MLA' if self.keys.is_mla else 'MHA'} models (a page's K and V are spread over "
            f"every layer). Start SGLang with --hicache-mem-layout page_first (or "
            f"page_first_direct).")

    # ---- HiCacheStorage: v1 zero-copy calls -----------------------------------------------
    def _require_ready(self) -> KVPoolStore:
        if self.store is None or self.mode is None:
            raise RuntimeError("kvpool: the backend is not connected (standalone mode connects "
                               "in register_mem_pool_host) or was closed")
        return self.store

    def _page_meta(self, keys: Sequence[str], host_indices: Any):
        pool = self.mem_pool_host
        if pool is None:
            raise RuntimeError("kvpool: register_mem_pool_host() was not called")
        if self.split_factor:
            ptrs, sizes = pool.get_split_heads_page_buffer_meta(host_indices, self.split_factor)
        else:
            ptrs, sizes = pool.get_page_buffer_meta(host_indices)
        ptrs, sizes = [int(p) for p in ptrs], [int(s) for s in sizes]
        obj_keys = self.keys.object_keys(keys)
        n = len(obj_keys)
        if len(ptrs) == n:
            return obj_keys, ptrs, sizes, False
        if self.keys.is_mla and n and len(ptrs) % n == 0:
            k = len(ptrs) // n
            return (obj_keys, [ptrs[i:i + k] for i in range(0, len(ptrs), k)],
                    [sizes[i:i + k] for i in range(0, len(sizes), k)], True)
        raise RuntimeError(
            f"kvpool: the host pool gave {len(ptrs)} buffers for {len(keys)} pages "
            f"({n} objects); layout {getattr(pool, 'layout', '?')!r} cannot be moved zero-copy")

    def _put_objects(self, obj_keys, ptrs, sizes, multi, config=None) -> List[int]:
        store = self._require_ready()
        config = config if config is not None else ReplicateConfig()
        if self.mode == "standalone-copy":
            return store.batch_put_from_buffers(obj_keys, self._views(ptrs, sizes, multi),
                                                config)
        if multi:
            return store.batch_put_from_multi_buffers(obj_keys, ptrs, sizes, config)
        return store.batch_put_from(obj_keys, ptrs, sizes, config)

    def _get_objects(self, obj_keys, ptrs, sizes, multi) -> List[int]:
        store = self._require_ready()
        if self.mode == "standalone-copy":
            return store.batch_get_into_buffers(obj_keys, self._views(ptrs, sizes, multi))
        if multi:
            return store.batch_get_into_multi_buffers(obj_keys, ptrs, sizes)
        return store.batch_get_into(obj_keys, ptrs, sizes)

    @staticmethod
    def _views(ptrs, sizes, multi) -> list:
        if multi:
            return [[poolmod.byte_view(p, s) for p, s in zip(ps, ss)]
                    for ps, ss in zip(ptrs, sizes)]
        return [poolmod.byte_view(p, s) for p, s in zip(ptrs, sizes)]

    def _per_page(self, ok: List[bool], pages: int) -> List[bool]:
        per = self.keys.objects_per_page
        return [all(ok[i * per:(i + 1) * per]) for i in range(pages)]

    @staticmethod
    def _log_failures(what: str, obj_keys: Sequence[str], results: Sequence[int],
                      ok: Sequence[bool]) -> None:
        bad = [(k, r) for k, r, good in zip(obj_keys, results, ok) if not good]
        if bad:
            key, code = bad[0]
            name = error_name(code) if code < 0 else f"{code} bytes"
            logger.warning("kvpool: %s: %d of %d objects failed; first key=%s: %s (%s)", what,
                           len(bad), len(results), key, name, last_error())

    def batch_set_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Any = None) -> List[bool]:
        """Writes pages zero-copy; pages that exist are skipped by the store (success)."""
        if not keys:
            return []
        if self.keys.is_mla and self.tp_rank != 0:
            return [True] * len(keys)  # MLA pages are shared: rank 0 writes them
        if self._anchor_is_logical():
            return [True] * len(keys)  # DeepSeek V4: the v2 side pools hold the data
        obj_keys, ptrs, sizes, multi = self._page_meta(keys, host_indices)
        config = None
        if self._side_pools_registered():  # the page's KV objects join its side objects' group
            per = self.keys.objects_per_page
            config = group_config([group_id(self.keys.tag(k)) for k in keys for _ in range(per)])
        start = time.perf_counter()
        results = self._put_objects(obj_keys, ptrs, sizes, multi, config)
        self._record(self._backup_pgs, self._backup_bw, len(keys), start)
        ok = [r == 0 for r in results]
        self._log_failures("batch_set_v1", obj_keys, results, ok)
        return self._per_page(ok, len(keys))

    def batch_get_v1(self, keys: List[str], host_indices: Any,
                     extra_info: Any = None) -> List[bool]:
        """Reads pages zero-copy; a page is True only when every object filled its buffers."""
        if not keys:
            return []
        if self._anchor_is_logical():
            return [True] * len(keys)  # DeepSeek V4: the v2 side pools hold the data
        obj_keys, ptrs, sizes, multi = self._page_meta(keys, host_indices)
        expected = [sum(s) for s in sizes] if multi else sizes
        start = time.perf_counter()
        results = self._get_objects(obj_keys, ptrs, sizes, multi)
        self._record(self._prefetch_pgs, self._prefetch_bw, len(keys), start)
        ok = [r == want for r, want in zip(results, expected)]
        self._log_failures("batch_get_v1", obj_keys, results, ok)
        return self._per_page(ok, len(keys))

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """How many leading pages exist completely: one prefix query to the master."""
        if not keys:
            return 0
        store = self._require_ready()
        obj_keys = self.keys.object_keys(keys)
        n = store.batch_exists_prefix(obj_keys)
        if n < 0:
            logger.warning("kvpool: batch_exists: %s (%s); reporting no hit", error_name(n),
                           last_error())
            return 0
        return n // self.keys.objects_per_page

    def _record(self, pages: List[int], bandwidth: List[float], count: int,
                start: float) -> None:
        if not self.enable_storage_metrics:
            return
        elapsed = max(time.perf_counter() - start, 1e-9)
        pages.append(count)
        bandwidth.append(count / elapsed * self.gb_per_page)

    # ---- HiCacheStorage: legacy calls (keys tagged with the model prefix) ------------------
    def exists(self, key: str) -> bool:
        return self._require_ready().is_exist(self.keys.tag(key)) == 1

    def set(self, key: str, value: Any = None, target_location: Any = None,
            target_sizes: Any = None) -> bool:
        values = None if value is None else [value]
        locations = None if target_location is None else [target_location]
        sizes = None if target_sizes is None else [target_sizes]
        return self.batch_set([key], values, locations, sizes)

    def batch_set(self, keys: List[str], values: Any = None, target_locations: Any = None,
                  target_sizes: Any = None) -> bool:
        """Stores each key from addresses (target_locations + target_sizes: ints, or lists of
        ints for one object from several regions) or from values (tensors, arrays, bytes).
        True when every key is stored (existing keys count as stored)."""
        if not keys:
            return False
        store = self._require_ready()
        tagged = [self.keys.tag(k) for k in keys]
        if target_locations is not None and target_sizes is not None:
            multi = isinstance(target_locations[0], (list, tuple))
            results = self._put_objects(tagged, list(target_locations), list(target_sizes),
                                        multi)
        elif values is not None:
            results = store.batch_put_from_buffers(tagged, [_readable(v) for v in values])
        else:
            raise ValueError("batch_set needs values or target_locations with target_sizes")
        return all(r == 0 for r in results)

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        """With addresses: True/False. With a tensor target: the target, or None on a miss.
        Without a target: a uint8 tensor (numpy array without torch) or None."""
        if target_location is not None and target_sizes is not None:
            return self.batch_get([key], [target_location], [target_sizes]) == 1
        targets = None if target_location is None else [target_location]
        return self.batch_get([key], targets)[0]

    def batch_get(self, keys: List[str], target_locations: Any = None,
                  target_sizes: Any = None) -> Any:
        """With addresses: the number of leading keys read in full (Mooncake's convention).
        Otherwise one tensor (or None for a miss) per key."""
        if not keys:
            return 0 if target_sizes is not None else []
        store = self._require_ready()
        tagged = [self.keys.tag(k) for k in keys]
        if target_locations is not None and target_sizes is not None:
            multi = isinstance(target_locations[0], (list, tuple))
            results = self._get_objects(tagged, list(target_locations), list(target_sizes),
                                        multi)
            want = [sum(s) if multi else s for s in target_sizes]
            for i, (r, w) in enumerate(zip(results, want)):
                if r != w:
                    return i
            return len(keys)
        if target_locations is not None:
            views = [_writable(t) for t in target_locations]
            results = store.batch_get_into_buffers(tagged, views)
            return [t if r == memoryview(v).nbytes else None
                    for t, v, r in zip(target_locations, views, results)]
        return [_as_tensor(store.get_buffer(k)) for k in tagged]

    # ---- HiCacheStorage: housekeeping ------------------------------------------------------
    def clear(self) -> None:
        """Removes every object of the pool (SGLang's Mooncake backend does the same)."""
        removed = self._require_ready().remove_all()
        if removed < 0:
            logger.warning("kvpool: clear: %s (%s)", error_name(removed), last_error())
        else:
            logger.info("kvpool: clear removed %d objects", removed)

    def get_stats(self):
        metrics = StorageMetrics()
        metrics.prefetch_pgs.extend(self._prefetch_pgs)
        metrics.backup_pgs.extend(self._backup_pgs)
        metrics.prefetch_bandwidth.extend(self._prefetch_bw)
        metrics.backup_bandwidth.extend(self._backup_bw)
        for values in (self._prefetch_pgs, self._backup_pgs, self._prefetch_bw,
                       self._backup_bw):
            values.clear()
        return metrics

    def close(self) -> None:
        self._close_store()


def _readable(value: Any) -> Any:
    """A buffer over a value's bytes (torch tensors through numpy, which keeps them alive)."""
    if hasattr(value, "data_ptr"):
        import torch

        return value.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
    return value


def _writable(target: Any) -> Any:
    """A writable buffer sharing the target's memory."""
    if hasattr(target, "data_ptr"):
        import torch

        if not target.is_contiguous():
            raise ValueError("kvpool: a target tensor must be contiguous")
        return target.detach().reshape(-1).view(torch.uint8).numpy()
    return target


def _as_tensor(handle: Any) -> Any:
    if handle is None:
        return None
    try:
        import torch

        return torch.frombuffer(handle, dtype=torch.uint8)
    except ImportError:
        import numpy as np

        return np.frombuffer(handle, dtype=np.uint8)
