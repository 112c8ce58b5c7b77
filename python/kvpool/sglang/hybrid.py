"""SGLang's v2 storage interface for hybrid models (Mamba, SWA, DSA indexer, DeepSeek V4 side
pools, MTP draft pools): register_mem_host_pool_v2, batch_exists_v2, batch_get_v2,
batch_set_v2, mixed into KVPoolHiCacheStorage.

Keys are the stock Mooncake backend's (hybrid_keys.py). Round trips: batch_set_v2 is one
batch put for every object of every pool (one control round trip per phase: the store skips
objects that exist, so no existence query precedes it); batch_get_v2 one batch get;
batch_exists_v2 one prefix query for the KV anchor plus one query per side pool.

Bad input never moves a byte outside the pool: a pool that was not registered is a ValueError
(as in SGLang's backend); a transfer whose host indices do not cover its keys (length not
keys * page_size, a page not starting on a page boundary) fails all its pages; a page whose
buffers (from the pool's get_page_buffer_meta) leave the pool's registered tensors fails that
page. Zero-size buffers (a conv-only Mamba model's temporal state) are never stored.
"""

from __future__ import annotations

import bisect
import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kvpool import ErrorCode, error_name, last_error
from kvpool.sglang import pool as poolmod
from kvpool.sglang.hybrid_keys import component_suffixes, group_config, group_id
from kvpool.sglang.v2_types import PoolName, hit_policy, make_result, pool_name

logger = logging.getLogger("kvpool.sglang")


class SidePool:
    """A registered v2 pool: its host pool, key suffixes and the byte ranges it owns."""

    def __init__(self, name: str, host_pool: Any, suffixes: List[str]):
        self.name = name
        self.pool = host_pool
        self.suffixes = suffixes
        self.page_size = int(getattr(host_pool, "page_size", 1) or 1)
        self.ranges = poolmod.merged_ranges(poolmod.pool_buffers(host_pool))
        self._starts = [start for start, _ in self.ranges]

    def contains(self, address: int, size: int) -> bool:
        i = bisect.bisect_right(self._starts, address) - 1
        if i < 0:
            return False
        start, length = self.ranges[i]
        return address >= start and address + size <= start + length


class _Plan:
    """One transfer resolved into objects: keys, buffers, group ids, and for each page the
    indices of its objects in the batch (None: the page cannot be moved)."""

    def __init__(self, transfer: Any, pages: int):
        self.transfer = transfer
        self.pages = pages
        self.keys: List[str] = []
        self.ptrs: List[List[int]] = []
        self.sizes: List[List[int]] = []
        self.groups: List[str] = []
        self.page_objects: List[Optional[List[int]]] = [None] * pages

    def fail(self, why: str) -> "_Plan":
        logger.error("kvpool: %s pool: %s; its %d pages fail", pool_name(self.transfer.name),
                     why, self.pages)
        self.keys, self.ptrs, self.sizes, self.groups = [], [], [], []
        self.page_objects = [None] * self.pages
        return self


