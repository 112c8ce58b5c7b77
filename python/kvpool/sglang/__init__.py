"""kvpool's SGLang HiCache backend.

Load it through SGLang's dynamic backend (see docs/sglang.md):
    --hicache-storage-backend dynamic --hicache-storage-backend-extra-config
    '{"backend_name": "kvpool", "module_path": "kvpool.sglang",
      "class_name": "KVPoolHiCacheStorage", "interface_v1": 1, ...}'
It subclasses SGLang's HiCacheStorage when SGLang is installed and works without it. Hybrid
models (Mamba, SWA, indexer, DeepSeek V4, draft pools) use SGLang's v2 calls (hybrid.py).
"""

from kvpool.allocator import KVPoolHostTensorAllocator
from kvpool.config import KVPoolConfigError, KVPoolStoreConfig
from kvpool.sglang.backend import KVPoolHiCacheStorage
from kvpool.sglang.base import HAVE_SGLANG, HiCacheStorageConfig
from kvpool.sglang.keys import KeyScheme
from kvpool.sglang.v2_types import PoolHitPolicy, PoolName, PoolTransfer, PoolTransferResult

__all__ = [
    "HAVE_SGLANG",
    "HiCacheStorageConfig",
    "KVPoolConfigError",
    "KVPoolHiCacheStorage",
    "KVPoolHostTensorAllocator",
    "KVPoolStoreConfig",
    "KeyScheme",
    "PoolHitPolicy",
    "PoolName",
    "PoolTransfer",
    "PoolTransferResult",
]
