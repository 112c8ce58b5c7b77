"""The stored form of a tensor, byte-compatible with Mooncake Store's tensor calls.

An object is a 304-byte header followed by the tensor's contiguous bytes. The header (all fields
little-endian, no padding):

    offset size  field
      0     4    magic 0x4D4F4F4E ("MOON" read as a little-endian u32)
      4     2    version (1)
      6     2    header size (304)
      8     4    dtype code (DTYPE_CODES below)
     12     4    ndim (0..8)
     16     4    layout kind: FULL 0, SHARD 1
     20     4    reserved flags (0)
     24     8    data offset (304)
     32     8    data bytes
     40    64    global shape: 8 x int64, unused dims -1
    104    64    local shape: 8 x int64, unused dims -1 (the stored bytes' shape)
    168     4    layout axis count (0..4)
    172     4    reserved (0)
    176   128    4 layout axes of 32 bytes: kind (DP 0, TP 1, EP 2, PP 3), axis index,
                 shard rank, shard count, split dim (-1: none), reserved0 (an EP axis's expert
                 id or a PP axis's stage id), then int64 reserved1 (the shard's extent along
                 split dim, -1: none)

torch is imported lazily (the rest of kvpool works without it): require_torch() raises
TorchUnavailable, which the store's tensor calls turn into UNAVAILABLE_IN_CURRENT_MODE.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

MAGIC = 0x4D4F4F4E
VERSION = 1
HEADER_SIZE = 304
MAX_DIMS = 8
MAX_AXES = 4
LAYOUT_FULL = 0
LAYOUT_SHARD = 1
AXIS_KINDS = {"dp": 0, "tp": 1, "ep": 2, "pp": 3}

_FIXED = struct.Struct("<IHHiiIIQQ8q8qII")  # through the reserved word after the axis count
_AXIS = struct.Struct("<iiiiiiq")
assert _FIXED.size + MAX_AXES * _AXIS.size == HEADER_SIZE

# dtype code -> (torch attribute name, item size)
DTYPE_CODES = {
    0: ("float32", 4), 1: ("float64", 8), 2: ("int8", 1), 3: ("uint8", 1), 4: ("int16", 2),
    5: ("uint16", 2), 6: ("int32", 4), 7: ("uint32", 4), 8: ("int64", 8), 9: ("uint64", 8),
    10: ("bool", 1), 11: ("float16", 2), 12: ("bfloat16", 2), 13: ("float8_e4m3fn", 1),
    14: ("float8_e5m2", 1),
}


class TorchUnavailable(RuntimeError):
    """torch cannot be imported in this interpreter."""


class TensorFormatError(ValueError):
    """Bytes that are not a valid tensor object, or a tensor kvpool cannot store."""


_torch = None


def require_torch():
    global _torch
    if _torch is None:
        try:
            import torch  # noqa: PLC0415  (lazy: kvpool imports without torch)
        except ImportError as e:
            raise TorchUnavailable(
                f"tensor calls need torch (Debian: python3-torch), which cannot be imported: {e}"
            ) from e
        _torch = torch
    return _torch


@dataclass
class LayoutAxis:
    kind: int
    axis_index: int
    shard_rank: int
    shard_count: int
    split_dim: int = -1
    reserved0: int = 0
    reserved1: int = -1


@dataclass
class TensorHeader:
    dtype: int
    global_shape: Tuple[int, ...]
    local_shape: Tuple[int, ...]
    layout_kind: int = LAYOUT_FULL
    axes: List[LayoutAxis] = field(default_factory=list)
    data_offset: int = HEADER_SIZE
    data_bytes: int = 0

    @property
    def ndim(self) -> int:
        return len(self.local_shape)

    @property
    def itemsize(self) -> int:
        return DTYPE_CODES[self.dtype][1]

    def pack(self) -> bytes:
        def dims(shape):
            return list(shape) + [-1] * (MAX_DIMS - len(shape))

        out = bytearray(HEADER_SIZE)
        _FIXED.pack_into(out, 0, MAGIC, VERSION, HEADER_SIZE, self.dtype, self.ndim,
                         self.layout_kind, 0, self.data_offset, self.data_bytes,
                         *dims(self.global_shape), *dims(self.local_shape), len(self.axes), 0)
        for i, a in enumerate(self.axes):
            _AXIS.pack_into(out, _FIXED.size + i * _AXIS.size, a.kind, a.axis_index,
                            a.shard_rank, a.shard_count, a.split_dim, a.reserved0, a.reserved1)
        return bytes(out)


def _prod(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def parse_header(buf, total_size: Optional[int] = None) -> TensorHeader:
    """The header at the start of `buf` (any buffer of at least 304 bytes), validated against
    the object's total size (default len(buf)). Raises TensorFormatError naming what is wrong."""
    mv = memoryview(buf).cast("B")
    total = len(mv) if total_size is None else total_size
    if len(mv) < HEADER_SIZE:
        raise TensorFormatError(
            f"invalid tensor metadata: {len(mv)} bytes, shorter than the {HEADER_SIZE}-byte header")
    f = _FIXED.unpack_from(mv, 0)
    magic, version, hsize, dtype, ndim, kind, _flags, doff, dbytes = f[:9]
    gshape, lshape = f[9:9 + MAX_DIMS], f[9 + MAX_DIMS:9 + 2 * MAX_DIMS]
    naxes = f[9 + 2 * MAX_DIMS]
    if magic != MAGIC:
        raise TensorFormatError(f"invalid tensor metadata: magic {magic:#x}, not {MAGIC:#x} "
                                "(the object was not stored by a tensor call)")
    if version != VERSION or hsize != HEADER_SIZE:
        raise TensorFormatError(f"invalid tensor metadata: version {version} / header size "
                                f"{hsize}, expected {VERSION} / {HEADER_SIZE}")
    if dtype not in DTYPE_CODES:
        raise TensorFormatError(f"invalid tensor metadata: unknown dtype code {dtype}")
    if not 0 <= ndim <= MAX_DIMS:
        raise TensorFormatError(f"invalid tensor metadata: ndim {ndim} outside 0..{MAX_DIMS}")
    if kind not in (LAYOUT_FULL, LAYOUT_SHARD) or not 0 <= naxes <= MAX_AXES:
        raise TensorFormatError(f"invalid tensor metadata: layout kind {kind}, {naxes} axes")
    local = tuple(lshape[:ndim])
    glob = tuple(gshape[:ndim])
    if any(d < 0 for d in local) or any(d < 0 for d in glob):
        raise TensorFormatError(f"invalid tensor metadata: negative dimension in {local}/{glob}")
    itemsize = DTYPE_CODES[dtype][1]
    if dbytes != _prod(local) * itemsize:
        raise TensorFormatError(f"invalid tensor metadata: {dbytes} data bytes for shape {local} "
                                f"of {itemsize}-byte items")
    if doff < HEADER_SIZE or doff + dbytes > total:
        raise TensorFormatError(f"invalid tensor metadata: data [{doff}, {doff + dbytes}) does "
                                f"not fit the object's {total} bytes")
    axes = []
    for i in range(naxes):
        axes.append(LayoutAxis(*_AXIS.unpack_from(mv, _FIXED.size + i * _AXIS.size)))
    return TensorHeader(dtype, glob, local, kind, axes, doff, dbytes)


