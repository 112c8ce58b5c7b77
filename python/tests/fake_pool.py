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
