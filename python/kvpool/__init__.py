"""kvpool: a distributed KV-cache store for LLM inference.

The store class offers Mooncake Store's Python API (``KVPoolStore``, alias
``MooncakeDistributedStore``); ``kvpool.sglang`` is the SGLang HiCache backend.
"""

import enum as _enum

from kvpool._kvpool import (  # noqa: F401
    HAS_STANDALONE,
    BufferHandle,
    HostMemAllocator,
    KVPoolError,
    MooncakeHostMemAllocator,
    ObjectDataType,
    ReplicateConfig,
    SoftPinAction,
    __version__,
    error_name,
    error_table,
    last_error,
    parse_size,
)

#: Every error number kvpool returns, by name (numbers match Mooncake Store's).
ErrorCode = _enum.IntEnum("ErrorCode", error_table())

# The store class: the C++ calls plus the Mooncake methods written in Python (tensors, ranged
# and session transfers, replica descriptors; kvpool/mooncake_api.py).
from kvpool.mooncake_api import KVPoolStore  # noqa: E402

MooncakeDistributedStore = KVPoolStore

__all__ = [
    "ErrorCode",
    "HAS_STANDALONE",
    "BufferHandle",
    "HostMemAllocator",
    "KVPoolError",
    "KVPoolStore",
    "MooncakeDistributedStore",
    "MooncakeHostMemAllocator",
    "ObjectDataType",
    "ReplicateConfig",
    "SoftPinAction",
    "error_name",
    "last_error",
    "parse_size",
    "__version__",
]

if HAS_STANDALONE:
    from kvpool._kvpool import HostBuffer

    __all__.append("HostBuffer")
