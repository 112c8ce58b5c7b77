"""A host KV pool built the way SGLang builds one (HostKVCache: MHATokenToKVPoolHost and
MLATokenToKVPoolHost), so the backend is tested end to end without SGLang.

Same buffer shapes per layout, same ``allocator`` attribute (the pool's memory comes from
``allocator.allocate(dims, dtype, device)``), same ``get_page_buffer_meta`` (MHA: interleaved
K/V pointers per page; MLA: one pointer per page, or one per layer for layer_first) and
``get_hybrid_pool_buffer`` (MHA: the K and V halves of the one kv_buffer allocation).
Works with torch tensors or numpy arrays.
"""

from __future__ import annotations

import ctypes
import os

import numpy as np

try:
    import torch
except ImportError:  # the backend must work with numpy alone
    torch = None


def _ptr(t) -> int:
    return int(t.data_ptr()) if hasattr(t, "data_ptr") else int(t.__array_interface__["data"][0])


def _itemsize(dtype) -> int:
    if torch is not None and isinstance(dtype, torch.dtype):
        return torch.empty((), dtype=dtype).element_size()
    return np.dtype(dtype).itemsize


class PlainHostTensorAllocator:
    """Stands in for SGLang's default HostTensorAllocator: ordinary process memory."""

    is_mooncake_compatible = False

    def allocate(self, dims, dtype, device="cpu"):
        if torch is not None and isinstance(dtype, torch.dtype):
            return torch.zeros(dims, dtype=dtype)
        return np.zeros(dims, dtype=dtype)


class _PoolBase:
    page_size: int
    layout: str

    def _index_list(self, indices):
        return indices.tolist() if hasattr(indices, "tolist") else list(indices)

    # Test helpers: page contents by address.
    def fill_pages(self, host_indices, seed: int) -> None:
        ptrs, sizes = self.get_page_buffer_meta(host_indices)
        rng = np.random.default_rng(seed)
        for p, s in zip(ptrs, sizes):
            data = rng.integers(0, 256, size=s, dtype=np.uint8).tobytes()
            ctypes.memmove(p, data, s)

    def zero_pages(self, host_indices) -> None:
        ptrs, sizes = self.get_page_buffer_meta(host_indices)
        for p, s in zip(ptrs, sizes):
            ctypes.memset(p, 0, s)

    def page_bytes(self, host_indices) -> list:
        """The bytes of each page (all of its buffers joined), one entry per page."""
        ptrs, sizes = self.get_page_buffer_meta(host_indices)
        pages = len(self._index_list(host_indices)) // self.page_size
        per = len(ptrs) // pages
        return [b"".join(ctypes.string_at(ptrs[i * per + j], sizes[i * per + j])
                         for j in range(per)) for i in range(pages)]


