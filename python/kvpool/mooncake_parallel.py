"""Mooncake Store's unified-parallelism tensor calls (tensor, pipeline, expert parallel shards
under one key) and safetensors files, over kvpool (mixed into kvpool.KVPoolStore). Conventions
as mooncake_api.py's."""

from __future__ import annotations

import ctypes
import struct
from typing import List

from kvpool import tensor_format as tf
from kvpool.mooncake_common import (
    _code_call,
    _none_call,
    _codes_call,
    _nones_call,
    OK,
    BUFFER_OVERFLOW,
    INVALID_PARAMS,
    OBJECT_NOT_FOUND,
    _fail,
    _fail_none,
    _batch_fail,
)


class MooncakeParallelTensorMethods:
    """Parallel and safetensors calls (mixed into kvpool.KVPoolStore; uses the tensor calls)."""

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
        return self._batch_parallel_from(keys, buffer_ptrs, sizes, parallelisms, config,
                                         writer_partitions, False)

    @_codes_call
    def batch_upsert_tensor_with_parallelism_from(self, keys, buffer_ptrs, sizes,
                                                  parallelisms=None, config=None,
                                                  writer_partitions=None) -> List[int]:
        return self._batch_parallel_from(keys, buffer_ptrs, sizes, parallelisms, config,
                                         writer_partitions, True)

    def _batch_parallel_from(self, keys, buffer_ptrs, sizes, parallelisms, config,
                             writer_partitions, upsert):
        """The batch put and upsert of tensors in registered memory: ptr/size lists checked."""
        tf.require_torch()
        if not (len(keys) == len(buffer_ptrs) == len(sizes)):
            return _batch_fail(len(keys), INVALID_PARAMS, "lengths differ")
        ts = self._tensors_from_buffers(buffer_ptrs, sizes)
        return self._batch_parallel(list(keys), ts, parallelisms, config, writer_partitions,
                                    upsert)

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
