"""The compatibility package: `mooncake.store` is kvpool, and the call sequence of SGLang's stock
Mooncake backend (MooncakeStore + MooncakeHostTensorAllocator) works on kvpool in embedded and
standalone modes. SGLang itself is not installed here: the sequence is replayed call by call."""

import ctypes
import hashlib
import sys
import uuid

import numpy as np
import pytest

import kvpool
from conftest import COMPAT_DIR

try:
    import torch
except ImportError:
    torch = None

sys.path.insert(0, str(COMPAT_DIR))
from mooncake.store import (  # noqa: E402
    MooncakeDistributedStore, MooncakeHostMemAllocator, ReplicateConfig)

LOCAL_BUFFER = 16 * 1024 * 1024  # SGLang's DEFAULT_LOCAL_BUFFER_SIZE


def test_compat_names_are_kvpool():
    import mooncake
    import mooncake.store

    assert MooncakeDistributedStore is kvpool.KVPoolStore
    assert MooncakeHostMemAllocator is kvpool.HostMemAllocator
    assert ReplicateConfig is kvpool.ReplicateConfig
    assert mooncake.store.SoftPinAction is kvpool.SoftPinAction
    assert mooncake.__version__.startswith("kvpool-")
    # SGLang probes group semantics on the class or an instance.
    assert hasattr(ReplicateConfig(), "group_ids")


def host_kv_buffer(dims, standalone):
    """SGLang's host pool kv_buffer: MooncakeHostTensorAllocator's recipe in standalone mode
    (alloc -> ctypes array -> torch.frombuffer -> view), plain memory otherwise."""
    size = int(np.prod(dims)) * 2
    if not standalone:
        return torch.zeros(dims, dtype=torch.bfloat16) if torch else np.zeros(dims, np.float16)
    ptr = MooncakeHostMemAllocator().alloc(size)
    array = (ctypes.c_byte * size).from_address(ptr)
    if torch is None:
        return np.frombuffer(array, dtype=np.uint8).view(np.float16).reshape(dims)
    return torch.frombuffer(array, dtype=torch.uint8, count=size).view(torch.bfloat16).view(dims)


def addr(t):
    if hasattr(t, "data_ptr"):
        return t.data_ptr(), t.numel() * t.element_size()
    return t.ctypes.data, t.nbytes


@pytest.mark.parametrize("mode", ["embedded", pytest.param(
    "standalone", marks=pytest.mark.skipif(not kvpool.HAS_STANDALONE, reason="no standalone"))])
def test_stock_mooncake_backend_sequence(pool, mode):
    standalone = mode == "standalone"
    layers, tokens, heads, dim, page = 2, 64, 2, 8, 16
    kv_buffer = host_kv_buffer((2, tokens, layers, heads, dim), standalone)
    k_buffer, v_buffer = kv_buffer[0], kv_buffer[1]
    store = MooncakeDistributedStore()
    if standalone:
        required = addr(kv_buffer)[1] + addr(v_buffer)[1]  # SGLang's (over)count
        assert store.setup_dummy(required, LOCAL_BUFFER, pool.node_address(0)) == 0
    else:
        assert store.setup("127.0.0.1", "P2PHANDSHAKE", 16 << 20, LOCAL_BUFFER, "tcp", "",
                           pool.master_address, None) == 0
    try:
        # warmup()
        warm = "sglang_mooncake_store_warmup_key" + uuid.uuid4().hex
        assert store.put(warm, bytes(4096)) == 0
        assert store.is_exist(warm) == 1
        assert store.get(warm) == bytes(4096)
        # register_mem_pool_host(): K and V halves of one allocation, one after the other.
        for t in (k_buffer, v_buffer):
            assert store.register_buffer(*addr(t)) == 0, kvpool.last_error()
        # batch_set_v1 for 2 pages: keys, get_page_buffer_meta-style pointers, exist, put.
        token = layers * heads * dim * 2
        v_off = addr(v_buffer)[0] - addr(k_buffer)[0]
        base = addr(kv_buffer)[0]
        ctypes.memmove(base, np.random.default_rng(4).integers(0, 256, 2 * page * token,
                                                               dtype=np.uint8).tobytes(),
                       2 * page * token)
        ctypes.memmove(base + v_off, bytes(range(256)) * (2 * page * token // 256),
                       2 * page * token)
        hashes = [hashlib.sha256(f"{mode}-{i}-{uuid.uuid4()}".encode()).hexdigest()
                  for i in range(2)]
        keys, ptrs = [], []
        for i, h in enumerate(hashes):
            keys += [f"m_{h}_0_k", f"m_{h}_0_v"]
            k = base + i * page * token
            ptrs += [k, k + v_off]
        sizes = [page * token] * 4
        assert store.batch_is_exist(keys) == [0, 0, 0, 0]
        assert store.batch_put_from(keys, ptrs, sizes) == [0, 0, 0, 0]
        config = ReplicateConfig()
        config.group_ids = ["sglang-hicache:x"] * 4  # enable_group_semantics path
        assert store.batch_put_from(keys, ptrs, sizes, config) == [0, 0, 0, 0]
        # batch_exists then batch_get_v1 into pages 2 and 3.
        assert store.batch_is_exist(keys) == [1, 1, 1, 1]
        dst = [p + 2 * page * token for p in ptrs]
        assert store.batch_get_into(keys, dst, sizes) == sizes
        for s, d in zip(ptrs, dst):
            assert ctypes.string_at(s, page * token) == ctypes.string_at(d, page * token)
        # clear()
        assert store.remove_all(force=True) >= 5
    finally:
        store.close()
