"""vLLM's stock MooncakeStoreConnector on kvpool (route B, docs/vllm.md).

vLLM is not installed here. The stand-ins below are written from the connector's public
signatures (vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/worker.py at 6d6eb50d)
and make exactly the store calls it makes, with its shapes:

- `MooncakeDistributedStore()` from `mooncake.store`, then `setup(dict)` with the sizes written
  as strings (`str(int)`) and `local_hostname` the host's IP;
- `register_buffer(ptr, size)` over each layer's whole KV cache storage, once per storage;
- the paged layout of FlashAttention (`[2, num_blocks, block_size, kv_heads, head_size]` per
  layer: K and V are two segments, a block's bytes are `block_len` at `base + id * block_len`);
- one key per block chunk; its buffers are K and V of every layer (2 x layers addresses);
- stores: `batch_is_exist(keys)` to skip stored blocks, then
  `batch_put_from_multi_buffers(keys, addrs, sizes)` (no config argument);
- loads: `batch_get_into_multi_buffers(keys, addrs, sizes)`, rotated by the TP rank;
- lookups: `batch_is_exist` over the prefix's keys, the first non-1 ends the hit.
"""

import json
import os
import sys

import numpy as np
import pytest

from conftest import COMPAT_DIR

sys.path.insert(0, str(COMPAT_DIR))
from mooncake.store import MooncakeDistributedStore  # noqa: E402

import kvpool  # noqa: E402

OK = 0
LAYERS = 4
KV_HEADS = 2
HEAD_SIZE = 64
BLOCK_SIZE = 16  # tokens per block
NUM_BLOCKS = 32
DTYPE = np.float16


class PagedCaches:
    """Per-layer CPU KV caches in FlashAttention's layout, as vLLM's worker hands them over."""

    def __init__(self, alloc=None):
        shape = (2, NUM_BLOCKS, BLOCK_SIZE, KV_HEADS, HEAD_SIZE)
        n = int(np.prod(shape))
        self.layers = []
        for _ in range(LAYERS):
            if alloc is None:
                arr = np.zeros(shape, dtype=DTYPE)
            else:  # standalone: the caches must live in kvpool's shared memory
                buf = alloc.alloc_buffer(n * np.dtype(DTYPE).itemsize)
                arr = np.frombuffer(buf, dtype=DTYPE, count=n).reshape(shape)
            self.layers.append(arr)
        # K and V segments per layer, as register_kv_caches derives them from the strides
        self.block_len = self.layers[0][0, 0].nbytes
        self.seg_base = []
        for arr in self.layers:
            base = arr.ctypes.data
            self.seg_base += [base, base + arr.strides[0]]

    def register(self, store):
        for arr in self.layers:
            assert store.register_buffer(arr.ctypes.data, arr.nbytes) == OK, kvpool.last_error()

    def block_addrs(self, block_id):
        """prepare_value for a one-block chunk: one address and size per segment."""
        return ([b + block_id * self.block_len for b in self.seg_base],
                [self.block_len] * len(self.seg_base))

    def fill(self, block_id, seed):
        rng = np.random.default_rng(seed)
        for arr in self.layers:
            arr[:, block_id] = rng.standard_normal(arr[:, block_id].shape).astype(DTYPE)

    def block_bytes(self, block_id):
        return b"".join(arr[:, block_id].tobytes() for arr in self.layers)


def chunk_keys(model, block_hashes, tp_rank=0):
    """Key strings of the connector's shape: model, ranks, then the block hash."""
    return [f"{model}@tp_rank:{tp_rank}@pcp0@dcp0@pp_rank:0@{h}" for h in block_hashes]


class StoreWorkerStandIn:
    """The calls of vLLM's MooncakeStoreWorker and its sending/receiving threads."""

    def __init__(self, config_path, caches, tp_rank=0):
        with open(config_path) as f:
            cfg = json.load(f)
        self.store = MooncakeDistributedStore()
        rc = self.store.setup({
            "local_hostname": "127.0.0.1",  # vLLM passes get_ip()
            "metadata_server": cfg.get("metadata_server", ""),
            "global_segment_size": str(parse_size(cfg.get("global_segment_size", 4 << 30))),
            "local_buffer_size": str(parse_size(cfg.get("local_buffer_size", 4 << 30))),
            "protocol": cfg.get("protocol", "rdma"),
            "rdma_devices": cfg.get("device_name", ""),
            "master_server_addr": cfg.get("master_server_address", ""),
        })
        assert rc == OK, kvpool.last_error()
        self.caches = caches
        self.tp_rank = tp_rank
        caches.register(self.store)

    def save(self, keys, block_ids):
        exists = self.store.batch_is_exist(keys)
        missing = [i for i, e in enumerate(exists) if e != 1]
        if not missing:
            return []
        keys = [keys[i] for i in missing]
        addrs, sizes = zip(*(self.caches.block_addrs(block_ids[i]) for i in missing))
        return self.store.batch_put_from_multi_buffers(keys, list(addrs), list(sizes))

    def load(self, keys, block_ids):
        addrs, sizes = zip(*(self.caches.block_addrs(b) for b in block_ids))
        r = self.tp_rank % len(keys)
        rot = lambda xs: list(xs[r:]) + list(xs[:r])  # noqa: E731
        res = self.store.batch_get_into_multi_buffers(rot(keys), rot(addrs), rot(sizes))
        return dict(zip(rot(keys), res))

    def lookup(self, keys):
        res = self.store.batch_is_exist(keys)
        hits = 0
        for v in res:
            if v != 1:
                break
            hits += 1
        return hits * BLOCK_SIZE

    def close(self):
        self.store.close()


