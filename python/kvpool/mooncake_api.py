"""The part of Mooncake Store's method set kvpool implements in Python, over the C++ calls of
kvpool._kvpool.KVPoolStore: here ranged reads, session transfers, replica descriptors, and the
calls kvpool has no counterpart for (NVMe-oF / file segments, copy and move tasks), which return
their error code with a message in kvpool.last_error(); the tensor calls (tensor_format.py's
304-byte header, the same bytes as Mooncake's) in mooncake_tensors.py and mooncake_parallel.py;
KVPoolStore, which mixes them all into the C++ class, at the end.

Return conventions are Mooncake's (docs/python.md has the table): writes return 0 or a negative
code, reads a tensor or None, batch calls one entry per key. Failures record their message for
kvpool.last_error(). Tensor calls need torch; without it they return UNAVAILABLE_IN_CURRENT_MODE
(-1011) or None, and the module still imports.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Dict, List, Optional, Tuple

from kvpool import _kvpool
from kvpool import tensor_format as tf
from kvpool.mooncake_common import (
    OK,
    INVALID_PARAMS,
    OBJECT_NOT_FOUND,
    UNAVAILABLE_IN_CURRENT_STATUS,
    NOT_SUPPORTED,
    TASK_NOT_FOUND,
    _fail,
    _as_int,
    _batch_fail,
)
from kvpool.mooncake_parallel import MooncakeParallelTensorMethods
from kvpool.mooncake_tensors import MooncakeTensorMethods
from kvpool.mooncake_types import (
    Descriptor,
    MemoryDescriptor,
    ReplicaDescriptor,
    ReplicaStatus,
)


class MooncakeStoreMethods:
    """Mixed into kvpool.KVPoolStore (the pybind class comes second in the MRO)."""

    # ---- bookkeeping of registered memory (ranged calls check destinations against it) ----

    def _regions(self) -> Dict[int, int]:
        r = self.__dict__.get("_kv_regions")
        if r is None:
            r = self.__dict__.setdefault("_kv_regions", {})
            self.__dict__.setdefault("_kv_lock", threading.Lock())
        return r

    def register_buffer(self, buffer_ptr: int, size: int) -> int:
        rc = super().register_buffer(buffer_ptr, size)
        if rc == OK:
            with self._lock():
                self._regions()[int(buffer_ptr)] = int(size)
        return rc

    def unregister_buffer(self, buffer_ptr: int) -> int:
        rc = super().unregister_buffer(buffer_ptr)
        with self._lock():
            self._regions().pop(int(buffer_ptr), None)
        return rc

    def alloc_from_mem_pool(self, size, /):
        ptr = super().alloc_from_mem_pool(size)
        if ptr:
            with self._lock():
                self._regions()[int(ptr)] = int(size)
        return ptr

    def close(self, /) -> int:
        with self._lock():
            self._regions().clear()
            self.__dict__.pop("_kv_get_sessions", None)
            self.__dict__.pop("_kv_put_sessions", None)
        return super().close()

    def __exit__(self, *exc) -> bool:
        self.close()  # through close() above: the registered ranges are forgotten too
        return False

    def _lock(self) -> threading.Lock:
        self._regions()
        return self.__dict__["_kv_lock"]

    def _capacity(self, ptr: int) -> int:
        """Bytes from `ptr` to the end of the registered region holding it (0: none)."""
        with self._lock():
            for base, size in self._regions().items():
                if base <= ptr < base + size:
                    return base + size - ptr
        return 0

    def _set_up(self) -> bool:
        return self.get_hostname() != ""

    def _not_set_up(self) -> int:
        return _fail(UNAVAILABLE_IN_CURRENT_STATUS, "store is not set up (or closed)")

    # ---- legacy and lifecycle odds ----

    def init_all(self, protocol, device_name, mount_segment_size, /) -> int:
        """Mooncake's legacy set-up against fixed endpoints: NOT_SUPPORTED (use setup)."""
        return _fail(NOT_SUPPORTED, "init_all is not supported: use setup() or setup_dummy()")

    def get_offload_rpc_read_count(self, /) -> int:
        return 0

    # ---- copying odds ----

    def upsert_parts(self, key, *parts, config=None) -> int:
        """upsert of the parts joined in order; total length 0 stores nothing and returns 0."""
        try:
            total = sum(memoryview(p).nbytes for p in parts)
        except TypeError as e:
            raise TypeError(f"upsert_parts: every part must support the buffer protocol: {e}")
        if not total:
            return OK if self._set_up() else self._not_set_up()
        # The parts are joined once, by the C++ call, straight into its staging memory.
        args = ([key], [list(parts)]) if config is None else ([key], [list(parts)], config)
        return self.batch_upsert_from_buffers(*args)[0]

    def put_from_with_metadata(self, key, buffer_ptr, metadata_buffer_ptr, size, metadata_size,
                               config=None) -> int:
        """One object: the metadata region followed by the data region."""
        if not self._set_up():
            return self._not_set_up()
        if size == 0:
            return OK
        args = ([key], [[metadata_buffer_ptr, buffer_ptr]], [[metadata_size, size]])
        r = (self.batch_put_from_multi_buffers(*args) if config is None else
             self.batch_put_from_multi_buffers(*args, config))
        return r[0] if r else INVALID_PARAMS

    # ---- ranged reads ----

    def get_into_ranges(self, buffer_ptrs, all_keys, all_dst_offsets, all_src_offsets,
                        all_sizes) -> List[List[List[int]]]:
        """Buffer-major ranged read: for buffer i, key j, fragment k copy all_sizes[i][j][k]
        bytes from offset all_src_offsets[i][j][k] of the object to buffer_ptrs[i] +
        all_dst_offsets[i][j][k]. The result mirrors all_dst_offsets: bytes copied or a
        negative code per fragment (INVALID_PARAMS for a range past the object's end or the
        registered region's end, OBJECT_NOT_FOUND for a missing key)."""
        n = len(buffer_ptrs)

        def shape_of(code):
            out = []
            for i in range(len(all_dst_offsets)):
                out.append([[code] * max(1, len(d)) for d in all_dst_offsets[i]])
            return out

        if not (len(all_keys) == len(all_dst_offsets) == len(all_src_offsets) == len(all_sizes)
                == n) or any(
                    not (len(all_keys[i]) == len(all_dst_offsets[i]) == len(all_src_offsets[i])
                         == len(all_sizes[i])) for i in range(n)):
            _fail(INVALID_PARAMS, "get_into_ranges: the five lists' lengths differ")
            return shape_of(INVALID_PARAMS)
        if not self._set_up():
            self._not_set_up()
            return shape_of(UNAVAILABLE_IN_CURRENT_STATUS)
        keys = sorted({k for ks in all_keys for k in ks})
        handles = dict(zip(keys, self.batch_get_buffer(keys))) if keys else {}
        result = []
        for i in range(n):
            cap = self._capacity(int(buffer_ptrs[i]))
            per_buffer = []
            for j, key in enumerate(all_keys[i]):
                dst, src, sz = all_dst_offsets[i][j], all_src_offsets[i][j], all_sizes[i][j]
                if not (len(dst) == len(src) == len(sz)):
                    per_buffer.append([INVALID_PARAMS] * max(1, len(dst)))
                    continue
                h = handles.get(key)
                frags = []
                for d, s, z in zip(dst, src, sz):
                    if h is None:
                        frags.append(_fail(OBJECT_NOT_FOUND, f"key={key} not found"))
                    elif s < 0 or d < 0 or z < 0 or s + z > h.size():
                        frags.append(_fail(INVALID_PARAMS, f"key={key}: source range [{s}, "
                                           f"{s + z}) is past the object's {h.size()} bytes"))
                    elif d + z > cap:
                        frags.append(_fail(INVALID_PARAMS, f"key={key}: destination range "
                                           f"[{d}, {d + z}) is past the registered region "
                                           f"({cap} bytes from buffer {i})"))
                    else:
                        ctypes.memmove(int(buffer_ptrs[i]) + d, h.ptr() + s, z)
                        frags.append(z)
                per_buffer.append(frags)
            result.append(per_buffer)
        return result

    # ---- session ranged transfers (kept in this process; the master sees plain batches) ----

    def _sessions(self, name):
        with self._lock():
            return self.__dict__.setdefault(name, {})

    def batch_get_session_start(self, keys) -> List[int]:
        """Fetches the objects once; later range reads copy from this process's copy."""
        if not self._set_up():
            self._not_set_up()
            return []
        if not keys:
            return []
        sessions = self._sessions("_kv_get_sessions")
        out = []
        for key, h in zip(keys, self.batch_get_buffer(list(keys))):
            if h is None:
                out.append(_fail(OBJECT_NOT_FOUND, f"key={key} not found"))
            else:
                sessions[key] = h
                out.append(OK)
        return out

    def _session_ranges(self, name, what, keys, all_buffer_ptrs, all_sizes, all_offsets,
                        into_session: bool) -> List[int]:
        """The ranged copies of a get session (object -> registered buffers) or a put session
        (registered buffers -> the object being assembled), one memmove per range. Every range
        is checked against the object and against the registered region at its pointer before
        any byte moves; a key with a bad range moves nothing."""
        if not self._set_up():
            self._not_set_up()
            return []
        if not (len(keys) == len(all_buffer_ptrs) == len(all_sizes) == len(all_offsets)):
            return _batch_fail(len(keys), INVALID_PARAMS, "lengths differ")
        sessions = self._sessions(name)
        out = []
        for key, ptrs, sizes, offs in zip(keys, all_buffer_ptrs, all_sizes, all_offsets):
            s = sessions.get(key)
            if s is None:
                out.append(_fail(INVALID_PARAMS, f"key={key} has no {what} session"))
                continue
            obj = s if not into_session else s[0]  # get: BufferHandle; put: (bytearray, cfg)
            n = len(obj)
            if not (len(ptrs) == len(sizes) == len(offs)) or any(
                    o < 0 or z < 0 or o + z > n or z > self._capacity(int(p))
                    for p, z, o in zip(ptrs, sizes, offs)):
                out.append(_fail(INVALID_PARAMS, f"key={key}: a range overflows the object or "
                                 "its registered buffer"))
                continue
            base = ctypes.addressof((ctypes.c_char * n).from_buffer(obj))
            for p, z, o in zip(ptrs, sizes, offs):
                if into_session:
                    ctypes.memmove(base + o, int(p), z)
                else:
                    ctypes.memmove(int(p), base + o, z)
            out.append(sum(sizes))
        return out

    def batch_get_into_multi_buffer_ranges(self, keys, all_buffer_ptrs, all_sizes,
                                           all_src_offsets) -> List[int]:
        return self._session_ranges("_kv_get_sessions", "get", keys, all_buffer_ptrs,
                                    all_sizes, all_src_offsets, into_session=False)

    def batch_get_session_end(self, keys) -> int:
        if not self._set_up():
            self._not_set_up()
            return -1
        sessions = self._sessions("_kv_get_sessions")
        for k in keys:
            sessions.pop(k, None)
        return OK

    def batch_put_session_start(self, keys, sizes, config=None) -> List[int]:
        """Reserves objects of the given sizes; their bytes arrive by range and are put at
        batch_put_session_end (nothing is visible before)."""
        if not self._set_up():
            self._not_set_up()
            return []
        if len(keys) != len(sizes):
            return _batch_fail(len(keys), INVALID_PARAMS, "keys and sizes lengths differ")
        sessions = self._sessions("_kv_put_sessions")
        out = []
        for k, z in zip(keys, sizes):
            if k in sessions:
                out.append(_fail(INVALID_PARAMS, f"key={k} already has a put session"))
            elif _as_int(z) is None or z <= 0:
                out.append(_fail(INVALID_PARAMS, f"key={k}: size {z!r} must be a positive int"))
            else:
                try:  # the object is assembled in this process: a size it cannot hold fails
                    sessions[k] = (bytearray(_as_int(z)), config)
                except (MemoryError, OverflowError) as e:
                    out.append(_fail(INVALID_PARAMS, f"key={k}: size {z} cannot be staged in "
                                     f"this process's memory ({type(e).__name__})"))
                    continue
                out.append(OK)
        return out

    def batch_put_from_multi_buffer_ranges(self, keys, all_buffer_ptrs, all_sizes,
                                           all_dst_offsets) -> List[int]:
        return self._session_ranges("_kv_put_sessions", "put", keys, all_buffer_ptrs,
                                    all_sizes, all_dst_offsets, into_session=True)

    def batch_put_session_end(self, keys) -> List[int]:
        if not self._set_up():
            self._not_set_up()
            return []
        sessions = self._sessions("_kv_put_sessions")
        out: List[Optional[int]] = [None] * len(keys)
        groups: Dict[int, Tuple[object, List[int]]] = {}
        for i, k in enumerate(keys):
            s = sessions.pop(k, None)
            if s is None:
                out[i] = _fail(INVALID_PARAMS, f"key={k} has no put session")
            else:
                groups.setdefault(id(s[1]), (s[1], []))[1].append((i, k, s[0]))
        for cfg, items in groups.values():
            ks = [k for _, k, _ in items]
            vals = [b for _, _, b in items]
            rs = (self.batch_put_from_buffers(ks, vals) if cfg is None else
                  self.batch_put_from_buffers(ks, vals, cfg))
            for (i, _, _), r in zip(items, rs):
                out[i] = r
        return out

    def batch_put_session_revoke(self, keys) -> List[int]:
        if not self._set_up():
            self._not_set_up()
            return []
        sessions = self._sessions("_kv_put_sessions")
        for k in keys:
            sessions.pop(k, None)
        return [OK] * len(keys)

    # ---- replicas, tasks, segments ----

    def get_replica_desc(self, key) -> List[ReplicaDescriptor]:
        """One memory-replica descriptor per object (kvpool places memory replicas; the
        address is not exposed, buffer_address is 0); [] on a miss or an error."""
        return self.batch_get_replica_desc([key]).get(key, [])

    def batch_get_replica_desc(self, keys) -> Dict[str, List[ReplicaDescriptor]]:
        """{key: [ReplicaDescriptor]} for the keys that exist; missing keys are absent."""
        out: Dict[str, List[ReplicaDescriptor]] = {}
        if not keys:
            return out
        exists = self.batch_is_exist(list(keys))
        for k, e in zip(keys, exists):
            if e != 1:
                continue
            size = self.get_size(k)
            if size < 0:
                continue
            d = Descriptor(size, 0, "")
            out[k] = [ReplicaDescriptor(ReplicaStatus.COMPLETE, MemoryDescriptor(d))]
        return out

    def batch_replica_clear(self, keys, segment_name="") -> List[str]:
        _fail(NOT_SUPPORTED, "batch_replica_clear is not supported: kvpool frees the replicas "
              "of dead writers itself (docs/failure-model.md)")
        return []

    def create_copy_task(self, key, targets) -> Tuple[Tuple[int, int], int]:
        return (0, 0), _fail(NOT_SUPPORTED, "copy tasks are not supported by kvpool")

    def create_move_task(self, key, source, target) -> Tuple[Tuple[int, int], int]:
        return (0, 0), _fail(NOT_SUPPORTED, "move tasks are not supported by kvpool")

    def query_task(self, task_id):
        # Mooncake answers an unknown id with TASK_NOT_FOUND; kvpool creates no tasks, so every
        # id is unknown.
        return None, _fail(TASK_NOT_FOUND, f"task_id={task_id!r} not found: kvpool runs no "
                           "copy or move tasks")

    def mount_segment(self, path, size, offset=0, protocol="tcp", location=""):
        return {"ret": _fail(NOT_SUPPORTED, "file segments are not supported: contribute "
                             "memory with setup(global_segment_size=...) or a kvpool node"),
                "segment_ids": []}

    def unmount_segment(self, segment_ids, grace_period_seconds=0) -> int:
        return _fail(NOT_SUPPORTED, "file segments are not supported by kvpool")

    def allocate_and_mount_segment(self, size, protocol="tcp", location=""):
        return {"ret": _fail(NOT_SUPPORTED, "extra segments are not supported: contribute "
                             "memory with setup(global_segment_size=...) or a kvpool node"),
                "segment_ids": [], "allocated_size": 0}

    def unmount_and_free_segment(self, segment_ids, grace_period_seconds=0) -> int:
        return _fail(NOT_SUPPORTED, "extra segments are not supported by kvpool")

    def unmount_local_disk_segment(self, grace_period_seconds=0) -> int:
        return OK  # no local disk segment is ever mounted: a no-op, as Mooncake's without SSD


class KVPoolStore(MooncakeStoreMethods, MooncakeTensorMethods, MooncakeParallelTensorMethods,
                  _kvpool.KVPoolStore):
    """A client of a kvpool pool with Mooncake Store's whole Python API (docs/python.md)."""


# ---- module-level functions of mooncake.store ----

def _serialize_tensor(t):
    """(304-byte header, data_ptr, nbytes, owner) of a tensor; ValueError if unsupported."""
    hdr, payload, owner = tf.encode(t)
    return hdr, owner.data_ptr(), len(payload), owner


def _tensor_metadata_size() -> int:
    return tf.HEADER_SIZE


def _deserialize_tensor(b):
    """A tensor from header + payload bytes; ValueError for invalid input."""
    return tf.decode(b)


def bind_to_numa_node(node: int) -> None:
    """Accepted and ignored with a warning: kvpool leaves NUMA placement to the OS (numactl)."""
    import logging  # noqa: PLC0415
    logging.getLogger("kvpool").warning("bind_to_numa_node(%s): not supported, ignored", node)


def get_alloc_func_addr() -> int:
    """0: kvpool has no hugepage allocator function to hand to a torch pluggable allocator."""
    return 0


def get_free_func_addr() -> int:
    return 0
