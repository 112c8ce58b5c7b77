"""Host tensors in kvpool's shared memory: the allocator for SGLang's host KV pool.

In standalone mode the local ``kvpool node`` moves page bytes straight into and out of the
engine's host KV pool, which it can only do for memory from :class:`kvpool.HostMemAllocator`
(memfd shared memory it maps). :class:`KVPoolHostTensorAllocator` gives SGLang's host pool
exactly that: ``allocate(dims, dtype)`` returns a torch tensor (or a numpy array when torch is
not installed or ``dtype`` is a numpy dtype) over one such allocation. The memory is freed when
the tensor and every view of it are gone.

How SGLang's host pool gets this allocator: see docs/sglang.md (stock ``mooncake`` backend with
kvpool's compatibility package, or ``python -m kvpool.sglang.launch_server`` for the dynamic
backend).
"""

from __future__ import annotations

import math
from typing import Any, List, Sequence

from kvpool._kvpool import HAS_STANDALONE, HostMemAllocator

try:  # torch is optional: numpy arrays work too.
    import torch
except ImportError:  # pragma: no cover - exercised on machines without torch
    torch = None

try:  # Subclass SGLang's allocator base when SGLang is installed (isinstance checks pass).
    from sglang.srt.mem_cache.memory_pool_host import HostTensorAllocator as _SGLangAllocator
except ImportError:
    try:
        from sglang.srt.mem_cache.pool_host import HostTensorAllocator as _SGLangAllocator
    except ImportError:
        _SGLangAllocator = object


def _is_torch_dtype(dtype: Any) -> bool:
    return torch is not None and isinstance(dtype, torch.dtype)


def _itemsize(dtype: Any) -> int:
    if _is_torch_dtype(dtype):
        return torch.empty((), dtype=dtype).element_size()
    import numpy as np

    return np.dtype(dtype).itemsize


class KVPoolHostTensorAllocator(_SGLangAllocator):
    """Allocates host tensors in kvpool's shared memory (see the module docstring)."""

    def __init__(self, huge_pages: bool = False, prefault: bool = False):
        if _SGLangAllocator is not object:
            super().__init__()
        if not HAS_STANDALONE:
            raise RuntimeError("KVPoolHostTensorAllocator: this kvpool build has no standalone "
                               "mode (kvpool.HAS_STANDALONE is False)")
        self.dtype = None
        self.dims = None
        self.ptr = None  # the last allocation's address (MooncakeHostTensorAllocator's field)
        self._allocator = HostMemAllocator(huge_pages, prefault)
        self._buffers: List[Any] = []

    @property
    def is_mooncake_compatible(self) -> bool:
        """Tensors from here can be registered with a standalone store (SGLang asks this)."""
        return True

    def allocate(self, dims: Sequence[int], dtype: Any, device: str = "cpu") -> Any:
        """A tensor of shape ``dims`` and ``dtype`` in fresh, zeroed shared memory."""
        if device != "cpu":
            raise ValueError(f"KVPoolHostTensorAllocator allocates host memory only; "
                             f"got device={device!r}")
        self.dims = tuple(dims)
        self.dtype = dtype
        nbytes = math.prod(self.dims) * _itemsize(dtype)
        if nbytes == 0:  # e.g. a conv-only model's empty state: nothing to share
            return self._empty(dtype)
        buf = self._allocator.alloc_buffer(nbytes)
        self.ptr = buf.ptr
        if _is_torch_dtype(dtype):
            flat = torch.frombuffer(buf, dtype=torch.uint8, count=nbytes)
            return flat.view(dtype).view(self.dims)
        import numpy as np

        return np.frombuffer(buf, dtype=np.uint8, count=nbytes).view(dtype).reshape(self.dims)

    def _empty(self, dtype: Any) -> Any:
        if _is_torch_dtype(dtype):
            return torch.empty(self.dims, dtype=dtype)
        import numpy as np

        return np.empty(self.dims, dtype=dtype)


def allocate_host_tensor(dims: Sequence[int], dtype: Any) -> Any:
    """One-off helper: a tensor/array in kvpool's shared memory."""
    return KVPoolHostTensorAllocator().allocate(dims, dtype)
