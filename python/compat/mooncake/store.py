"""``mooncake.store`` on kvpool: the names SGLang and vLLM import from Mooncake Store."""

from kvpool import (  # noqa: F401
    BufferHandle,
    ErrorCode,
    KVPoolError,
    MooncakeDistributedStore,
    MooncakeHostMemAllocator,
    ReplicateConfig,
    SoftPinAction,
)

__all__ = [
    "BufferHandle",
    "ErrorCode",
    "KVPoolError",
    "MooncakeDistributedStore",
    "MooncakeHostMemAllocator",
    "ReplicateConfig",
    "SoftPinAction",
]