class FakeMHAPool(_PoolBase):
    def __init__(self, allocator, size=256, page_size=16, layer_num=4, head_num=2, head_dim=16,
                 dtype=None, layout="page_first"):
        self.allocator = allocator
        self.size, self.page_size, self.layout = size, page_size, layout
        self.layer_num, self.head_num, self.head_dim = layer_num, head_num, head_dim
        self.dtype = dtype if dtype is not None else (torch.bfloat16 if torch else np.float16)
        self.itemsize = _itemsize(self.dtype)
        if layout in ("page_first",):
            dims = (2, size, layer_num, head_num, head_dim)
        elif layout == "page_first_direct":
            dims = (2, size // page_size, layer_num, page_size, head_num, head_dim)
        elif layout == "layer_first":
            dims = (2, layer_num, size, head_num, head_dim)
        else:
            raise ValueError(layout)
        self.kv_buffer = allocator.allocate(dims, self.dtype, "cpu")
        self.k_buffer = self.kv_buffer[0]
        self.v_buffer = self.kv_buffer[1]

    def get_hybrid_pool_buffer(self):
        return [self.k_buffer, self.v_buffer]

    def get_ksize_per_token(self):
        return self.layer_num * self.head_num * self.head_dim * self.itemsize

    def get_page_buffer_meta(self, indices):
        indices = self._index_list(indices)
        assert len(indices) % self.page_size == 0
        base = _ptr(self.kv_buffer)
        token = self.head_num * self.head_dim * self.itemsize
        v_offset = self.layer_num * self.size * token
        ptrs = []
        if self.layout == "layer_first":
            for i in range(0, len(indices), self.page_size):
                for layer in range(self.layer_num):
                    k = base + indices[i] * token + layer * self.size * token
                    ptrs += [k, k + v_offset]
            size = self.page_size * token
        else:
            for i in range(0, len(indices), self.page_size):
                k = base + indices[i] * self.layer_num * token
                ptrs += [k, k + v_offset]
            size = self.layer_num * self.page_size * token
        return ptrs, [size] * len(ptrs)


class FakeMLAPool(_PoolBase):
    def __init__(self, allocator, size=256, page_size=16, layer_num=4, kv_lora_rank=32,
                 qk_rope_head_dim=16, dtype=None, layout="page_first"):
        self.allocator = allocator
        self.size, self.page_size, self.layout = size, page_size, layout
        self.layer_num = layer_num
        self.kv_cache_dim = kv_lora_rank + qk_rope_head_dim
        self.dtype = dtype if dtype is not None else (torch.bfloat16 if torch else np.float16)
        self.itemsize = _itemsize(self.dtype)
        if layout == "page_first":
            dims = (size, layer_num, 1, self.kv_cache_dim)
        elif layout == "page_first_direct":
            dims = (size // page_size, layer_num, page_size, 1, self.kv_cache_dim)
        elif layout == "layer_first":
            dims = (layer_num, size, 1, self.kv_cache_dim)
        else:
            raise ValueError(layout)
        self.kv_buffer = allocator.allocate(dims, self.dtype, "cpu")

    def get_hybrid_pool_buffer(self):
        return [self.kv_buffer]

    def get_ksize_per_token(self):
        return self.layer_num * self.kv_cache_dim * self.itemsize

    def get_page_buffer_meta(self, indices):
        indices = self._index_list(indices)
        assert len(indices) % self.page_size == 0
        base = _ptr(self.kv_buffer)
        token = self.kv_cache_dim * self.itemsize
        ptrs = []
        if self.layout == "layer_first":
            for i in range(0, len(indices), self.page_size):
                for layer in range(self.layer_num):
                    ptrs.append(base + indices[i] * token + layer * self.size * token)
            size = self.page_size * token
        else:
            for i in range(0, len(indices), self.page_size):
                ptrs.append(base + indices[i] * self.layer_num * token)
            size = self.layer_num * self.page_size * token
        return ptrs, [size] * len(ptrs)


def page_indices(first_page: int, pages: int, page_size: int):
    """host_indices for `pages` consecutive pages starting at `first_page` (a torch tensor
    when torch is there, like SGLang's; a numpy array otherwise)."""
    values = list(range(first_page * page_size, (first_page + pages) * page_size))
    if torch is not None and not os.environ.get("KVPOOL_TEST_NUMPY_INDICES"):
        return torch.tensor(values, dtype=torch.int64)
    return np.array(values, dtype=np.int64)


# ---- hybrid models' side pools (SGLang's v2 interface) ----------------------------------------

def _uint8():
    return torch.uint8 if torch is not None else np.uint8


def _state_dtype():
    return torch.bfloat16 if torch is not None else np.float16


def _empty(dims, dtype):
    """A zero-element tensor of plain memory (SGLang's recipe for a conv-only Mamba model's
    temporal state, which an mmap-backed allocator cannot map)."""
    if torch is not None and isinstance(dtype, torch.dtype):
        return torch.empty(dims, dtype=dtype)
    return np.empty(dims, dtype=dtype)


def _numel(dims) -> int:
    return int(np.prod(dims)) if dims else 1


class FakeMambaPool(_PoolBase):
    """SGLang's MambaPoolHost (page_first): one slot per page (page_size 1); per slot a
    temporal state (size, layers, 1, *temporal_shape) and conv states (size, layers, 1,
    *conv_shape); get_page_buffer_meta gives temporal first (left out when it has no
    elements), then conv_0..conv_n. report_empty_temporal: also report the zero-size temporal
    buffer (what an older pool might do)."""

    def __init__(self, allocator, size=32, layers=2, temporal_shape=(4, 8),
                 conv_shapes=((3, 8), (3, 4)), report_empty_temporal=False):
        self.allocator = allocator
        self.size, self.page_size, self.layout = size, 1, "page_first"
        self.num_mamba_layers = layers
        self.temporal_dtype = self.conv_dtype = _state_dtype()
        self.itemsize = _itemsize(self.temporal_dtype)
        self.temporal_state_elem_size = _numel(temporal_shape)
        self.conv_state_elem_sizes = [_numel(s) for s in conv_shapes]
        self.report_empty_temporal = report_empty_temporal
        dims = (size, layers, 1) + tuple(temporal_shape)
        if self.temporal_state_elem_size == 0:
            self.temporal_buffer = _empty(dims, self.temporal_dtype)
        else:
            self.temporal_buffer = allocator.allocate(dims, self.temporal_dtype, "cpu")
        self.conv_buffer = [allocator.allocate((size, layers, 1) + tuple(s), self.conv_dtype,
                                               "cpu") for s in conv_shapes]
        self.kv_buffer = [b for b in (self.temporal_buffer, *self.conv_buffer)
                          if _numel(b.shape) > 0]

    def get_hybrid_pool_buffer(self):
        return [self.temporal_buffer, *self.conv_buffer]

    def get_page_buffer_meta(self, indices):
        indices = self._index_list(indices)
        layers, item = self.num_mamba_layers, self.itemsize
        t_size = layers * item * self.temporal_state_elem_size
        c_sizes = [layers * item * e for e in self.conv_state_elem_sizes]
        ptrs, sizes = [], []
        for i in indices:
            if t_size > 0 or self.report_empty_temporal:
                ptrs.append(_ptr(self.temporal_buffer) + i * t_size)
                sizes.append(t_size)
            for buf, c in zip(self.conv_buffer, c_sizes):
                ptrs.append(_ptr(buf) + i * c)
                sizes.append(c)
        return ptrs, sizes


class FakePackedPool(_PoolBase):
    """A page-packed side pool: SGLang's DSA indexer pool (DSAIndexerPoolHost) and DeepSeek
    V4's paged side pools (DeepSeekV4PagedHostPool), one object per page. page_first:
    (pages, layers, 1, page_stride) bytes, get_page_buffer_meta gives base + (index //
    page_size) * page_bytes; layer_first (DeepSeek V4): one (pages, page_stride) buffer per
    layer, get_page_buffer_meta gives each layer's row of the page (the object joins them)."""

    def __init__(self, allocator, size=256, page_size=16, layer_num=3, bytes_per_token=8,
                 layout="page_first"):
        self.allocator = allocator
        self.size, self.page_size, self.layout = size, page_size, layout
        self.layer_num = layer_num
        self.page_stride = page_size * bytes_per_token
        pages = size // page_size
        if layout == "layer_first":
            self.kv_buffer = [allocator.allocate((pages, self.page_stride), _uint8(), "cpu")
                              for _ in range(layer_num)]
        else:
            self.kv_buffer = allocator.allocate((pages, layer_num, 1, self.page_stride),
                                                _uint8(), "cpu")

    def get_hybrid_pool_buffer(self):
        return self.kv_buffer if isinstance(self.kv_buffer, list) else [self.kv_buffer]

    def get_page_buffer_meta(self, indices):
        indices = self._index_list(indices)
        starts = [indices[i] // self.page_size for i in range(0, len(indices), self.page_size)]
        if self.layout == "layer_first":
            ptrs = [_ptr(layer) + page * self.page_stride for page in starts
                    for layer in self.kv_buffer]
            return ptrs, [self.page_stride] * len(ptrs)
        page_bytes = self.layer_num * self.page_stride
        ptrs = [_ptr(self.kv_buffer) + page * page_bytes for page in starts]
        return ptrs, [page_bytes] * len(ptrs)


class FakeLogicalAnchor(_PoolBase):
    """DeepSeek V4's KV anchor: it allocates indices only (kv_buffer None); the side pools
    carry the data."""

    def __init__(self, allocator, size=256, page_size=16):
        self.allocator = allocator
        self.size, self.page_size, self.layout = size, page_size, "page_first"
        self.kv_buffer = None

    def get_hybrid_pool_buffer(self):
        return []


class FakePoolEntry:
    def __init__(self, name, host_pool):
        self.name, self.host_pool = name, host_pool


class FakeHostPoolGroup:
    """SGLang's HostPoolGroup: the anchor's attributes plus ``entries`` (anchor and side
    pools), the object SGLang gives a storage backend for a hybrid model."""

    def __init__(self, anchor, side_pools):
        self.anchor = anchor
        self.entries = [FakePoolEntry("kv", anchor)] + [FakePoolEntry(n, p)
                                                        for n, p in side_pools.items()]
        self.page_size, self.layout, self.size = anchor.page_size, anchor.layout, anchor.size
        self.allocator = anchor.allocator

    @property
    def kv_buffer(self):
        return self.anchor.kv_buffer

    def get_hybrid_pool_buffer(self):
        return self.anchor.get_hybrid_pool_buffer()

    def get_page_buffer_meta(self, indices):
        return self.anchor.get_page_buffer_meta(indices)

    def get_ksize_per_token(self):
        return self.anchor.get_ksize_per_token()
