"""What the backend needs to know about SGLang's host KV pool (HostKVCache), duck-typed so that
torch tensors and numpy arrays both work and SGLang itself is optional.

The pool object provides: ``page_size``, ``layout`` ("layer_first", "page_first",
"page_first_direct", "page_head"), ``kv_buffer``, optionally ``allocator``,
``get_hybrid_pool_buffer()`` (the tensors to register) and ``get_page_buffer_meta(indices)``
-> ``(ptrs, sizes)``: MHA ``[k0, v0, k1, v1, ...]``, MLA one pointer per page, or L pointers
per page for ``layer_first`` MLA.
"""

from __future__ import annotations

import ctypes
from typing import Any, List, Sequence, Tuple

# Layouts where one page of all layers is contiguous: one buffer per object.
PAGE_FIRST_LAYOUTS = ("page_first", "page_first_direct", "page_head")


def tensor_range(t: Any) -> Tuple[int, int]:
    """(address, byte length) of a torch tensor or numpy array (contiguous)."""
    if hasattr(t, "data_ptr"):  # torch
        return int(t.data_ptr()), int(t.numel() * t.element_size())
    iface = getattr(t, "__array_interface__", None)
    if iface is not None:
        return int(iface["data"][0]), int(t.nbytes)
    raise TypeError(f"cannot take the address of a {type(t).__name__}; expected a torch tensor "
                    f"or a numpy array")


def pool_buffers(pool: Any) -> List[Any]:
    """The host tensors to register: get_hybrid_pool_buffer() or the kv_buffer."""
    getter = getattr(pool, "get_hybrid_pool_buffer", None)
    buffers = list(getter()) if getter is not None else [getattr(pool, "kv_buffer", None)]
    return [b for b in buffers if b is not None and tensor_range(b)[1] > 0]


def merged_ranges(tensors: Sequence[Any]) -> List[Tuple[int, int]]:
    """The byte ranges the tensors cover, each byte once: overlapping ranges are merged.
    Ranges that merely touch stay apart: they may be two allocations that the kernel happened
    to map side by side, and a standalone node accepts a range inside one allocation only."""
    spans = sorted(tensor_range(t) for t in tensors)
    out: List[List[int]] = []
    for start, size in spans:
        end = start + size
        if out and start < out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(s, e - s) for s, e in out]


def required_bytes(pool: Any) -> int:
    """Bytes of host memory the pool spans (each byte counted once). For SGLang's
    HostPoolGroup (a hybrid model: ``entries`` of anchor and side pools) every entry's."""
    pools = [pool] + [getattr(e, "host_pool", None) for e in getattr(pool, "entries", None) or []]
    tensors = []
    for p in pools:
        if p is None:
            continue
        tensors += pool_buffers(p)
        kv = getattr(p, "kv_buffer", None)
        if kv is not None and not isinstance(kv, (list, tuple)) and tensor_range(kv)[1] > 0:
            tensors.append(kv)
    return sum(size for _, size in merged_ranges(tensors))


def as_index_list(indices: Any) -> List[int]:
    if hasattr(indices, "tolist"):
        return list(indices.tolist())
    return [int(i) for i in indices]


def byte_view(address: int, size: int) -> Any:
    """A writable buffer over [address, address+size) (copying fallback only: the addresses
    come from the pool's own get_page_buffer_meta)."""
    return (ctypes.c_ubyte * size).from_address(address)


def describe_allocator(pool: Any) -> str:
    allocator = getattr(pool, "allocator", None)
    if allocator is None:
        return "no allocator attribute (memory of unknown origin)"
    cls = type(allocator)
    return f"{cls.__module__}.{cls.__qualname__}"


def allocator_is_kvpool(pool: Any) -> Tuple[bool, bool]:
    """(known, ok): whether the pool's allocator is recognised, and if so whether it gives
    kvpool shared memory. Unknown allocators are judged by registration instead."""
    from kvpool.allocator import KVPoolHostTensorAllocator

    allocator = getattr(pool, "allocator", None)
    if allocator is None:
        return False, False
    if isinstance(allocator, KVPoolHostTensorAllocator):
        return True, True
    # SGLang's own allocator for its stock Mooncake backend: backed by kvpool when the
    # compatibility package provides mooncake.store (checked by registration).
    if type(allocator).__name__ == "MooncakeHostTensorAllocator":
        return False, False
    if getattr(allocator, "is_mooncake_compatible", False) is True:
        return False, False
    return True, False