class HybridPoolsMixin:
    """The v2 calls; the host class provides keys, store, mode, config, mem_pool_host,
    batch_exists, _put_objects, _get_objects, _register_ranges, _on_mismatch."""

    _v2_pools: Dict[str, SidePool]

    # ---- registration -------------------------------------------------------------------
    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: Any) -> None:
        """Registers a hybrid model's pool under its PoolName. The KV anchor is the pool of
        register_mem_pool_host (registered here when that was not called). Registering the same
        pool again changes nothing; another pool under a registered name replaces it. Raises
        ValueError for a pool name this backend cannot store, RuntimeError when its memory
        cannot be registered (standalone mode: see standalone_allocator_mismatch)."""
        name = pool_name(host_pool_name)
        known = self._v2_pools.get(name)
        if known is not None and known.pool is host_pool:
            return  # registered already (a second call changes nothing)
        if not hasattr(self, "registered_pools"):
            self.registered_pools = {}
        if name == "kv" and self.mem_pool_host is None:
            self.register_mem_pool_host(host_pool)
        suffixes = component_suffixes(name, host_pool, self.keys)
        self.registered_pools[host_pool_name] = host_pool
        side = SidePool(name, host_pool, suffixes)
        self._v2_pools[name] = side
        if name == "kv":
            return  # the anchor's memory, registered with it
        self._register_side_pool(side)

    def _register_side_pool(self, side: SidePool) -> None:
        if self.store is None:
            if not self.config.standalone_storage:
                raise RuntimeError("kvpool: the backend is closed")
            self._connect_standalone(side.pool)
        if self.mode == "standalone-copy":
            return  # pages pass through the node's staging buffer: nothing to register
        found = poolmod.describe_allocator(side.pool)
        if self.mode == "standalone":
            known, ok = poolmod.allocator_is_kvpool(side.pool)
            if known and not ok:
                self._on_mismatch(side.pool, found, f"This is the {side.name} pool "
                                  f"(register_mem_host_pool_v2).")
                return
        rc, message = self._register_ranges(side.ranges)
        if rc == ErrorCode.UNAVAILABLE_IN_CURRENT_MODE and self.mode == "standalone":
            self._on_mismatch(side.pool, found, f"The node refused the {side.name} pool: "
                              f"{message}")
        elif rc != 0:
            raise RuntimeError(f"kvpool: could not register the {side.name} host pool: "
                               f"{error_name(rc)}: {message}")

    def _side_pools_registered(self) -> bool:
        return any(name != "kv" for name in self._v2_pools)

    def _anchor_is_logical(self) -> bool:
        """DeepSeek V4's KV anchor only allocates indices; its side pools hold the data."""
        pool = self.mem_pool_host
        return pool is not None and hasattr(pool, "kv_buffer") and pool.kv_buffer is None

    # ---- planning -----------------------------------------------------------------------
    def _side_pool(self, transfer: Any) -> SidePool:
        side = self._v2_pools.get(pool_name(transfer.name))
        if side is None:
            raise ValueError(f"kvpool: pool {pool_name(transfer.name)!r} was not registered "
                             f"(call register_mem_host_pool_v2 first); registered: "
                             f"{sorted(self._v2_pools) or 'none'}")
        return side

    def _plan(self, transfer: Any) -> _Plan:
        side = self._side_pool(transfer)
        keys = list(transfer.keys or [])
        plan = _Plan(transfer, len(keys))
        if not keys:
            return plan
        if transfer.host_indices is None:
            return plan.fail("no host_indices")
        indices = poolmod.as_index_list(transfer.host_indices)
        if len(indices) != len(keys) * side.page_size:
            return plan.fail(f"{len(indices)} host indices for {len(keys)} keys of "
                             f"{side.page_size}-token pages")
        if any(indices[i] % side.page_size for i in range(0, len(indices), side.page_size)):
            return plan.fail(f"a page does not start on a multiple of the page size "
                             f"{side.page_size}")
        try:
            ptrs, sizes = side.pool.get_page_buffer_meta(transfer.host_indices)
        except (ValueError, AssertionError, IndexError, TypeError) as e:
            return plan.fail(f"get_page_buffer_meta: {e}")
        buffers = [(int(p), int(s)) for p, s in zip(ptrs, sizes) if int(s) > 0]
        per_page = len(side.suffixes)
        objects = len(keys) * per_page
        if not buffers or len(buffers) % objects:
            return plan.fail(f"get_page_buffer_meta gave {len(buffers)} non-empty buffers "
                             f"for {len(keys)} pages of {per_page} objects")
        per_object = len(buffers) // objects
        for page, key in enumerate(keys):
            base = self.keys.tag(key)
            first = page * per_page * per_object
            mine = buffers[first:first + per_page * per_object]
            if not all(side.contains(p, s) for p, s in mine):
                logger.error("kvpool: %s pool: page key=%s: its buffers leave the pool's "
                             "memory (host index out of range?); the page fails", side.name,
                             key)
                continue
            slots = []
            for j, suffix in enumerate(side.suffixes):
                part = mine[j * per_object:(j + 1) * per_object]
                slots.append(len(plan.keys))
                plan.keys.append(base + suffix)
                plan.ptrs.append([p for p, _ in part])
                plan.sizes.append([s for _, s in part])
                plan.groups.append(group_id(base))
            plan.page_objects[page] = slots
        return plan

    @staticmethod
    def _gather(plans: Sequence[_Plan]) -> Tuple[List[str], List[Any], List[Any], List[str],
                                                 bool, List[int]]:
        """All plans' objects as one batch; multi is True when an object has several
        buffers (then every object is given as a list). offsets[i]: plan i's first object."""
        keys, ptrs, sizes, groups, offsets = [], [], [], [], []
        for plan in plans:
            offsets.append(len(keys))
            keys += plan.keys
            ptrs += plan.ptrs
            sizes += plan.sizes
            groups += plan.groups
        multi = any(len(p) > 1 for p in ptrs)
        if not multi:
            ptrs, sizes = [p[0] for p in ptrs], [s[0] for s in sizes]
        return keys, ptrs, sizes, groups, multi, offsets

    @staticmethod
    def _page_results(plans: Sequence[_Plan], offsets: Sequence[int],
                      good: Sequence[bool]) -> Dict[Any, List[bool]]:
        out: Dict[Any, List[bool]] = {}
        for plan, offset in zip(plans, offsets):
            out[plan.transfer.name] = [
                slots is not None and all(good[offset + s] for s in slots)
                for slots in plan.page_objects]
        return out

    # ---- the v2 calls -------------------------------------------------------------------
    def batch_set_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[Any, List[bool]]:
        """Writes every pool's pages in one batch put; pages that exist count as written.
        Returns {transfer.name: [ok per page]}."""
        plans = [self._plan(t) for t in transfers]
        keys, ptrs, sizes, groups, multi, offsets = self._gather(plans)
        results: List[int] = []
        if keys:
            results = self._put_objects(keys, ptrs, sizes, multi, group_config(groups))
            self._log_failures("batch_set_v2", keys, results, [r == 0 for r in results])
        return self._page_results(plans, offsets, [r == 0 for r in results])

    def batch_get_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[Any, List[bool]]:
        """Reads every pool's pages in one batch get; a page is True only when each of its
        objects filled its buffers exactly. Returns {transfer.name: [ok per page]}."""
        plans = [self._plan(t) for t in transfers]
        keys, ptrs, sizes, groups, multi, offsets = self._gather(plans)
        good: List[bool] = []
        if keys:
            results = self._get_objects(keys, ptrs, sizes, multi)
            want = [sum(s) for s in sizes] if multi else sizes
            good = [r == w for r, w in zip(results, want)]
            self._log_failures("batch_get_v2", keys, results, good)
        return self._page_results(plans, offsets, good)

    def batch_exists_v2(self, keys: List[str], pool_transfers: Optional[List[Any]] = None,
                        extra_info: Any = None) -> Any:
        """SGLang's restorable stop points: the KV prefix (one prefix query), cut down by each
        pool's own (ALL_PAGES: its leading run of complete pages, one prefix query;
        TRAILING_PAGES: every stop point whose window of len(transfer.keys) pages ending there
        is complete, one existence query). Returns PoolTransferResult(kv_hit_pages = the
        longest stop point every pool can restore, extra_pool_hit_pages = each pool's
        longest, restorable_prefix_pages = all of them, ascending)."""
        asked = [(t, self._side_pool(t), hit_policy(t.hit_policy)) for t in pool_transfers or []]
        kv_pages = len(keys) if self._anchor_is_logical() else self.batch_exists(keys,
                                                                                 extra_info)
        hit_count: Dict[Any, int] = {PoolName.KV: kv_pages} if kv_pages else {}
        restorable = set(range(1, kv_pages + 1))
        for transfer, side, policy in asked:
            if not restorable:
                break
            present = self._pages_present(side, keys[:kv_pages], policy)
            if policy == "all_pages":
                stops = set(range(1, present[0] + 1))
            else:
                window = max(1, len(transfer.keys) if transfer.keys else 1)
                stops = self._trailing_stops(present, window)
            if stops:
                hit_count[transfer.name] = max(stops)
            restorable &= stops
        ordered = sorted(restorable)
        return make_result(ordered[-1] if ordered else 0, hit_count, ordered)

    def _pages_present(self, side: SidePool, keys: Sequence[str], policy: str) -> List[int]:
        """all_pages: [leading complete pages]; trailing_pages: 1/0 per page."""
        if not keys:
            return [0]
        store = self._require_ready()
        per = len(side.suffixes)
        obj_keys = [self.keys.tag(k) + s for k in keys for s in side.suffixes]
        if policy == "all_pages":
            n = store.batch_exists_prefix(obj_keys)
            if n < 0:
                logger.warning("kvpool: batch_exists_v2 %s pool: %s (%s); no hit", side.name,
                               error_name(n), last_error())
                return [0]
            return [n // per]
        found = store.batch_is_exist(obj_keys)
        return [int(all(r == 1 for r in found[i * per:(i + 1) * per]))
                for i in range(len(keys))]

    @staticmethod
    def _trailing_stops(present: Sequence[int], window: int) -> set:
        """Stop points p (1..len) whose pages [max(0, p - window), p) are all present."""
        stops, run = set(), 0
        for i, ok in enumerate(present):
            run = run + 1 if ok else 0
            p = i + 1
            if run >= min(window, p):
                stops.add(p)
        return stops
