"""Standalone mode from Python: HostMemAllocator, KVPoolHostTensorAllocator, setup_dummy and the
registration rule the seed is about."""

import gc

import numpy as np
import pytest

import kvpool
from kvpool import ErrorCode, HostMemAllocator, KVPoolError
from kvpool.allocator import KVPoolHostTensorAllocator

try:
    import torch
except ImportError:
    torch = None

pytestmark = pytest.mark.skipif(not kvpool.HAS_STANDALONE, reason="no standalone mode in build")
OK = 0


def test_host_mem_allocator_alloc_free():
    a = HostMemAllocator()
    p = a.alloc(10000)
    assert p % 4096 == 0
    assert a.free(p) == OK
    assert a.free(p) == ErrorCode.INVALID_PARAMS
    assert "not the start of a live" in kvpool.last_error()
    with pytest.raises(KVPoolError) as e:
        a.alloc(0)
    assert e.value.code == ErrorCode.INVALID_PARAMS and e.value.name == "INVALID_PARAMS"
    with pytest.raises(KVPoolError):
        a.alloc(-1)
    with pytest.raises(KVPoolError) as e:
        a.alloc(1 << 62)  # more than any machine has
    assert e.value.code == ErrorCode.NO_AVAILABLE_HANDLE
    assert kvpool.MooncakeHostMemAllocator().free(HostMemAllocator().alloc("1mb")) == OK


def test_host_buffer_lives_as_long_as_its_views():
    a = HostMemAllocator()
    b = a.alloc_buffer(1 << 16)
    p = b.ptr
    arr = np.frombuffer(b, dtype=np.uint8)
    del b
    gc.collect()
    arr[:] = 9  # still mapped: the array holds the buffer
    assert int(arr.sum()) == 9 * (1 << 16)
    del arr
    gc.collect()
    assert a.free(p) == ErrorCode.INVALID_PARAMS  # freed with its last view


@pytest.mark.skipif(torch is None, reason="torch not installed")
def test_tensor_allocator_torch():
    alloc = KVPoolHostTensorAllocator()
    t = alloc.allocate((2, 8, 4), torch.bfloat16)
    assert t.shape == (2, 8, 4) and t.dtype == torch.bfloat16
    assert t.data_ptr() == alloc.ptr
    assert alloc.is_mooncake_compatible
    t.fill_(1.5)
    p = t.data_ptr()
    half = t[1]
    del t
    gc.collect()
    assert float(half.sum()) == 1.5 * 32
    del half
    gc.collect()
    assert HostMemAllocator().free(p) == ErrorCode.INVALID_PARAMS  # freed with the tensor
    empty = alloc.allocate((0, 4), torch.float16)
    assert empty.numel() == 0
    with pytest.raises(ValueError):
        alloc.allocate((4,), torch.float16, device="cuda")


def test_tensor_allocator_numpy():
    arr = KVPoolHostTensorAllocator().allocate((3, 5), np.float32)
    assert arr.shape == (3, 5) and arr.dtype == np.float32
    arr[:] = 2
    assert float(arr.sum()) == 30


def test_register_rule_halves_whole_and_foreign(dummy_store, uid):
    s = dummy_store
    b = HostMemAllocator().alloc_buffer(1 << 20)
    arr = np.frombuffer(b, dtype=np.uint8)
    half = 1 << 19
    # SGLang's MHA route: the K and V halves of one allocation, registered separately ...
    assert s.register_buffer(b.ptr, half) == OK, kvpool.last_error()
    assert s.register_buffer(b.ptr + half, half) == OK, kvpool.last_error()
    # ... and newer SGLang registers the whole allocation: both work, overlaps are harmless.
    assert s.register_buffer(b.ptr, 1 << 20) == OK, kvpool.last_error()
    foreign = np.zeros(1 << 16, dtype=np.uint8)
    assert s.register_buffer(foreign.ctypes.data, foreign.nbytes) == \
        ErrorCode.UNAVAILABLE_IN_CURRENT_MODE
    msg = kvpool.last_error()
    assert "HostMemAllocator" in msg and "standalone" in msg and "copying" in msg
    # Zero copy through the node, byte-exact, both halves.
    arr[:4096] = np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8)
    assert s.put_from(f"{uid}-z", b.ptr, 4096) == OK
    assert s.get_into(f"{uid}-z", b.ptr + half, 4096) == 4096
    assert np.array_equal(arr[half:half + 4096], arr[:4096])
    assert s.get_into(f"{uid}-z", foreign.ctypes.data, 4096) == ErrorCode.INVALID_PARAMS
    for p in (b.ptr + half, b.ptr):
        assert s.unregister_buffer(p) == OK


def test_copying_calls_need_no_registration(dummy_store, uid):
    s = dummy_store
    # 20 MiB: larger than the fixture's 16 MiB staging buffer (goes through a temporary one).
    plain = np.random.default_rng(8).integers(0, 256, 20 << 20, dtype=np.uint8)
    keys = [f"{uid}-c{i}" for i in range(3)]
    assert s.batch_put_from_buffers(keys, [plain[:1000], plain[1000:5000], plain]) == [OK] * 3
    outs = [np.zeros(1000, np.uint8), np.zeros(4000, np.uint8), np.zeros(20 << 20, np.uint8)]
    assert s.batch_get_into_buffers(keys, outs) == [1000, 4000, 20 << 20]
    assert np.array_equal(outs[2], plain)
    assert s.put(f"{uid}-p", b"standalone") == OK
    assert s.get(f"{uid}-p") == b"standalone"
    assert s.upsert(f"{uid}-p2", b"one") == OK and s.upsert(f"{uid}-p2", b"two") == OK
    assert s.get(f"{uid}-p2") == b"two"


def test_embedded_and_standalone_clients_share_pages(store, dummy_store, uid):
    assert store.put(f"{uid}-shared", b"from embedded") == OK
    assert dummy_store.get(f"{uid}-shared") == b"from embedded"
    assert dummy_store.put(f"{uid}-shared2", b"from standalone") == OK
    assert store.get(f"{uid}-shared2") == b"from standalone"
    assert store.batch_exists_prefix([f"{uid}-shared", f"{uid}-shared2"]) == 2


def test_alloc_from_mem_pool(dummy_store, store, uid):
    p = dummy_store.alloc_from_mem_pool(8192)
    import ctypes

    ctypes.memmove(p, b"pooled!", 7)
    assert dummy_store.put_from(f"{uid}-mp", p, 7) == OK  # already registered
    assert dummy_store.get(f"{uid}-mp") == b"pooled!"
    with pytest.raises(KVPoolError) as e:
        store.alloc_from_mem_pool(4096)
    assert e.value.code == ErrorCode.UNAVAILABLE_IN_CURRENT_MODE
