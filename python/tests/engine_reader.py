"""A second "engine": a separate process that builds its own host pool and backend, asks which
pages exist and reads them. Prints one JSON line: {"exists": n, "got": [...], "sha256": [...]}.

Usage: engine_reader.py '<json spec>'  with keys: extra_config, model_name, is_mla, layout,
       keys, allocator ("kvpool" | "plain"), tp_rank.
"""

import hashlib
import json
import sys

import hide_torch  # noqa: F401  (first: honours KVPOOL_TEST_HIDE_TORCH)
from fake_pool import FakeMHAPool, FakeMLAPool, PlainHostTensorAllocator, page_indices

from kvpool.allocator import KVPoolHostTensorAllocator
from kvpool.sglang import HiCacheStorageConfig, KVPoolHiCacheStorage


def main() -> None:
    spec = json.loads(sys.argv[1])
    allocator = KVPoolHostTensorAllocator() if spec["allocator"] == "kvpool" else \
        PlainHostTensorAllocator()
    cls = FakeMLAPool if spec["is_mla"] else FakeMHAPool
    pool = cls(allocator, layout=spec["layout"])
    config = HiCacheStorageConfig(tp_rank=spec.get("tp_rank", 0), tp_size=2,
                                  is_mla_model=spec["is_mla"], model_name=spec["model_name"],
                                  extra_config=spec["extra_config"])
    backend = KVPoolHiCacheStorage(config, {})  # SGLang's dynamic-backend call
    backend.register_mem_pool_host(pool)
    keys = spec["keys"]
    indices = page_indices(0, len(keys), pool.page_size)
    exists = backend.batch_exists(keys)
    got = backend.batch_get_v1(keys, indices)
    digests = [hashlib.sha256(b).hexdigest() for b in pool.page_bytes(indices)]
    backend.close()
    print(json.dumps({"exists": exists, "got": got, "sha256": digests, "mode": backend.mode}))


if __name__ == "__main__":
    main()
