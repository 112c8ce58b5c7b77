"""The part of Mooncake Store's method set kvpool implements in Python, over the C++ calls of
kvpool._kvpool.KVPoolStore: tensor calls (tensor_format.py's 304-byte header, the same bytes as
Mooncake's), ranged reads, session transfers, replica descriptors, and the calls kvpool has no
counterpart for (CUDA destinations, NVMe-oF / file segments, copy and move tasks), which return
their error code with a message in kvpool.last_error().

Return conventions are Mooncake's (docs/python.md has the table): writes return 0 or a negative
code, reads a tensor or None, batch calls one entry per key. Failures record their message for
kvpool.last_error(). Tensor calls need torch; without it they return UNAVAILABLE_IN_CURRENT_MODE
(-1011) or None, and the module still imports.
"""

from __future__ import annotations

import ctypes
import functools
import operator
import struct
import threading
from typing import Dict, List, Optional, Tuple

from kvpool import _kvpool
from kvpool import tensor_format as tf
from kvpool._kvpool import _set_last_error
from kvpool.mooncake_types import (
    Descriptor,
    MemoryDescriptor,
    ReplicaDescriptor,
    ReplicaStatus,
)

OK = 0
BUFFER_OVERFLOW = -10
INVALID_PARAMS = -600
OBJECT_NOT_FOUND = -704
UNAVAILABLE_IN_CURRENT_STATUS = -1010
UNAVAILABLE_IN_CURRENT_MODE = -1011
NOT_SUPPORTED = -1012
TASK_NOT_FOUND = -1400

_NO_CUDA = ("CUDA destinations need Mooncake's CUDA IPC path; kvpool moves host memory only "
            "(read with get_tensor_into into host memory, then copy to the device)")


def _fail(code: int, message: str) -> int:
    return _set_last_error(code, message)


def _fail_none(code: int, message: str):
    _set_last_error(code, message)
    return None


