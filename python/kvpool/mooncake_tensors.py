"""Mooncake Store's tensor calls over kvpool (mixed into kvpool.KVPoolStore): put, publish,
upsert and get of tensors in tensor_format.py's 304-byte header (the same bytes as Mooncake's),
zero-copy reads into and writes from registered memory, CUDA destinations (not available) and
the legacy tensor-parallel calls. Conventions as mooncake_api.py's; torch is needed, else
UNAVAILABLE_IN_CURRENT_MODE (-1011) or None."""

from __future__ import annotations

import ctypes
from typing import List, Optional

from kvpool import tensor_format as tf
from kvpool.mooncake_common import (
    _code_call,
    _none_call,
    _codes_call,
    _nones_call,
    OK,
    INVALID_PARAMS,
    UNAVAILABLE_IN_CURRENT_MODE,
    _NO_CUDA,
    _fail,
    _fail_none,
    _at,
    _batch_fail,
)


class MooncakeTensorMethods:
    """Tensor calls (mixed into kvpool.KVPoolStore; uses MooncakeStoreMethods' bookkeeping)."""

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