def dtype_code(tensor) -> int:
    torch = require_torch()
    for code, (name, _) in DTYPE_CODES.items():
        if getattr(torch, name, None) == tensor.dtype:
            return code
    raise TensorFormatError(f"unsupported tensor dtype {tensor.dtype} (supported: "
                            f"{', '.join(n for n, _ in DTYPE_CODES.values())})")


def torch_dtype(code: int):
    name = DTYPE_CODES[code][0]
    dtype = getattr(require_torch(), name, None)
    if dtype is None:
        raise TensorFormatError(f"dtype {name} is not available in this torch version")
    return dtype


def as_tensor(obj, what: str = "tensor"):
    torch = require_torch()
    if not isinstance(obj, torch.Tensor):
        raise TensorFormatError(f"{what} must be a torch.Tensor, not {type(obj).__name__}")
    return obj


def cpu_contiguous(tensor):
    """The tensor's bytes in row-major order on the CPU (a copy only when needed)."""
    t = tensor.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    return t.contiguous()


def payload_view(t) -> memoryview:
    """A zero-copy byte view of a contiguous CPU tensor."""
    torch = require_torch()
    if t.numel() == 0:
        return memoryview(b"")
    flat = t.reshape(-1)
    if flat.dtype != torch.uint8:
        flat = flat.view(torch.uint8)
    return memoryview(flat.numpy()).cast("B")


def encode(tensor, layout_kind: int = LAYOUT_FULL, global_shape=None,
           axes: Sequence[LayoutAxis] = ()) -> Tuple[bytes, memoryview, object]:
    """(header, payload view, owner): owner keeps the payload's memory alive."""
    t = cpu_contiguous(as_tensor(tensor))
    code = dtype_code(t)
    if t.dim() > MAX_DIMS:
        raise TensorFormatError(f"tensor has {t.dim()} dimensions, at most {MAX_DIMS} are stored")
    local = tuple(int(d) for d in t.shape)
    header = TensorHeader(code, tuple(global_shape) if global_shape is not None else local, local,
                          layout_kind, list(axes), HEADER_SIZE,
                          t.numel() * DTYPE_CODES[code][1])
    return header.pack(), payload_view(t), t


def decode(buf, copy: bool = True):
    """A CPU tensor from a whole object (header + payload). copy=False aliases `buf`, which must
    then be writable and outlive the tensor."""
    torch = require_torch()
    h = parse_header(buf)
    dtype = torch_dtype(h.dtype)
    if h.data_bytes == 0:
        return torch.empty(h.local_shape, dtype=dtype)
    mv = memoryview(buf).cast("B")[h.data_offset:h.data_offset + h.data_bytes]
    src = bytearray(mv) if copy else mv
    flat = torch.frombuffer(src, dtype=torch.uint8)
    return flat.view(dtype).reshape(h.local_shape)


def split_shards(tensor, count: int, split_dim: int):
    """`count` equal contiguous shards along split_dim; TensorFormatError unless uniform."""
    t = as_tensor(tensor)
    if not 0 <= split_dim < t.dim():
        raise TensorFormatError(f"split_dim {split_dim} outside 0..{t.dim() - 1}")
    if count < 1 or t.shape[split_dim] % count != 0:
        raise TensorFormatError(f"dimension {split_dim} of size {t.shape[split_dim]} does not "
                                f"split evenly into {count} shards")
    return [c.contiguous() for c in t.chunk(count, split_dim)] if count > 1 else [t]


def tp_axis(rank: int, count: int, split_dim: int, local_extent: int) -> LayoutAxis:
    return LayoutAxis(AXIS_KINDS["tp"], 0, rank, count, split_dim, 0, local_extent)