class _TensorCall:
    """Turns the tensor layer's exceptions into Mooncake's return values: a code or None, or
    for a batch call (batch=True: the keys are the first argument) one per key."""

    def __init__(self, codes: bool, batch: bool = False):
        self.codes = codes
        self.batch = batch

    def __call__(self, fn):
        codes, batch = self.codes, self.batch

        def failed(args, code):
            one = code if codes else None
            if not batch:
                return one
            try:
                return [one] * len(args[1])
            except (IndexError, TypeError):
                return []

        @functools.wraps(fn)
        def run(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except tf.TorchUnavailable as e:
                _set_last_error(UNAVAILABLE_IN_CURRENT_MODE, str(e))
                return failed(args, UNAVAILABLE_IN_CURRENT_MODE)
            except tf.TensorFormatError as e:
                _set_last_error(INVALID_PARAMS, f"{fn.__name__}: {e}")
                return failed(args, INVALID_PARAMS)

        return run


_code_call = _TensorCall(codes=True)
_none_call = _TensorCall(codes=False)
_codes_call = _TensorCall(codes=True, batch=True)
_nones_call = _TensorCall(codes=False, batch=True)


def _at(ptr: int, size: int):
    """A writable buffer over [ptr, ptr + size), no copy. REQUIRES: the range was checked
    against the registered regions."""
    return (ctypes.c_char * int(size)).from_address(int(ptr))


def _as_int(v) -> Optional[int]:
    """v as an int (numpy integers too), None for anything else (floats, bools included)."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _batch_fail(n: int, code: int, message: str) -> List[int]:
    _set_last_error(code, message)
    return [code] * n


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

    # ---- tensors: basic ----

    def _tensor_writes(self, keys, encoded, config, upsert: bool) -> List[int]:
        values = [[h, p] for h, p, _ in encoded]  # header and payload joined by the C++ call
        write = self.batch_upsert_from_buffers if upsert else self.batch_put_from_buffers
        return write(keys, values) if config is None else write(keys, values, config)

    def _put_tensors(self, keys, tensors, config, upsert, name) -> List[int]:
        if len(keys) != len(tensors):
            return _batch_fail(len(keys), INVALID_PARAMS,
                               f"{name}: {len(keys)} keys and {len(tensors)} tensors")
        if not self._set_up():
            return [self._not_set_up()] * len(keys)
        tf.require_torch()
        out: List[Optional[int]] = [None] * len(keys)
        ok_idx, enc = [], []
        for i, t in enumerate(tensors):
            try:
                enc.append(tf.encode(t))
                ok_idx.append(i)
            except tf.TensorFormatError as e:
                out[i] = _fail(INVALID_PARAMS, f"{name}: key={keys[i]}: {e}")
        if ok_idx:
            rs = self._tensor_writes([keys[i] for i in ok_idx], enc, config, upsert)
            for i, r in zip(ok_idx, rs):
                out[i] = r
        return out

    @staticmethod
    def _check_pub_config(config) -> Optional[str]:
        if config is not None and config.preferred_segments and \
                len(config.preferred_segments) != config.replica_num:
            return (f"config.preferred_segments has {len(config.preferred_segments)} entries "
                    f"for replica_num {config.replica_num}")
        return None

    @_code_call
    def put_tensor(self, key, tensor) -> int:
        """Stores `tensor` (any device, made contiguous) as header + bytes. 0 or a code."""
        return self._put_tensors([key], [tensor], None, False, "put_tensor")[0]

    @_codes_call
    def batch_put_tensor(self, keys, tensors_list) -> List[int]:
        return self._put_tensors(list(keys), list(tensors_list), None, False, "batch_put_tensor")

    @_code_call
    def pub_tensor(self, key, tensor, config=None) -> int:
        if (msg := self._check_pub_config(config)) is not None:
            return _fail(INVALID_PARAMS, f"pub_tensor: {msg}")
        return self._put_tensors([key], [tensor], config, False, "pub_tensor")[0]

    @_codes_call
    def batch_pub_tensor(self, keys, tensors_list, config=None) -> List[int]:
        if (msg := self._check_pub_config(config)) is not None:
            return _batch_fail(len(keys), INVALID_PARAMS, f"batch_pub_tensor: {msg}")
        return self._put_tensors(list(keys), list(tensors_list), config, False,
                                 "batch_pub_tensor")

    @_code_call
    def upsert_tensor(self, key, tensor) -> int:
        return self._put_tensors([key], [tensor], None, True, "upsert_tensor")[0]

    @_codes_call
    def batch_upsert_tensor(self, keys, tensors_list) -> List[int]:
        return self._put_tensors(list(keys), list(tensors_list), None, True,
                                 "batch_upsert_tensor")

    @_code_call
    def upsert_pub_tensor(self, key, tensor, config=None) -> int:
        if (msg := self._check_pub_config(config)) is not None:
            return _fail(INVALID_PARAMS, f"upsert_pub_tensor: {msg}")
        return self._put_tensors([key], [tensor], config, True, "upsert_pub_tensor")[0]

    @_codes_call
    def batch_upsert_pub_tensor(self, keys, tensors_list, config=None) -> List[int]:
        if (msg := self._check_pub_config(config)) is not None:
            return _batch_fail(len(keys), INVALID_PARAMS, f"batch_upsert_pub_tensor: {msg}")
        return self._put_tensors(list(keys), list(tensors_list), config, True,
                                 "batch_upsert_pub_tensor")

    def _decode_handles(self, keys, handles, name):
        out = []
        for k, h in zip(keys, handles):
            if h is None:
                out.append(None)  # get_buffer recorded why
                continue
            try:
                # The handle owns the bytes fetched from the pool: the tensor aliases them
                # (and keeps the handle alive) instead of copying the payload once more.
                out.append(tf.decode(h, copy=False))
            except tf.TensorFormatError as e:
                _fail(INVALID_PARAMS, f"{name}: key={k}: {e}")
                out.append(None)
        return out

    @_none_call
    def get_tensor(self, key):
        """A CPU tensor over the bytes fetched from the pool (this process's own copy, not
        shared with the pool), or None (miss, not a tensor)."""
        tf.require_torch()
        return self._decode_handles([key], [self.get_buffer(key)], "get_tensor")[0]

    @_nones_call
    def batch_get_tensor(self, keys):
        tf.require_torch()
        keys = list(keys)
        if not keys:
            return []
        return self._decode_handles(keys, self.batch_get_buffer(keys), "batch_get_tensor")

    # ---- tensors: zero-copy reads into and writes from registered memory ----

    def _into_one(self, key, ptr, size, n, name):
        if n is None:
            return None
        if n < 0:
            return None  # get_into recorded why
        view = (ctypes.c_char * n).from_address(int(ptr))
        try:
            h = tf.parse_header(view)
        except tf.TensorFormatError as e:
            return _fail_none(INVALID_PARAMS, f"{name}: key={key}: {e}")
        torch = tf.require_torch()
        dtype = tf.torch_dtype(h.dtype)
        if h.data_bytes == 0:
            return torch.empty(h.local_shape, dtype=dtype)
        data = (ctypes.c_char * h.data_bytes).from_address(int(ptr) + h.data_offset)
        return torch.frombuffer(data, dtype=torch.uint8).view(dtype).reshape(h.local_shape)

    @_none_call
    def get_tensor_into(self, key, buffer_ptr, size):
        """Reads the object (header + bytes) into the registered buffer and returns a tensor
        aliasing it past the header; None on failure (a null pointer included)."""
        tf.require_torch()
        if not buffer_ptr:
            return _fail_none(INVALID_PARAMS, "get_tensor_into: null buffer_ptr")
        n = self.get_into(key, buffer_ptr, size)
        return self._into_one(key, buffer_ptr, size, n, "get_tensor_into")

    @_nones_call
    def batch_get_tensor_into(self, keys, buffer_ptrs, sizes):
        """Per key a tensor aliasing its buffer or None. As Mooncake's: mismatched lengths, a
        null pointer or a store not set up give a list of INVALID_PARAMS ints instead."""
        tf.require_torch()
        keys = list(keys)
        if not (len(keys) == len(buffer_ptrs) == len(sizes)) or any(not p for p in buffer_ptrs):
            return _batch_fail(len(keys), INVALID_PARAMS,
                               "batch_get_tensor_into: lengths differ or a null buffer_ptr")
        if not self._set_up():
            self._not_set_up()
            return [INVALID_PARAMS] * len(keys)
        if not keys:
            return []
        ns = self.batch_get_into(keys, list(buffer_ptrs), list(sizes))
        return [self._into_one(k, p, z, n, "batch_get_tensor_into")
                for k, p, z, n in zip(keys, buffer_ptrs, sizes, ns)]

    def _check_tensor_buffer(self, ptr, size) -> Optional[str]:
        """Why [ptr, ptr + size) cannot be read as one tensor object, or None. The range must
        lie in a registered region before its header is read: an address from Python is
        not dereferenced unchecked."""
        if not ptr:
            return "null buffer_ptr"
        if size < tf.HEADER_SIZE:
            return f"size {size} is smaller than the {tf.HEADER_SIZE}-byte header"
        cap = self._capacity(int(ptr))
        if size > cap:
            return (f"[{int(ptr):#x}, +{size}) is not inside a registered buffer ({cap} "
                    "registered bytes from there)")
        try:
            h = tf.parse_header(_at(ptr, tf.HEADER_SIZE), size)
        except tf.TensorFormatError as e:
            return str(e)
        if h.data_offset + h.data_bytes != size:
            return f"size {size} is not the header's object size {h.data_offset + h.data_bytes}"
        return None

    def _from_buffers(self, keys, ptrs, sizes, name, upsert):
        keys = list(keys)
        if not (len(keys) == len(ptrs) == len(sizes)):
            return _batch_fail(len(keys), INVALID_PARAMS, f"{name}: lengths differ")
        if not keys:
            return []
        for p, z in zip(ptrs, sizes):
            if (msg := self._check_tensor_buffer(p, z)) is not None:
                return _batch_fail(len(keys), INVALID_PARAMS, f"{name}: {msg}")
        if upsert:
            return self.batch_upsert_from(keys, list(ptrs), list(sizes))
        return self.batch_put_from(keys, list(ptrs), list(sizes))

    def put_tensor_from(self, key, buffer_ptr, size) -> int:
        """Stores registered memory that already holds header + bytes of exactly `size`."""
        return self._from_buffers([key], [buffer_ptr], [size], "put_tensor_from", False)[0]

    def batch_put_tensor_from(self, keys, buffer_ptrs, sizes) -> List[int]:
        return self._from_buffers(keys, buffer_ptrs, sizes, "batch_put_tensor_from", False)

    def upsert_tensor_from(self, key, buffer_ptr, size) -> int:
        return self._from_buffers([key], [buffer_ptr], [size], "upsert_tensor_from", True)[0]

    def batch_upsert_tensor_from(self, keys, buffer_ptrs, sizes) -> List[int]:
        return self._from_buffers(keys, buffer_ptrs, sizes, "batch_upsert_tensor_from", True)

    # ---- tensors: CUDA destinations (not available) ----

    def get_tensor_into_cuda(self, key, tensor) -> int:
        return _fail(UNAVAILABLE_IN_CURRENT_MODE, f"get_tensor_into_cuda: {_NO_CUDA}")

    def batch_get_tensor_into_cuda(self, keys, tensors_list) -> List[int]:
        return _batch_fail(len(keys), UNAVAILABLE_IN_CURRENT_MODE,
                           f"batch_get_tensor_into_cuda: {_NO_CUDA}")

    # ---- tensors: legacy tensor parallelism (every shard is stored by one call) ----

    def _tp_encoded(self, tensor, tp_size, split_dim):
        shards = tf.split_shards(tensor, tp_size, split_dim)
        full = tuple(int(d) for d in tensor.shape)
        return [tf.encode(s, tf.LAYOUT_SHARD, full,
                          [tf.tp_axis(r, tp_size, split_dim, int(s.shape[split_dim]))])
                for r, s in enumerate(shards)]

    def _put_tp(self, base_keys, tensors, config, tp_size, split_dim, name) -> List[int]:
        if len(base_keys) != len(tensors):
            return _batch_fail(len(base_keys), INVALID_PARAMS, f"{name}: lengths differ")
        if tp_size <= 1:
            return self._put_tensors(list(base_keys), list(tensors), config, False, name)
        if not self._set_up():
            return [self._not_set_up()] * len(base_keys)
        tf.require_torch()
        out = []
        for key, t in zip(base_keys, tensors):
            try:
                enc = self._tp_encoded(tf.as_tensor(t), tp_size, split_dim)
            except tf.TensorFormatError as e:
                out.append(_fail(INVALID_PARAMS, f"{name}: key={key}: {e}"))
                continue
            keys = [f"{key}_tp_{r}" for r in range(tp_size)]
            rs = self._tensor_writes(keys, enc, config, False)
            out.append(next((r for r in rs if r != OK), OK))
        return out

    @_code_call
    def put_tensor_with_tp(self, key, tensor, tp_rank=0, tp_size=1, split_dim=0) -> int:
        """Splits along split_dim into tp_size shards, stored as key_tp_0..; tp_rank is
        ignored (as Mooncake's). tp_size <= 1: put_tensor(key)."""
        return self._put_tp([key], [tensor], None, tp_size, split_dim, "put_tensor_with_tp")[0]

    @_codes_call
    def batch_put_tensor_with_tp(self, base_keys, tensors_list, tp_rank=0, tp_size=1,
                                 split_dim=0) -> List[int]:
        return self._put_tp(list(base_keys), list(tensors_list), None, tp_size, split_dim,
                            "batch_put_tensor_with_tp")

    @_code_call
    def pub_tensor_with_tp(self, key, tensor, config=None, tp_rank=0, tp_size=1,
                           split_dim=0) -> int:
        if (msg := self._check_pub_config(config)) is not None:
            return _fail(INVALID_PARAMS, f"pub_tensor_with_tp: {msg}")
        return self._put_tp([key], [tensor], config, tp_size, split_dim,
                            "pub_tensor_with_tp")[0]

    @_codes_call
    def batch_pub_tensor_with_tp(self, base_keys, tensors_list, config=None, tp_rank=0,
                                 tp_size=1, split_dim=0) -> List[int]:
        if (msg := self._check_pub_config(config)) is not None:
            return _batch_fail(len(base_keys), INVALID_PARAMS, f"batch_pub_tensor_with_tp: {msg}")
        return self._put_tp(list(base_keys), list(tensors_list), config, tp_size, split_dim,
                            "batch_pub_tensor_with_tp")

    @staticmethod
    def _tp_key(key, tp_rank, tp_size):
        return key if tp_size <= 1 else f"{key}_tp_{tp_rank}"

    @_none_call
    def get_tensor_with_tp(self, key, tp_rank=0, tp_size=1, split_dim=0):
        """The shard key_tp_<tp_rank> (key itself for tp_size <= 1); split_dim is unused."""
        return self.get_tensor(self._tp_key(key, tp_rank, tp_size))

    @_nones_call
    def batch_get_tensor_with_tp(self, base_keys, tp_rank=0, tp_size=1):
        return self.batch_get_tensor([self._tp_key(k, tp_rank, tp_size) for k in base_keys])

    @_none_call
    def get_tensor_with_tp_into(self, key, buffer_ptr, size, tp_rank=0, tp_size=1,
                                split_dim=0):
        return self.get_tensor_into(self._tp_key(key, tp_rank, tp_size), buffer_ptr, size)

    @_nones_call
    def batch_get_tensor_with_tp_into(self, base_keys, buffer_ptrs, sizes, tp_rank=0,
                                      tp_size=1):
        return self.batch_get_tensor_into([self._tp_key(k, tp_rank, tp_size) for k in base_keys],
                                          buffer_ptrs, sizes)

    def _tensors_from_buffers(self, ptrs, sizes):
        """Tensors aliasing the registered buffers (the callers store them before returning,
        so no copy is made here)."""
        out = []
        for p, z in zip(ptrs, sizes):
            if (msg := self._check_tensor_buffer(p, z)) is not None:
                raise tf.TensorFormatError(msg)
            out.append(tf.decode(_at(p, z), copy=False))
        return out

    @_code_call
    def put_tensor_with_tp_from(self, key, buffer_ptr, size, tp_rank=0, tp_size=1,
                                split_dim=0) -> int:
        """Decodes the full tensor from the buffer, then stores every shard."""
        tf.require_torch()
        (t,) = self._tensors_from_buffers([buffer_ptr], [size])
        return self._put_tp([key], [t], None, tp_size, split_dim, "put_tensor_with_tp_from")[0]

    @_codes_call
    def batch_put_tensor_with_tp_from(self, base_keys, buffer_ptrs, sizes, tp_rank=0,
                                      tp_size=1, split_dim=0) -> List[int]:
        tf.require_torch()
        if not (len(base_keys) == len(buffer_ptrs) == len(sizes)):
            return _batch_fail(len(base_keys), INVALID_PARAMS, "lengths differ")
        ts = self._tensors_from_buffers(buffer_ptrs, sizes)
        return self._put_tp(list(base_keys), ts, None, tp_size, split_dim,
                            "batch_put_tensor_with_tp_from")

    # ---- tensors: unified parallelism ----

    @staticmethod
    def _axes(parallelism) -> List[tuple]:
        """[(kind, rank, size, split_dim, expert_id, stage_id)] validated; TensorFormatError."""
        axes = getattr(parallelism, "axes", None)
        if not axes:
            raise tf.TensorFormatError("parallelism has no axes")
        if len(axes) > tf.MAX_AXES:
            raise tf.TensorFormatError(f"at most {tf.MAX_AXES} parallel axes")
        out = []
        for a in axes:
            kind = str(a.kind).lower()
            if kind not in tf.AXIS_KINDS:
                raise tf.TensorFormatError(f"axis kind '{a.kind}' is not tp, dp, ep or pp")
            if not 0 <= a.rank < a.size:
                raise tf.TensorFormatError(f"axis {kind}: rank {a.rank} outside 0..{a.size - 1}")
            out.append((kind, a.rank, a.size, a.split_dim, a.expert_id, a.stage_id))
        out.sort(key=lambda x: tf.AXIS_KINDS[x[0]])
        return out

    @classmethod
    def _parallel_key(cls, key, axes) -> str:
        if len(axes) == 1 and axes[0][0] == "tp":
            return f"{key}_tp_{axes[0][1]}"
        name = key
        for kind, rank, size, sd, eid, sid in axes:
            name += f"__{kind}_{rank}of{size}"
            if sd is not None:
                name += f"_sd{sd}"
            if eid is not None:
                name += f"_eid{eid}"
            if sid is not None:
                name += f"_sid{sid}"
        return name

    _WRITER_MANIFEST = struct.Struct("<IHHiiiii4x8q")  # magic .. reserved0, pad, global shape

    def _writer_manifest(self, shape, dtype, split_dim, count) -> bytes:
        dims = list(shape) + [-1] * (tf.MAX_DIMS - len(shape))
        return self._WRITER_MANIFEST.pack(0x574D414E, 1, self._WRITER_MANIFEST.size, dtype,
                                          len(shape), split_dim, count, 0, *dims)

    def _parallel_write(self, key, tensor, parallelism, config, writer_partition, upsert):
        tf.require_torch()
        t = tf.as_tensor(tensor)
        if parallelism is not None and writer_partition is not None:
            raise tf.TensorFormatError("parallelism and writer_partition cannot be combined")
        if parallelism is None and writer_partition is None:
            return self._put_tensors([key], [t], config, upsert, "put_tensor_with_parallelism")[0]
        if writer_partition is not None:
            r, n, sd = (int(writer_partition.rank), int(writer_partition.size),
                        int(writer_partition.split_dim))
            if not (0 <= r < n) or sd < 0:
                raise tf.TensorFormatError(f"writer_partition rank {r} / size {n} / split_dim "
                                           f"{sd} invalid")
            shard = tf.split_shards(t, n, sd)[r]
            enc = tf.encode(shard, tf.LAYOUT_SHARD, tuple(t.shape),
                            [tf.tp_axis(r, n, sd, int(shard.shape[sd]))])
            shard_key = f"{key}__writer_{r}of{n}_sd{sd}"
            manifest = self._writer_manifest(tuple(t.shape), tf.dtype_code(t), sd, n)
            rs = self._tensor_writes([shard_key], [enc], config, upsert)
            if rs[0] != OK:
                return rs[0]
            return self.put(f"{key}__writer_manifest", manifest)
        axes = self._axes(parallelism)
        layout = []
        global_shape = list(t.shape)
        for i, (kind, rank, size, sd, eid, sid) in enumerate(axes):
            extent = -1
            if sd is not None:
                if not 0 <= sd < t.dim():
                    raise tf.TensorFormatError(f"split_dim {sd} outside 0..{t.dim() - 1}")
                extent = int(t.shape[sd])
                global_shape[sd] *= size
            extra = eid if kind == "ep" and eid is not None else (
                sid if kind == "pp" and sid is not None else 0)
            layout.append(tf.LayoutAxis(tf.AXIS_KINDS[kind], i, rank, size,
                                        -1 if sd is None else sd, extra, extent))
        enc = tf.encode(t, tf.LAYOUT_SHARD, tuple(global_shape), layout)
        return self._tensor_writes([self._parallel_key(key, axes)], [enc], config, upsert)[0]

    @_code_call
    def put_tensor_with_parallelism(self, key, tensor, parallelism=None, config=None,
                                    writer_partition=None) -> int:
        """Without parallelism and writer_partition: pub_tensor. With a parallelism: `tensor`
        is this rank's shard, stored under the layout's key name. With a writer_partition
        (rank, size, split_dim): `tensor` is the full tensor and this writer stores its shard
        plus the manifest. Both together: INVALID_PARAMS."""
        return self._parallel_write(key, tensor, parallelism, config, writer_partition, False)

    @_code_call
    def upsert_tensor_with_parallelism(self, key, tensor, parallelism=None, config=None,
                                       writer_partition=None) -> int:
        return self._parallel_write(key, tensor, parallelism, config, writer_partition, True)

    def _batch_parallel(self, keys, tensors, parallelisms, config, writer_partitions, upsert):
        n = len(keys)
        ps = list(parallelisms) if parallelisms is not None else [None] * n
        ws = list(writer_partitions) if writer_partitions is not None else [None] * n
        if not (len(tensors) == n == len(ps) == len(ws)):
            return _batch_fail(n, INVALID_PARAMS, "lengths differ")
        out = []
        for k, t, p, w in zip(keys, tensors, ps, ws):
            try:
                out.append(self._parallel_write(k, t, p, config, w, upsert))
            except tf.TensorFormatError as e:
                out.append(_fail(INVALID_PARAMS, f"key={k}: {e}"))
        return out

    @_codes_call
    def batch_put_tensor_with_parallelism(self, keys, tensors_list, parallelisms=None,
                                          config=None, writer_partitions=None) -> List[int]:
        return self._batch_parallel(list(keys), list(tensors_list), parallelisms, config,
                                    writer_partitions, False)

    @_codes_call
    def batch_upsert_tensor_with_parallelism(self, keys, tensors_list, parallelisms=None,
                                             config=None, writer_partitions=None) -> List[int]:
        return self._batch_parallel(list(keys), list(tensors_list), parallelisms, config,
                                    writer_partitions, True)

    @_code_call
    def put_tensor_with_parallelism_from(self, key, buffer_ptr, size, parallelism=None,
                                         config=None, writer_partition=None) -> int:
        tf.require_torch()
        (t,) = self._tensors_from_buffers([buffer_ptr], [size])
        return self._parallel_write(key, t, parallelism, config, writer_partition, False)

    @_code_call
    def upsert_tensor_with_parallelism_from(self, key, buffer_ptr, size, parallelism=None,
                                            config=None, writer_partition=None) -> int:
        tf.require_torch()
        (t,) = self._tensors_from_buffers([buffer_ptr], [size])
        return self._parallel_write(key, t, parallelism, config, writer_partition, True)

    @_codes_call
    def batch_put_tensor_with_parallelism_from(self, keys, buffer_ptrs, sizes,
                                               parallelisms=None, config=None,
                                               writer_partitions=None) -> List[int]:
        tf.require_torch()
        if not (len(keys) == len(buffer_ptrs) == len(sizes)):
            return _batch_fail(len(keys), INVALID_PARAMS, "lengths differ")
        ts = self._tensors_from_buffers(buffer_ptrs, sizes)
        return self._batch_parallel(list(keys), ts, parallelisms, config, writer_partitions,
                                    False)

    @_codes_call
    def batch_upsert_tensor_with_parallelism_from(self, keys, buffer_ptrs, sizes,
                                                  parallelisms=None, config=None,
                                                  writer_partitions=None) -> List[int]:
        tf.require_torch()
        if not (len(keys) == len(buffer_ptrs) == len(sizes)):
            return _batch_fail(len(keys), INVALID_PARAMS, "lengths differ")
        ts = self._tensors_from_buffers(buffer_ptrs, sizes)
        return self._batch_parallel(list(keys), ts, parallelisms, config, writer_partitions,
                                    True)

    def _read_full(self, key, target):
        """The full tensor from its shards: writer partitions (manifest), the target's TP
        layout, or the legacy key_tp_* shards found through key_tp_0's header."""
        torch = tf.require_torch()
        m = self.get_buffer(f"{key}__writer_manifest")
        if m is not None and len(m) == self._WRITER_MANIFEST.size:
            f = self._WRITER_MANIFEST.unpack(bytes(m))
            sd, n = f[5], f[6]
            shards = self.batch_get_tensor([f"{key}__writer_{r}of{n}_sd{sd}" for r in range(n)])
            if any(s is None for s in shards):
                return _fail_none(OBJECT_NOT_FOUND, f"key={key}: a writer shard is missing")
            return torch.cat(shards, sd)
        first = self.get_buffer(f"{key}_tp_0")
        if first is None:
            whole = self.get_tensor(key)
            return whole
        h = tf.parse_header(first)
        tp = next((a for a in h.axes if a.kind == tf.AXIS_KINDS["tp"]), None)
        if tp is None or tp.split_dim < 0:
            return tf.decode(first, copy=False)
        rest = self.batch_get_tensor([f"{key}_tp_{r}" for r in range(1, tp.shard_count)])
        if any(s is None for s in rest):
            return _fail_none(OBJECT_NOT_FOUND, f"key={key}: a tp shard is missing")
        return torch.cat([tf.decode(first, copy=False)] + rest, tp.split_dim)

    def _parallel_read(self, key, target):
        mode = "as_stored" if target is None else target.mode
        if mode == "as_stored":
            return self.get_tensor(key)
        if mode == "full":
            return self._read_full(key, target)
        if target.parallelism is None:
            raise tf.TensorFormatError("ReadTarget mode 'shard' needs a parallelism")
        axes = self._axes(target.parallelism)
        direct = self.get_buffer(self._parallel_key(key, axes))
        if direct is not None:
            return tf.decode(direct, copy=False)
        # Reconstruct one TP shard from the full tensor, however it was stored.
        tp = [a for a in axes if a[0] == "tp"]
        if len(axes) != 1 or not tp or tp[0][3] is None:
            return _fail_none(OBJECT_NOT_FOUND, f"key={key}: no shard stored for this layout")
        full = self._read_full(key, None)
        if full is None:
            return None
        return tf.split_shards(full, tp[0][2], tp[0][3])[tp[0][1]].clone()

    @_none_call
    def get_tensor_with_parallelism(self, key, target=None):
        return self._parallel_read(key, target)

    @_nones_call
    def batch_get_tensor_with_parallelism(self, keys, targets=None):
        ts = list(targets) if targets is not None else [None] * len(keys)
        if len(ts) != len(keys):
            _fail(INVALID_PARAMS, "keys and targets lengths differ")
            return [None] * len(keys)
        out = []
        for k, t in zip(keys, ts):
            try:
                out.append(self._parallel_read(k, t))
            except tf.TensorFormatError as e:
                out.append(_fail_none(INVALID_PARAMS, f"key={k}: {e}"))
        return out

    def _copy_into(self, key, tensor, ptr, size):
        if tensor is None:
            return None
        if not ptr:
            return _fail_none(INVALID_PARAMS, "null buffer_ptr")
        hdr, payload, owner = tf.encode(tensor)
        need = len(hdr) + len(payload)
        if need > size or need > self._capacity(int(ptr)):
            return _fail_none(BUFFER_OVERFLOW, f"key={key}: {need} bytes do not fit the buffer "
                              f"({size} bytes)")
        ctypes.memmove(int(ptr), hdr, len(hdr))
        if len(payload):  # straight from the tensor's memory (owner: contiguous, on the CPU)
            ctypes.memmove(int(ptr) + len(hdr), owner.data_ptr(), len(payload))
        return self._into_one(key, ptr, size, need, "get_tensor_with_parallelism_into")

    @_none_call
    def get_tensor_with_parallelism_into(self, key, buffer_ptr, size, target=None):
        return self._copy_into(key, self._parallel_read(key, target), buffer_ptr, size)

    @_nones_call
    def batch_get_tensor_with_parallelism_into(self, keys, buffer_ptrs, sizes, targets=None):
        ts = list(targets) if targets is not None else [None] * len(keys)
        if not (len(keys) == len(buffer_ptrs) == len(sizes) == len(ts)):
            return _batch_fail(len(keys), INVALID_PARAMS, "lengths differ")
        return [self._copy_into(k, self._parallel_read(k, t), p, z)
                for k, p, z, t in zip(keys, buffer_ptrs, sizes, ts)]

    # ---- tensors: safetensors files ----

    def save_tensor_to_safetensor(self, key, file_name=None) -> int:
        try:
            from safetensors.torch import save_file  # noqa: PLC0415
        except ImportError as e:
            return _fail(INVALID_PARAMS, f"save_tensor_to_safetensor needs safetensors: {e}")
        t = self.get_tensor(key)
        if t is None:
            return _fail(-1100, f"key={key} holds no tensor")
        try:
            save_file({key: t}, file_name or key)
        except Exception as e:  # noqa: BLE001  (any failure to write is the call's -600)
            return _fail(INVALID_PARAMS, f"save_tensor_to_safetensor: {e}")
        return OK

    def load_tensor_from_safetensor(self, key=None, file_name=None):
        try:
            from safetensors.torch import load_file  # noqa: PLC0415
        except ImportError as e:
            return _fail_none(INVALID_PARAMS, f"load_tensor_from_safetensor needs safetensors: {e}")
        if file_name is None:
            return _fail_none(INVALID_PARAMS, "load_tensor_from_safetensor: file_name is required")
        try:
            tensors = load_file(file_name)
        except Exception as e:  # noqa: BLE001
            return _fail_none(-1101, f"load_tensor_from_safetensor: {e}")
        if not tensors:
            return _fail_none(-1101, f"{file_name} holds no tensor")
        name = key if key in tensors else next(iter(tensors))
        t = tensors[name]
        if self.put_tensor(key or name, t) != OK:
            return None
        return t


class KVPoolStore(MooncakeStoreMethods, _kvpool.KVPoolStore):
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
