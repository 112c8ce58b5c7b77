"""``mooncake.store`` on kvpool: every name Mooncake Store's module exports (see
docs/python.md, "Mooncake's method set"), backed by kvpool."""

import kvpool as _kvpool
from kvpool import (  # noqa: F401
    BufferHandle,
    ErrorCode,
    KVPoolError,
    MooncakeDistributedStore,
    MooncakeHostMemAllocator,
    ObjectDataType,
    SoftPinAction,
)
from kvpool.buffer_pool import (  # noqa: F401
    BufferLease,
    BufferLeaseView,
    BufferPool,
    RegisteredBufferLease,
    RegisteredBufferLeaseView,
    RegisteredBufferPool,
)
from kvpool.engram_store import EngramStore, EngramStoreConfig  # noqa: F401
from kvpool.mooncake_api import (  # noqa: F401
    _deserialize_tensor,
    _serialize_tensor,
    _tensor_metadata_size,
    bind_to_numa_node,
    get_alloc_func_addr,
    get_free_func_addr,
)
from kvpool.mooncake_types import (  # noqa: F401
    Descriptor,
    DiskDescriptor,
    MemoryDescriptor,
    MooncakeDistributedNoFRegister,
    ParallelAxis,
    QueryTaskResponse,
    ReadTarget,
    ReplicaDescriptor,
    ReplicaStatus,
    TaskStatus,
    TaskType,
    TensorParallelism,
)


# Mooncake's ReplicateConfig (typed fields: TypeError on a wrong type, AttributeError on an
# unknown field). The older releases' ``with_soft_pin`` is still accepted (True: soft pin with the
# default TTL, Mooncake's own compatibility rule).
ReplicateConfig = _kvpool.ReplicateConfig

# Mooncake exports these enums' members at module scope too (pybind11 export_values); where
# two enums share a name (PROCESSING, FAILED), TaskStatus's, exported last, wins.
for _enum_type in (ObjectDataType, ReplicaStatus, TaskType, TaskStatus):
    for _name, _member in _enum_type.__members__.items():
        globals()[_name] = _member
del _enum_type, _name, _member

__all__ = [
    "BufferHandle", "BufferLease", "BufferLeaseView", "BufferPool", "RegisteredBufferLease",
    "RegisteredBufferLeaseView", "RegisteredBufferPool", "Descriptor", "DiskDescriptor", "ErrorCode", "KVPoolError",
    "EngramStore", "EngramStoreConfig", "MemoryDescriptor", "MooncakeDistributedNoFRegister", "MooncakeDistributedStore",
    "MooncakeHostMemAllocator", "ObjectDataType", "ParallelAxis", "QueryTaskResponse",
    "ReadTarget", "ReplicaDescriptor", "ReplicaStatus", "ReplicateConfig", "SoftPinAction",
    "TaskStatus", "TaskType", "TensorParallelism", "bind_to_numa_node", "get_alloc_func_addr",
    "get_free_func_addr",
]