def parse_size(v):
    if isinstance(v, int):
        return v
    units = {"gb": 1 << 30, "mb": 1 << 20, "kb": 1 << 10, "b": 1}
    s = v.strip().lower()
    for u in ("gb", "mb", "kb", "b"):
        if s.endswith(u):
            return int(float(s[: -len(u)]) * units[u])
    return int(s)


def write_config(tmp_path, pool, segment):
    path = tmp_path / "mooncake.json"
    path.write_text(json.dumps({
        "metadata_server": "P2PHANDSHAKE",
        "global_segment_size": segment,
        "local_buffer_size": "0",
        "protocol": "tcp",
        "device_name": "",
        "master_server_address": pool.master_address,
    }))
    return str(path)


def round_trip(producer, consumer, uid):
    """The producer saves 8 blocks, the consumer looks the prefix up and loads it into other
    block ids of its own caches: the bytes must match exactly."""
    src_blocks = list(range(3, 11))
    dst_blocks = list(range(20, 28))
    for b in src_blocks:
        producer.caches.fill(b, seed=hash((uid, b)) & 0xFFFF)
    keys = chunk_keys("Llama-3-8B", [f"{uid}{i:04x}" for i in range(len(src_blocks))])
    assert consumer.lookup(keys) == 0
    res = producer.save(keys, src_blocks)
    assert res == [OK] * len(keys), (res, kvpool.last_error())
    assert producer.save(keys, src_blocks) == []  # batch_is_exist: all stored, nothing put
    assert consumer.lookup(keys) == len(keys) * BLOCK_SIZE
    got = consumer.load(keys, dst_blocks)
    size = len(producer.caches.block_bytes(src_blocks[0]))
    assert all(got[k] == size for k in keys), got
    for s, d in zip(src_blocks, dst_blocks):
        assert consumer.caches.block_bytes(d) == producer.caches.block_bytes(s)
    # a missing middle block: the lookup stops there; a load reports it per key, not a count
    assert producer.store.remove(keys[4], force=True) == OK
    assert consumer.lookup(keys) == 4 * BLOCK_SIZE
    for d in dst_blocks:
        for arr in consumer.caches.layers:
            arr[:, d] = 0
    got = consumer.load(keys, dst_blocks)
    assert got[keys[4]] == kvpool.ErrorCode.OBJECT_NOT_FOUND
    assert not any(consumer.caches.block_bytes(dst_blocks[4]))
    for i, (s, d) in enumerate(zip(src_blocks, dst_blocks)):
        if i != 4:
            assert got[keys[i]] == size
            assert consumer.caches.block_bytes(d) == producer.caches.block_bytes(s)


def test_embedded_contributing_memory(pool, uid, tmp_path, clean_env):
    """Each worker contributes a segment (global_segment_size > 0), as vLLM's default 4 GiB."""
    cfg = write_config(tmp_path, pool, "64MB")
    clean_env.setenv("MOONCAKE_CONFIG_PATH", cfg)
    a = StoreWorkerStandIn(os.environ["MOONCAKE_CONFIG_PATH"], PagedCaches())
    b = StoreWorkerStandIn(cfg, PagedCaches(), tp_rank=1)
    try:
        round_trip(a, b, uid)
    finally:
        b.close()
        a.close()


def test_beside_a_local_node(pool, uid, tmp_path, clean_env):
    """global_segment_size "0": the workers contribute nothing; the bytes live on the kvpool
    node of the host (the pool's node here)."""
    cfg = write_config(tmp_path, pool, "0")
    a = StoreWorkerStandIn(cfg, PagedCaches())
    b = StoreWorkerStandIn(cfg, PagedCaches(), tp_rank=3)
    try:
        round_trip(a, b, uid)
    finally:
        b.close()
        a.close()


@pytest.mark.skipif(not kvpool.HAS_STANDALONE, reason="no standalone mode in build")
def test_standalone_same_calls(pool, uid, tmp_path):
    """The same calls over setup_dummy (a wrapper that replaces setup(dict)), with the caches in
    kvpool's shared memory: the node moves the bytes, no TCP copy."""

    class Standalone(StoreWorkerStandIn):
        def __init__(self, caches, tp_rank=0):
            self.store = MooncakeDistributedStore()
            assert self.store.setup_dummy(64 << 20, 16 << 20, pool.node_address(0)) == OK
            self.caches, self.tp_rank = caches, tp_rank
            caches.register(self.store)

    alloc = kvpool.HostMemAllocator()
    a = Standalone(PagedCaches(alloc))
    b = Standalone(PagedCaches(alloc), tp_rank=1)
    try:
        round_trip(a, b, uid)
    finally:
        b.close()
        a.close()
