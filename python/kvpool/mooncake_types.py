"""Mooncake Store's auxiliary Python types that kvpool implements in Python: replica
descriptors, task types, tensor-parallel layouts and read targets. Instances take only their
declared attributes (__slots__): assigning an unknown one raises AttributeError as Mooncake's
pybind classes do."""

from __future__ import annotations

import enum
from typing import List, Optional


class ReplicaStatus(enum.IntEnum):
    UNDEFINED = 0
    INITIALIZED = 1
    PROCESSING = 2
    COMPLETE = 3
    REMOVED = 4
    FAILED = 5


class TaskType(enum.IntEnum):
    REPLICA_COPY = 0
    REPLICA_MOVE = 1


class TaskStatus(enum.IntEnum):
    PENDING = 0
    PROCESSING = 1
    FAILED = 2
    SUCCESS = 3


class Descriptor:
    """Where a memory replica lives: its size, address in its segment, and the endpoint."""

    __slots__ = ("size", "buffer_address", "transport_endpoint")

    def __init__(self, size: int = 0, buffer_address: int = 0, transport_endpoint: str = ""):
        self.size = size
        self.buffer_address = buffer_address
        self.transport_endpoint = transport_endpoint

    def __repr__(self) -> str:
        return (f"Descriptor(size={self.size}, buffer_address={self.buffer_address:#x}, "
                f"transport_endpoint='{self.transport_endpoint}')")


class MemoryDescriptor:
    __slots__ = ("buffer_descriptor",)

    def __init__(self, buffer_descriptor: Descriptor):
        self.buffer_descriptor = buffer_descriptor


class DiskDescriptor:
    __slots__ = ("file_path", "object_size")

    def __init__(self, file_path: str = "", object_size: int = 0):
        self.file_path = file_path
        self.object_size = object_size


class ReplicaDescriptor:
    """One replica of an object. kvpool's replicas are memory replicas."""

    __slots__ = ("_status", "_memory", "_disk")

    def __init__(self, status: ReplicaStatus, memory: Optional[MemoryDescriptor] = None,
                 disk: Optional[DiskDescriptor] = None):
        self._status = status
        self._memory = memory
        self._disk = disk

    @property
    def status(self) -> ReplicaStatus:
        return self._status

    def is_memory_replica(self) -> bool:
        return self._memory is not None

    def is_disk_replica(self) -> bool:
        return self._disk is not None

    def is_local_disk_replica(self) -> bool:
        return False

    def get_memory_descriptor(self) -> MemoryDescriptor:
        if self._memory is None:
            raise RuntimeError("not a memory replica")
        return self._memory

    def get_disk_descriptor(self) -> DiskDescriptor:
        if self._disk is None:
            raise RuntimeError("not a disk replica")
        return self._disk


class QueryTaskResponse:
    __slots__ = ("id", "type", "status", "created_at_ms_epoch", "last_updated_at_ms_epoch",
                 "assigned_client", "message")

    def __repr__(self) -> str:
        return f"QueryTaskResponse(id={self.id}, status={self.status})"


class ParallelAxis:
    """One axis of a tensor's parallel layout: kind "tp", "dp", "ep" or "pp"."""

    __slots__ = ("kind", "rank", "size", "split_dim", "expert_id", "stage_id")

    def __init__(self) -> None:
        self.kind = ""
        self.rank = 0
        self.size = 1
        self.split_dim: Optional[int] = None
        self.expert_id: Optional[int] = None
        self.stage_id: Optional[int] = None


class TensorParallelism:
    __slots__ = ("axes",)

    def __init__(self) -> None:
        self.axes: List[ParallelAxis] = []


class ReadTarget:
    """What a parallelism read returns: "as_stored" (the key as written), "shard" (one shard)
    or "full" (the shards reassembled). mode is case-insensitive; others raise RuntimeError."""

    __slots__ = ("_mode", "parallelism")
    _MODES = ("as_stored", "shard", "full")

    def __init__(self) -> None:
        self._mode = "as_stored"
        self.parallelism: Optional[TensorParallelism] = None

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        v = str(value).lower()
        if v not in self._MODES:
            raise RuntimeError(f"ReadTarget.mode '{value}' is not one of {', '.join(self._MODES)}")
        self._mode = v


class MooncakeDistributedNoFRegister:
    """NVMe-oF registration: kvpool has no NVMe-oF tier; both calls return NOT_SUPPORTED."""

    def real_register(self, nqn, nsid, traddr, trsvcid, base, size, master_server_addr, /):
        from kvpool._kvpool import _set_last_error
        return _set_last_error(-1012, "NVMe-oF segments are not supported by kvpool")

    def real_unregister_by_endpoint(self, nqn, nsid, traddr, trsvcid, master_server_addr, /):
        from kvpool._kvpool import _set_last_error
        return _set_last_error(-1012, "NVMe-oF segments are not supported by kvpool")
