"""Mooncake Store's whole Python method set (../shared/reference/mooncake-python-api-full.md):
every method exists with Mooncake's signature, returns by Mooncake's convention, and reports
one documented error. Tensor tests run with torch and, under KVPOOL_TEST_HIDE_TORCH=1, check
that every tensor call answers UNAVAILABLE_IN_CURRENT_MODE (-1011) or None instead."""

import ctypes
import inspect
import struct
import sys

import numpy as np
import pytest

import kvpool
from kvpool import ErrorCode, KVPoolStore, ReplicateConfig, SoftPinAction

try:
    import torch
except ImportError:
    torch = None

OK = 0
NO_TORCH = int(ErrorCode.UNAVAILABLE_IN_CURRENT_MODE)
INVALID = int(ErrorCode.INVALID_PARAMS)
NOT_SET_UP = int(ErrorCode.UNAVAILABLE_IN_CURRENT_STATUS)
needs_torch = pytest.mark.skipif(torch is None, reason="torch hidden or not installed")
no_torch = pytest.mark.skipif(torch is not None, reason="torch is importable")

REFERENCE_METHODS = """
setup setup_dummy init_all close health_check get_hostname alloc_from_mem_pool
get_offload_rpc_read_count register_buffer unregister_buffer put_from batch_put_from
put_from_with_metadata batch_put_from_multi_buffers upsert_from batch_upsert_from get_into
batch_get_into batch_get_into_multi_buffers get_into_ranges batch_get_session_start
batch_get_into_multi_buffer_ranges batch_get_session_end batch_put_session_start
batch_put_from_multi_buffer_ranges batch_put_session_end batch_put_session_revoke put put_parts
put_batch upsert upsert_parts upsert_batch get get_batch get_buffer batch_get_buffer is_exist
batch_is_exist get_size remove remove_by_regex remove_all batch_remove get_replica_desc
batch_get_replica_desc batch_replica_clear create_copy_task create_move_task query_task
mount_segment unmount_segment allocate_and_mount_segment unmount_and_free_segment
unmount_local_disk_segment put_tensor get_tensor batch_put_tensor batch_get_tensor pub_tensor
batch_pub_tensor upsert_tensor batch_upsert_tensor upsert_pub_tensor batch_upsert_pub_tensor
upsert_tensor_from batch_upsert_tensor_from get_tensor_into batch_get_tensor_into
put_tensor_from batch_put_tensor_from put_tensor_with_tp batch_put_tensor_with_tp
pub_tensor_with_tp batch_pub_tensor_with_tp get_tensor_with_tp batch_get_tensor_with_tp
get_tensor_with_tp_into batch_get_tensor_with_tp_into put_tensor_with_tp_from
batch_put_tensor_with_tp_from get_tensor_into_cuda batch_get_tensor_into_cuda
get_tensor_with_parallelism batch_get_tensor_with_parallelism get_tensor_with_parallelism_into
batch_get_tensor_with_parallelism_into put_tensor_with_parallelism upsert_tensor_with_parallelism
batch_put_tensor_with_parallelism batch_upsert_tensor_with_parallelism
put_tensor_with_parallelism_from upsert_tensor_with_parallelism_from
batch_put_tensor_with_parallelism_from batch_upsert_tensor_with_parallelism_from
save_tensor_to_safetensor load_tensor_from_safetensor
""".split()

# Declared without py::arg in Mooncake: positional only.
POSITIONAL_ONLY = {
    "get": ("k",), "get_batch": (["k"],), "get_buffer": ("k",), "batch_get_buffer": (["k"],),
    "is_exist": ("k",), "get_size": ("k",),
}


@pytest.fixture(params=["embedded", "standalone"])
def any_store(request):
    if request.param == "standalone" and not kvpool.HAS_STANDALONE:
        pytest.skip("built without standalone mode")
    return request.getfixturevalue("store" if request.param == "embedded" else "dummy_store")


def registered(store, nbytes=1 << 20):
    """Memory registered with `store`: numpy in embedded mode, the node-shared allocator's in
    standalone mode (which only accepts that). Returns (keepalive, address)."""
    if store.is_standalone():
        ptr = store.alloc_from_mem_pool(nbytes)
        return None, ptr
    buf = np.zeros(nbytes, dtype=np.uint8)
    assert store.register_buffer(buf.ctypes.data, buf.nbytes) == OK, kvpool.last_error()
    return buf, buf.ctypes.data


# ---- the method set ---------------------------------------------------------------------------

def test_reference_method_set_is_complete():
    assert len(REFERENCE_METHODS) == 97 and len(set(REFERENCE_METHODS)) == 97
    missing = [m for m in REFERENCE_METHODS if not callable(getattr(KVPoolStore, m, None))]
    assert missing == []


@pytest.mark.parametrize("name", sorted(POSITIONAL_ONLY))
def test_positional_only_methods_refuse_keywords(store, name):
    with pytest.raises(TypeError):
        getattr(store, name)(key="k") if "batch" not in name and name != "get_batch" else \
            getattr(store, name)(keys=["k"])
    getattr(store, name)(*POSITIONAL_ONLY[name])  # positionally fine


def test_compat_module_exports_mooncake_names(monkeypatch):
    from conftest import COMPAT_DIR
    monkeypatch.syspath_prepend(str(COMPAT_DIR))
    for m in [m for m in sys.modules if m == "mooncake" or m.startswith("mooncake.")]:
        monkeypatch.delitem(sys.modules, m)
    import mooncake.store as ms
    for name in ("MooncakeDistributedStore", "ReplicateConfig", "SoftPinAction", "ObjectDataType",
                 "ReplicaStatus", "TaskType", "TaskStatus", "ReplicaDescriptor",
                 "MemoryDescriptor", "DiskDescriptor", "Descriptor", "QueryTaskResponse",
                 "BufferHandle", "MooncakeHostMemAllocator", "ParallelAxis", "TensorParallelism",
                 "ReadTarget", "MooncakeDistributedNoFRegister", "bind_to_numa_node",
                 "get_alloc_func_addr", "get_free_func_addr", "_serialize_tensor",
                 "_tensor_metadata_size", "_deserialize_tensor", "BufferPool",
                 "RegisteredBufferPool", "BufferLease", "EngramStore", "EngramStoreConfig"):
        assert hasattr(ms, name), name
    assert ms.KVCACHE == ms.ObjectDataType.KVCACHE and int(ms.KVCACHE) == 1
    assert ms.PROCESSING is ms.TaskStatus.PROCESSING  # exported last, as pybind11 does
    assert ms._tensor_metadata_size() == 304
    import mooncake
    assert mooncake.BufferPool is mooncake.RegisteredBufferPool is ms.BufferPool
    assert ms.MooncakeDistributedNoFRegister().real_register(
        "n", 1, "a", "p", 0, 0, "m") == ErrorCode.NOT_SUPPORTED
    import mooncake.async_store as mas
    s = mas.MooncakeDistributedStoreAsync()
    import asyncio
    assert asyncio.run(s.async_health_check()) == 1  # not set up
    with pytest.raises(AttributeError):
        s.no_such_thing  # noqa: B018


# ---- set-up and lifecycle ---------------------------------------------------------------------

def test_init_all_is_not_supported(store):
    assert store.init_all("tcp", "", 1 << 20) == ErrorCode.NOT_SUPPORTED
    assert "setup" in kvpool.last_error()
    with pytest.raises(TypeError):
        store.init_all("tcp", "")  # all three required, positionally


def test_get_offload_rpc_read_count(store):
    assert store.get_offload_rpc_read_count() == 0


def test_calls_before_setup_return_codes_not_crashes():
    s = KVPoolStore()
    assert s.get_buffer("k") is None
    assert s.batch_get_buffer(["a", "b"]) == [None, None]
    assert s.remove_by_regex(".*") == NOT_SET_UP
    assert s.list_keys() == NOT_SET_UP
    assert s.get_into_ranges([0], [["k"]], [[[0]]], [[[0]]], [[[1]]]) == [[[NOT_SET_UP]]]
    assert s.batch_get_session_start(["k"]) == []
    assert s.batch_get_session_end(["k"]) == -1
    assert s.batch_put_session_start(["k"], [1]) == []
    assert s.put_from_with_metadata("k", 1, 1, 1, 1) == NOT_SET_UP
    assert s.upsert_parts("k", b"a") == NOT_SET_UP
    assert s.batch_get_replica_desc(["k"]) == {}
    if torch is not None:
        assert s.put_tensor("k", torch.zeros(2)) == NOT_SET_UP
        assert s.get_tensor("k") is None
        assert s.batch_put_tensor(["k"], [torch.zeros(2)]) == [NOT_SET_UP]
    assert s.close() == 0


# ---- zero-copy, copying and buffer handles ----------------------------------------------------

def test_put_from_with_metadata_joins_metadata_then_data(any_store, uid):
    keep, ptr = registered(any_store)
    mem = (ctypes.c_char * 64).from_address(ptr)
    mem[0:4] = b"META"
    mem[32:38] = b"DATA!!"
    assert any_store.put_from_with_metadata(f"{uid}-m", ptr + 32, ptr, 6, 4) == OK
    assert any_store.get(f"{uid}-m") == b"METADATA!!"
    assert any_store.put_from_with_metadata(f"{uid}-z", ptr, ptr, 0, 4) == OK  # size 0: no-op


def test_upsert_parts_replaces_with_joined_parts(any_store, uid):
    k = f"{uid}-up"
    assert any_store.upsert_parts(k, b"ab", bytearray(b"cd")) == OK
    assert any_store.upsert_parts(k, b"xyz", config=ReplicateConfig()) == OK
    assert any_store.get(k) == b"xyz"
    with pytest.raises(TypeError):
        any_store.upsert_parts(k, "not bytes")


def test_get_buffer_and_batch_get_buffer(any_store, uid):
    assert any_store.put(f"{uid}-a", b"alpha") == OK
    h = any_store.get_buffer(f"{uid}-a")
    assert bytes(h) == b"alpha" and len(h) == h.size() == 5 and h.ptr() != 0
    assert np.frombuffer(h, dtype=np.uint8).tobytes() == b"alpha"  # buffer protocol
    hs = any_store.batch_get_buffer([f"{uid}-a", f"{uid}-missing"])
    assert bytes(hs[0]) == b"alpha" and hs[1] is None
    assert any_store.batch_get_buffer([]) == []


def test_buffer_handle_after_close_raises_not_dangles(pool, uid):
    s = KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address) == 0
    assert s.put(f"{uid}-h", b"bytes") == OK
    h = s.get_buffer(f"{uid}-h")
    early = memoryview(h)  # exported before close: stays valid (the handle owns the bytes)
    assert s.close() == 0
    for use in (lambda: memoryview(h), h.ptr, h.size, lambda: len(h), lambda: bytes(h)):
        with pytest.raises(kvpool.KVPoolError) as e:
            use()
        assert e.value.code == NOT_SET_UP
    assert early.tobytes() == b"bytes"


def test_get_into_ranges_per_fragment_results(any_store, uid):
    keep, ptr = registered(any_store, 4096)
    assert any_store.put(f"{uid}-r", bytes(range(100))) == OK
    r = any_store.get_into_ranges(
        [ptr], [[f"{uid}-r", f"{uid}-missing"]], [[[0, 10, 4090], [20]]],
        [[[5, 50, 0], [0]]], [[[3, 4, 10], [1]]])
    assert r[0][0][:2] == [3, 4]
    assert r[0][0][2] == INVALID  # destination past the registered region
    assert r[0][1] == [ErrorCode.OBJECT_NOT_FOUND]
    assert ctypes.string_at(ptr, 3) == bytes([5, 6, 7])
    assert ctypes.string_at(ptr + 10, 4) == bytes([50, 51, 52, 53])
    past = any_store.get_into_ranges([ptr], [[f"{uid}-r"]], [[[0]]], [[[98]]], [[[5]]])
    assert past == [[[INVALID]]]  # source past the object's end
    assert any_store.get_into_ranges([ptr], [[f"{uid}-r"]], [], [], []) == []  # lengths differ


def test_upserts_join_their_parts_in_one_copy(any_store, uid):
    """upsert_parts and upsert_tensor hand their parts to the C++ call, which joins them
    straight into its staging memory: no Python bytes object of the value (tracemalloc sees
    them; before, a 1 MiB upsert made two 1 MiB copies in Python first)."""
    import tracemalloc
    a, b = np.full(1 << 19, 1, dtype=np.uint8), np.full(1 << 19, 2, dtype=np.uint8)
    k = f"{uid}-upbig"
    tracemalloc.start()
    try:
        assert any_store.upsert_parts(k, a, memoryview(b)) == OK
        if torch is not None:
            assert any_store.upsert_tensor(f"{k}-t", torch.arange(256 * 1024,
                                                                  dtype=torch.float32)) == OK
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < (256 << 10), f"{peak} bytes allocated by Python for 1 MiB upserts"
    assert any_store.get(k) == a.tobytes() + b.tobytes()
    if torch is not None:
        assert torch.equal(any_store.get_tensor(f"{k}-t"),
                           torch.arange(256 * 1024, dtype=torch.float32))
    assert any_store.batch_upsert_from_buffers([k, f"{k}-2"], [[b"ab", b"cd"], b"x"]) == [OK, OK]
    assert any_store.get(k) == b"abcd" and any_store.get(f"{k}-2") == b"x"


def test_session_ranged_get_and_put(any_store, uid):
    keep, ptr = registered(any_store, 1 << 16)
    src = (ctypes.c_char * 8).from_address(ptr)
    src[0:8] = b"01234567"
    k = f"{uid}-sess"
    assert any_store.batch_put_session_start([k], [8]) == [OK]
    assert any_store.batch_put_session_start([k], [8]) == [INVALID]  # already in a session
    # Sizes this process cannot stage are a code per key, not a MemoryError / OverflowError.
    assert any_store.batch_put_session_start([f"{k}-huge", f"{k}-huger", f"{k}-f"],
                                             [1 << 50, 1 << 70, 8.0]) == [INVALID] * 3
    assert "cannot be staged" in kvpool.last_error() or "positive int" in kvpool.last_error()
    assert any_store.batch_put_session_start([f"{k}-huge"], [np.int64(8)]) == [OK]  # nothing
    # was left behind by the failure; numpy sizes are ints
    assert any_store.batch_put_session_revoke([f"{k}-huge"]) == [OK]
    assert any_store.batch_put_from_multi_buffer_ranges([k], [[ptr + 4, ptr]], [[4, 4]],
                                                        [[0, 4]]) == [8]
    assert any_store.is_exist(k) == 0  # nothing visible before the end
    assert any_store.batch_put_session_end([k]) == [OK]
    assert any_store.get(k) == b"45670123"
    assert any_store.batch_put_session_revoke([k, "gone"]) == [OK, OK]

    assert any_store.batch_get_session_start([k, f"{uid}-none"]) == [OK, ErrorCode.OBJECT_NOT_FOUND]
    dst = ptr + 1024
    assert any_store.batch_get_into_multi_buffer_ranges([k], [[dst]], [[3]], [[5]]) == [3]
    assert ctypes.string_at(dst, 3) == b"123"  # object bytes 5..8 of "45670123"
    assert any_store.batch_get_into_multi_buffer_ranges([k], [[dst]], [[4]], [[6]]) == [INVALID]
    assert any_store.batch_get_session_end([k]) == OK
    assert any_store.batch_get_into_multi_buffer_ranges([k], [[dst]], [[1]], [[0]]) == [INVALID]


def test_session_ranges_copy_each_byte_once(any_store, uid):
    """A put session's ranges land in the object being assembled and a get session's ranges
    in the destination with one memmove each: no Python bytes object in between (tracemalloc
    sees them; before, a 1 MiB put range made a 1 MiB bytes copy first). An unregistered
    source is refused before a byte moves."""
    import tracemalloc
    keep, ptr = registered(any_store, 4 << 20)
    ctypes.memset(ptr, 0x5A, 1 << 20)
    k = f"{uid}-big-sess"
    assert any_store.batch_put_session_start([k], [1 << 20]) == [OK]
    other = ctypes.create_string_buffer(16)  # mapped, not registered
    assert any_store.batch_put_from_multi_buffer_ranges(
        [k], [[ctypes.addressof(other)]], [[16]], [[0]]) == [INVALID]
    tracemalloc.start()
    try:
        assert any_store.batch_put_from_multi_buffer_ranges([k], [[ptr, ptr + 4096]],
                                                            [[4096, (1 << 20) - 4096]],
                                                            [[0, 4096]]) == [1 << 20]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < (256 << 10), f"{peak} bytes allocated by Python for a 1 MiB ranged put"
    assert any_store.batch_put_session_end([k]) == [OK]
    assert any_store.batch_get_session_start([k]) == [OK]
    dst = ptr + (2 << 20)
    assert any_store.batch_get_into_multi_buffer_ranges([k], [[dst]], [[1 << 20]], [[0]]) == [
        1 << 20]
    assert ctypes.string_at(dst, 1 << 20) == b"\x5a" * (1 << 20)
    assert any_store.batch_get_session_end([k]) == OK


# ---- queries, removal, listing ----------------------------------------------------------------

def test_remove_by_regex_searches_and_counts(any_store, uid):
    for i in range(30):
        assert any_store.put(f"{uid}/layer{i}/k", b"v") == OK
    assert any_store.put(f"{uid}/keep", b"v") == OK
    # A search: the pattern may match anywhere in the key.
    assert any_store.remove_by_regex(f"{uid}/layer[0-9]+/") == 30
    assert any_store.is_exist(f"{uid}/layer3/k") == 0
    assert any_store.is_exist(f"{uid}/keep") == 1
    assert any_store.remove_by_regex(f"{uid}/layer") == 0
    assert any_store.remove_by_regex("([bad", force=True) == INVALID
    assert "does not compile" in kvpool.last_error()
    with pytest.raises(TypeError):
        any_store.remove_by_regex(pattern="x")  # Mooncake's name is regex_pattern
    assert any_store.remove_by_regex(regex_pattern=f"^{uid}/keep$") == 1


def test_list_keys_pages_through_the_tenant(any_store, uid):
    want = {f"{uid}-list-{i}" for i in range(25)}
    for k in want:
        assert any_store.put(k, b"v") == OK
    assert set(any_store.list_keys(f"^{uid}-list-", page_size=4)) == want
    assert len(any_store.list_keys(f"^{uid}-list-", max_keys=7)) == 7
    assert any_store.list_keys(f"^{uid}-nothing") == []
    assert any_store.list_keys("(") == INVALID


def test_remove_by_regex_stays_in_its_tenant(pool, uid):
    a, b = KVPoolStore(), KVPoolStore()
    for s, t in ((a, "tenant-a"), (b, "tenant-b")):
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address,
                       tenant_id=t) == 0, kvpool.last_error()
    try:
        assert a.put(f"{uid}-t", b"a") == OK and b.put(f"{uid}-t", b"b") == OK
        assert a.list_keys(f"^{uid}-t$") == [f"{uid}-t"]
        assert a.remove_by_regex(f"^{uid}-t$") == 1
        assert b.get(f"{uid}-t") == b"b"
    finally:
        a.close()
        b.close()


def test_replica_descriptors(any_store, uid):
    assert any_store.put(f"{uid}-d", b"12345") == OK
    d = any_store.batch_get_replica_desc([f"{uid}-d", f"{uid}-missing"])
    assert list(d) == [f"{uid}-d"]  # missing keys are absent
    r = d[f"{uid}-d"][0]
    assert r.is_memory_replica() and not r.is_disk_replica() and not r.is_local_disk_replica()
    assert r.get_memory_descriptor().buffer_descriptor.size == 5
    with pytest.raises(RuntimeError):
        r.get_disk_descriptor()
    assert any_store.get_replica_desc(f"{uid}-missing") == []
    assert len(any_store.get_replica_desc(f"{uid}-d")) == 1


@pytest.mark.parametrize("call, expected", [
    (lambda s: s.batch_replica_clear(["k"]), []),
    (lambda s: s.batch_replica_clear(["k"], segment_name="x"), []),
    (lambda s: s.create_copy_task("k", ["a"]), ((0, 0), int(ErrorCode.NOT_SUPPORTED))),
    (lambda s: s.create_move_task("k", "a", "b"), ((0, 0), int(ErrorCode.NOT_SUPPORTED))),
    # Mooncake's answer for an unknown task id (kvpool makes none): -1400 TASK_NOT_FOUND.
    (lambda s: s.query_task((1, 2)), (None, -1400)),
    (lambda s: s.mount_segment("/p", 4096), {"ret": -1012, "segment_ids": []}),
    (lambda s: s.unmount_segment(["1-2"], grace_period_seconds=0), -1012),
    (lambda s: s.allocate_and_mount_segment(1 << 20),
     {"ret": -1012, "segment_ids": [], "allocated_size": 0}),
    (lambda s: s.unmount_and_free_segment(["1-2"]), -1012),
    (lambda s: s.unmount_local_disk_segment(), 0),
    (lambda s: s.get_tensor_into_cuda("k", None), NO_TORCH),
    (lambda s: s.batch_get_tensor_into_cuda(["a", "b"], [None, None]), [NO_TORCH] * 2),
])
def test_calls_kvpool_has_no_counterpart_for(store, call, expected):
    assert call(store) == expected
    assert kvpool.last_error() != ""


# ---- ReplicateConfig --------------------------------------------------------------------------

def test_replicate_config_typed_fields():
    c = ReplicateConfig()
    assert (c.nof_replica_num, c.dfs_replica_num, c.preferred_nof_segments, c.group_ids,
            c.data_type) == (0, 0, [], None, kvpool.ObjectDataType.UNKNOWN)
    with pytest.raises(TypeError):
        c.soft_pin_ttl_ms = -1
    with pytest.raises(TypeError):
        c.preferred_segments = "host:1"
    with pytest.raises(TypeError):
        c.soft_pin_action = 1
    with pytest.raises(TypeError):
        c.nof_replica_num = "1"
    with pytest.raises(AttributeError):
        c.no_such_field = 1
    c.data_type = kvpool.ObjectDataType.KVCACHE
    c.group_ids = ["g"]
    assert "data_type=1" in str(c) and "replica_num=1" in str(c)
    c.with_soft_pin = True  # the older spelling still works


def test_replicate_config_refusals_at_put(store, uid):
    ttl_without_enable = ReplicateConfig()
    ttl_without_enable.soft_pin_ttl_ms = 1000
    assert store.put(f"{uid}-1", b"v", ttl_without_enable) == INVALID
    too_long = ReplicateConfig()
    too_long.soft_pin_action = SoftPinAction.ENABLE
    too_long.soft_pin_ttl_ms = 25 * 3600 * 1000
    assert store.put(f"{uid}-2", b"v", too_long) == INVALID
    nof = ReplicateConfig()
    nof.nof_replica_num = 1
    assert store.put(f"{uid}-3", b"v", nof) == INVALID and "NVMe-oF" in kvpool.last_error()
    # A DFS replica: Mooncake's -1601 DFS_SERVICE_UNAVAILABLE (no DFS backend), nothing
    # written; more than one DFS replica is INVALID_PARAMS, as Mooncake's.
    dfs = ReplicateConfig()
    dfs.dfs_replica_num = 1
    assert store.put(f"{uid}-5", b"v", dfs) == -1601 == int(ErrorCode.DFS_SERVICE_UNAVAILABLE)
    assert "DFS" in kvpool.last_error() and store.is_exist(f"{uid}-5") == 0
    assert store.upsert(f"{uid}-5", b"v", dfs) == -1601
    assert store.batch_put_from_buffers([f"{uid}-5", f"{uid}-6"], [b"a", b"b"], dfs) == [-1601] * 2
    dfs.dfs_replica_num = 2
    assert store.put(f"{uid}-5", b"v", dfs) == INVALID
    ok = ReplicateConfig()
    ok.soft_pin_action = SoftPinAction.ENABLE
    ok.soft_pin_ttl_ms = 1000
    assert store.put(f"{uid}-4", b"v", ok) == OK


# ---- tensors ------------------------------------------------------------------------------------

def mooncake_header(dtype_code, shape, nbytes, kind=0, axes=()):
    """A header laid out field by field as Mooncake's TensorMetadata (independently of
    kvpool.tensor_format)."""
    h = bytearray(304)
    struct.pack_into("<IHHii", h, 0, 0x4D4F4F4E, 1, 304, dtype_code, len(shape))
    struct.pack_into("<II", h, 16, kind, 0)
    struct.pack_into("<QQ", h, 24, 304, nbytes)
    dims = list(shape) + [-1] * (8 - len(shape))
    struct.pack_into("<8q", h, 40, *dims)
    struct.pack_into("<8q", h, 104, *dims)
    struct.pack_into("<II", h, 168, len(axes), 0)
    for i, a in enumerate(axes):
        struct.pack_into("<iiiiiiq", h, 176 + 32 * i, *a)
    return bytes(h)


@needs_torch
def test_tensor_header_is_mooncakes_layout(any_store, uid):
    t = torch.arange(12, dtype=torch.int64).reshape(3, 4)
    assert any_store.put_tensor(f"{uid}-t", t) == OK
    raw = any_store.get(f"{uid}-t")
    assert raw[:304] == mooncake_header(8, (3, 4), 96)
    assert raw[304:] == t.numpy().tobytes()
    assert any_store.get_size(f"{uid}-t") == 304 + 96
    # An object written in Mooncake's layout by other means reads back as a tensor.
    x = torch.tensor([[1.5, -2.0]], dtype=torch.float32)
    assert any_store.put(f"{uid}-mc", mooncake_header(0, (1, 2), 8) + x.numpy().tobytes()) == OK
    assert torch.equal(any_store.get_tensor(f"{uid}-mc"), x)
    meta, ptr, n, owner = kvpool.mooncake_api._serialize_tensor(t)
    assert meta == raw[:304] and n == 96 and ctypes.string_at(ptr, n) == raw[304:]
    assert torch.equal(kvpool.mooncake_api._deserialize_tensor(raw), t)
    with pytest.raises(ValueError, match="metadata"):
        kvpool.mooncake_api._deserialize_tensor(b"\0" * 304)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool",
                                   "float16", "uint8", "int32", "float8_e4m3fn"])
def test_put_get_tensor_dtypes(any_store, uid, dtype):
    dt = getattr(torch, dtype, None)
    if dt is None:
        pytest.skip(f"torch {torch.__version__} has no {dtype}")
    t = (torch.arange(24) % 5).to(dt).reshape(2, 3, 4)
    assert any_store.put_tensor(f"{uid}-d", t) == OK
    got = any_store.get_tensor(f"{uid}-d")
    assert got.dtype == dt and got.shape == t.shape
    assert torch.equal(got.view(torch.uint8), t.view(torch.uint8))


@needs_torch
def test_tensor_bad_inputs(any_store, uid):
    assert any_store.put_tensor(f"{uid}-c", torch.zeros(2, dtype=torch.complex64)) == INVALID
    assert "unsupported tensor dtype" in kvpool.last_error()
    assert any_store.is_exist(f"{uid}-c") == 0  # nothing written
    assert any_store.put_tensor(f"{uid}-n", [1, 2]) == INVALID
    nc = torch.arange(12.).reshape(3, 4).t()  # non-contiguous: stored as its logical value
    assert any_store.put_tensor(f"{uid}-nc", nc) == OK
    assert torch.equal(any_store.get_tensor(f"{uid}-nc"), nc)
    assert any_store.put(f"{uid}-raw", b"not a tensor") == OK
    assert any_store.get_tensor(f"{uid}-raw") is None
    assert "metadata" in kvpool.last_error()
    assert any_store.get_tensor(f"{uid}-missing") is None
    assert any_store.batch_put_tensor([f"{uid}-a"], []) == [INVALID]  # lengths differ


@needs_torch
def test_batch_pub_upsert_tensors(any_store, uid):
    ks = [f"{uid}-b{i}" for i in range(3)]
    ts = [torch.full((4,), float(i)) for i in range(3)]
    assert any_store.batch_put_tensor(ks, ts) == [OK] * 3
    got = any_store.batch_get_tensor(ks + [f"{uid}-none"])
    assert all(torch.equal(g, t) for g, t in zip(got, ts)) and got[3] is None
    assert any_store.put_tensor(ks[0], torch.zeros(4)) == OK  # put: no overwrite
    assert torch.equal(any_store.get_tensor(ks[0]), ts[0])
    assert any_store.upsert_tensor(ks[0], torch.ones(7)) == OK  # upsert: replaced, new size
    assert torch.equal(any_store.get_tensor(ks[0]), torch.ones(7))
    assert any_store.batch_upsert_tensor(ks[1:], [torch.zeros(1)] * 2) == [OK, OK]
    cfg = ReplicateConfig()
    assert any_store.pub_tensor(f"{uid}-p", ts[1], cfg) == OK
    assert any_store.batch_pub_tensor([f"{uid}-p2"], [ts[1]], config=cfg) == [OK]
    assert any_store.upsert_pub_tensor(f"{uid}-p", ts[2], cfg) == OK
    assert any_store.batch_upsert_pub_tensor([f"{uid}-p"], [ts[0]], cfg) == [OK]
    bad = ReplicateConfig()
    bad.preferred_segments = ["a", "b"]  # two segments for one replica
    assert any_store.pub_tensor(f"{uid}-p3", ts[0], bad) == INVALID
    assert any_store.batch_pub_tensor([f"{uid}-p3"], [ts[0]], bad) == [INVALID]


@needs_torch
def test_get_tensor_adds_no_copy_of_the_payload(any_store, uid):
    """get_tensor / batch_get_tensor hand back the bytes the fetch landed (the BufferHandle's)
    as the tensor: no Python-side copy of the 1 MiB payload (tracemalloc sees every bytes /
    bytearray the tensor layer would make)."""
    import tracemalloc
    t = torch.arange(256 * 1024, dtype=torch.float32)  # 1 MiB
    assert any_store.put_tensor(f"{uid}-big", t) == OK
    tracemalloc.start()
    try:
        got = any_store.get_tensor(f"{uid}-big")
        (batch,) = any_store.batch_get_tensor([f"{uid}-big"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert torch.equal(got, t) and torch.equal(batch, t)
    assert peak < (256 << 10), f"{peak} bytes allocated by Python for a 1 MiB get_tensor"
    got += 1  # the tensor is this process's own: writing it leaves the stored object alone
    assert torch.equal(any_store.get_tensor(f"{uid}-big"), t)


@needs_torch
def test_tensor_from_calls_check_registration_before_reading(pool, tmp_path):
    """put_tensor_from and the *_with_tp_from / *_with_parallelism_from calls refuse an address
    outside every registered buffer with INVALID_PARAMS before reading its header. Run in a
    child interpreter: reading an unmapped address would kill the test process."""
    import os
    import subprocess
    import textwrap
    script = textwrap.dedent(f"""
        import mmap, ctypes, kvpool
        s = kvpool.KVPoolStore()
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", "{pool.master_address}") == 0
        # A mapped page, then made inaccessible: any read of it faults.
        m = mmap.mmap(-1, 4096)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
        libc = ctypes.CDLL(None)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        assert libc.mprotect(addr, 4096, 0) == 0
        print(s.put_tensor_from("k1", addr, 400), s.upsert_tensor_from("k2", addr, 400),
              s.put_tensor_with_tp_from("k3", addr, 400, tp_size=2),
              s.put_tensor_with_parallelism_from("k4", addr, 400))
        print("registered" in kvpool.last_error())
        s.close()
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(INVALID)] * 4 + ["True"]


@needs_torch
def test_tensor_into_and_from_registered_memory(any_store, uid):
    keep, ptr = registered(any_store, 1 << 16)
    t = torch.arange(10, dtype=torch.int16)
    assert any_store.put_tensor(f"{uid}-i", t) == OK
    got = any_store.get_tensor_into(f"{uid}-i", ptr, 1 << 12)
    assert torch.equal(got, t)
    assert got.data_ptr() == ptr + 304  # aliases the buffer past the header
    assert any_store.get_tensor_into(f"{uid}-i", 0, 100) is None  # null pointer
    assert any_store.batch_get_tensor_into([f"{uid}-i"], [ptr], [1 << 12])[0].sum() == t.sum()
    assert any_store.batch_get_tensor_into([f"{uid}-i"], [], []) == [INVALID]  # Mooncake quirk
    # The buffer now holds header + bytes: store it again from there.
    n = 304 + 20
    assert any_store.put_tensor_from(f"{uid}-f", ptr, n) == OK
    assert torch.equal(any_store.get_tensor(f"{uid}-f"), t)
    assert any_store.put_tensor_from(f"{uid}-f2", ptr, n - 1) == INVALID  # size mismatch
    assert any_store.batch_put_tensor_from([f"{uid}-f3", f"{uid}-f4"], [ptr, ptr],
                                           [n, 10]) == [INVALID, INVALID]
    assert any_store.batch_put_tensor_from([], [], []) == []
    assert any_store.upsert_tensor_from(f"{uid}-f", ptr, n) == OK
    assert any_store.batch_upsert_tensor_from([f"{uid}-f"], [ptr], [n]) == [OK]


@needs_torch
def test_tensor_parallel_legacy(any_store, uid):
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    assert any_store.put_tensor_with_tp(f"{uid}-w", t, tp_rank=1, tp_size=2, split_dim=1) == OK
    s0 = any_store.get_tensor_with_tp(f"{uid}-w", tp_rank=0, tp_size=2)
    s1 = any_store.get_tensor_with_tp(f"{uid}-w", tp_rank=1, tp_size=2)
    assert torch.equal(torch.cat([s0, s1], 1), t)
    raw = any_store.get(f"{uid}-w_tp_1")
    assert struct.unpack_from("<I", raw, 16)[0] == 1  # SHARD layout
    assert struct.unpack_from("<2q", raw, 40) == (4, 6)  # global shape
    assert struct.unpack_from("<2q", raw, 104) == (4, 3)  # local shape
    assert struct.unpack_from("<I", raw, 168)[0] == 1  # one axis: TP rank 1 of 2, dim 1
    assert struct.unpack_from("<iiiii", raw, 176) == (1, 0, 1, 2, 1)
    assert any_store.put_tensor_with_tp(f"{uid}-x", t, tp_size=4, split_dim=1) == INVALID
    assert any_store.batch_put_tensor_with_tp([f"{uid}-b"], [t], tp_size=2) == [OK]
    assert len(any_store.batch_get_tensor_with_tp([f"{uid}-b"], tp_rank=1, tp_size=2)) == 1
    assert any_store.pub_tensor_with_tp(f"{uid}-p", t, ReplicateConfig(), tp_size=2) == OK
    assert any_store.batch_pub_tensor_with_tp([f"{uid}-p2"], [t], tp_size=1) == [OK]
    keep, ptr = registered(any_store, 1 << 16)
    got = any_store.get_tensor_with_tp_into(f"{uid}-w", ptr, 1 << 12, tp_rank=1, tp_size=2)
    assert torch.equal(got, s1)
    assert any_store.batch_get_tensor_with_tp_into([f"{uid}-w"], [ptr], [1 << 12], 0, 2)[0] \
        .shape == (4, 3)
    assert any_store.put_tensor(f"{uid}-full", t) == OK
    assert any_store.get_tensor_into(f"{uid}-full", ptr, 1 << 12) is not None
    n = 304 + t.numel() * 4
    assert any_store.put_tensor_with_tp_from(f"{uid}-pf", ptr, n, tp_size=2, split_dim=0) == OK
    assert any_store.get_tensor_with_tp(f"{uid}-pf", tp_rank=1, tp_size=2).shape == (2, 6)
    assert any_store.batch_put_tensor_with_tp_from([f"{uid}-pf2"], [ptr], [n], tp_size=2) == [OK]


@needs_torch
def test_tensor_parallelism_api(any_store, uid):
    from kvpool.mooncake_types import ParallelAxis, ReadTarget, TensorParallelism
    full = torch.arange(32, dtype=torch.float32).reshape(8, 4)

    def tp(rank, size=2, split_dim=0):
        a = ParallelAxis()
        a.kind, a.rank, a.size, a.split_dim = "TP", rank, size, split_dim
        p = TensorParallelism()
        p.axes = [a]
        return p

    for r in range(2):
        shard = full.chunk(2, 0)[r].contiguous()
        assert any_store.put_tensor_with_parallelism(f"{uid}-p", shard, parallelism=tp(r)) == OK
    target = ReadTarget()
    target.mode = "FULL"
    assert target.mode == "full"
    assert torch.equal(any_store.get_tensor_with_parallelism(f"{uid}-p", target), full)
    shard_t = ReadTarget()
    shard_t.mode, shard_t.parallelism = "shard", tp(1)
    assert torch.equal(any_store.get_tensor_with_parallelism(f"{uid}-p", shard_t), full[4:])
    with pytest.raises(RuntimeError):
        target.mode = "sideways"
    with pytest.raises(AttributeError):
        target.unknown = 1

    class Writer:
        rank, size, split_dim = 1, 2, 1

    assert any_store.put_tensor_with_parallelism(f"{uid}-w", full, writer_partition=Writer()) == OK
    # Only one writer of two has written: the full tensor cannot be assembled yet.
    assert any_store.get_tensor_with_parallelism(f"{uid}-w", target) is None
    Writer.rank = 0
    assert any_store.put_tensor_with_parallelism(f"{uid}-w", full, writer_partition=Writer()) == OK
    assert torch.equal(any_store.get_tensor_with_parallelism(f"{uid}-w", target), full)
    assert any_store.put_tensor_with_parallelism(f"{uid}-x", full, parallelism=tp(0),
                                                 writer_partition=Writer()) == INVALID
    assert any_store.put_tensor_with_parallelism(f"{uid}-plain", full) == OK
    assert torch.equal(any_store.get_tensor_with_parallelism(f"{uid}-plain"), full)
    assert any_store.upsert_tensor_with_parallelism(f"{uid}-plain", full * 2) == OK
    assert any_store.batch_put_tensor_with_parallelism([f"{uid}-b"], [full]) == [OK]
    assert any_store.batch_upsert_tensor_with_parallelism([f"{uid}-b"], [full]) == [OK]
    got = any_store.batch_get_tensor_with_parallelism([f"{uid}-b", f"{uid}-none"])
    assert torch.equal(got[0], full) and got[1] is None
    keep, ptr = registered(any_store, 1 << 16)
    into = any_store.get_tensor_with_parallelism_into(f"{uid}-p", ptr, 1 << 12, target)
    assert torch.equal(into, full) and into.data_ptr() == ptr + 304
    assert any_store.batch_get_tensor_with_parallelism_into([f"{uid}-p"], [ptr], [100],
                                                            [target]) == [None]  # too small
    n = 304 + full.numel() * 4
    assert any_store.put_tensor_with_parallelism_from(f"{uid}-pf", ptr, n) == OK
    assert any_store.upsert_tensor_with_parallelism_from(f"{uid}-pf", ptr, n) == OK
    assert any_store.batch_put_tensor_with_parallelism_from([f"{uid}-pf2"], [ptr], [n]) == [OK]
    assert any_store.batch_upsert_tensor_with_parallelism_from([f"{uid}-pf2"], [ptr],
                                                               [n - 1]) == [INVALID]


@needs_torch
def test_tensor_from_and_into_registered_memory_add_no_copy(any_store, uid):
    """put_tensor_with_tp_from / put_tensor_with_parallelism_from read the tensor where it lies
    in registered memory, and get_tensor_with_parallelism_into writes it there straight from
    the read tensor: no Python-side copy of the 1 MiB payload (tracemalloc sees them all)."""
    import tracemalloc
    t = torch.arange(256 * 1024, dtype=torch.float32).reshape(512, 512)  # 1 MiB
    keep, ptr = registered(any_store, 4 << 20)
    assert any_store.put_tensor(f"{uid}-src", t) == OK
    n = 304 + t.numel() * 4
    assert any_store.get_tensor_into(f"{uid}-src", ptr, n) is not None
    tracemalloc.start()
    try:
        assert any_store.put_tensor_with_tp_from(f"{uid}-tp", ptr, n, tp_size=2) == OK
        assert any_store.put_tensor_with_parallelism_from(f"{uid}-pf", ptr, n) == OK
        into = any_store.get_tensor_with_parallelism_into(f"{uid}-pf", ptr + (2 << 20), n)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert torch.equal(into, t)
    assert torch.equal(any_store.get_tensor_with_tp(f"{uid}-tp", tp_rank=1, tp_size=2), t[256:])
    assert peak < (256 << 10), f"{peak} bytes allocated by Python for 1 MiB tensors"


@needs_torch
def test_safetensors_calls_without_the_package(store, uid, tmp_path):
    try:
        import safetensors  # noqa: F401
        pytest.skip("safetensors installed")
    except ImportError:
        pass
    assert store.save_tensor_to_safetensor(f"{uid}-s", str(tmp_path / "f")) == INVALID
    assert "safetensors" in kvpool.last_error()
    assert store.load_tensor_from_safetensor(key=f"{uid}-s", file_name=str(tmp_path / "f")) \
        is None


@no_torch
def test_tensor_calls_without_torch_report_unavailable(store, uid):
    assert store.put_tensor(f"{uid}-t", object()) == NO_TORCH
    assert "torch" in kvpool.last_error()
    assert store.get_tensor(f"{uid}-t") is None
    assert store.batch_put_tensor(["a", "b"], [1, 2]) == [NO_TORCH, NO_TORCH]
    assert store.batch_get_tensor(["a"]) == [None]
    assert store.upsert_tensor("a", 1) == NO_TORCH
    assert store.put_tensor_with_tp("a", 1, tp_size=2) == NO_TORCH
    assert store.get_tensor_with_parallelism("a") is None
    assert store.get_tensor_into("a", 1, 1) is None
    assert store.batch_get_tensor_with_tp(["a", "b"]) == [None, None]
    assert store.put(f"{uid}-plain", b"v") == OK  # the rest of the module works


def test_every_tensor_method_has_mooncakes_parameters():
    expected = {
        "put_tensor": ["key", "tensor"], "get_tensor": ["key"],
        "batch_put_tensor": ["keys", "tensors_list"], "batch_get_tensor": ["keys"],
        "pub_tensor": ["key", "tensor", "config"],
        "get_tensor_into": ["key", "buffer_ptr", "size"],
        "batch_get_tensor_into": ["keys", "buffer_ptrs", "sizes"],
        "put_tensor_with_tp": ["key", "tensor", "tp_rank", "tp_size", "split_dim"],
        "batch_get_tensor_with_tp": ["base_keys", "tp_rank", "tp_size"],
        "pub_tensor_with_tp": ["key", "tensor", "config", "tp_rank", "tp_size", "split_dim"],
        "get_tensor_with_parallelism": ["key", "target"],
        "put_tensor_with_parallelism": ["key", "tensor", "parallelism", "config",
                                        "writer_partition"],
        "batch_put_tensor_with_parallelism_from": ["keys", "buffer_ptrs", "sizes",
                                                   "parallelisms", "config",
                                                   "writer_partitions"],
        "get_into_ranges": ["buffer_ptrs", "all_keys", "all_dst_offsets", "all_src_offsets",
                            "all_sizes"],
        "save_tensor_to_safetensor": ["key", "file_name"],
    }
    for name, params in expected.items():
        sig = inspect.signature(getattr(KVPoolStore, name))
        assert list(sig.parameters)[1:] == params, name


def test_context_manager_close_forgets_registered_ranges(pool):
    buf = np.zeros(4096, dtype=np.uint8)
    with KVPoolStore() as s:
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address) == 0
        assert s.register_buffer(buf.ctypes.data, buf.nbytes) == OK
        assert s._capacity(buf.ctypes.data) == 4096
    assert s._capacity(buf.ctypes.data) == 0  # a ranged call can no longer write there
    assert s.health_check() == 1


def test_buffer_pool_leases_registered_memory(any_store, uid):
    from kvpool.buffer_pool import BufferPool
    pool = BufferPool(any_store, max_bytes=1 << 18, min_size_class=1 << 16)
    with pool.acquire(100) as lease:
        lease.buffer[:5] = b"lease"
        assert any_store.put_from(f"{uid}-bp", lease.ptr, 5) == OK
    assert any_store.get(f"{uid}-bp") == b"lease"
    with pytest.raises(RuntimeError):
        lease.ptr  # noqa: B018  (used after release)
    held = [pool.acquire(1 << 16) for _ in range(4)]
    with pytest.raises(RuntimeError, match="exhausted"):
        pool.acquire(1, block=False)
    held[0].release()
    assert pool.buffer(1).size == 1  # the released region is reused
    pool.close()
    with pytest.raises(RuntimeError):
        BufferPool(KVPoolStore())
    with pytest.raises(RuntimeError):
        BufferPool(any_store, alignment=3)


def test_put_of_a_non_byte_buffer_stores_every_byte(any_store, uid):
    # Mooncake stores the item count (4 of 16 bytes here); kvpool stores the bytes.
    a = np.arange(4, dtype=np.float32)
    assert any_store.put(f"{uid}-f32", a) == OK
    assert any_store.get(f"{uid}-f32") == a.tobytes()
    assert any_store.upsert(f"{uid}-f32", a * 2) == OK
    assert any_store.get(f"{uid}-f32") == (a * 2).tobytes()
    assert any_store.put_batch([f"{uid}-f32b"], [a]) == OK
    assert any_store.get_size(f"{uid}-f32b") == 16


@pytest.mark.parametrize("tail", ["", "a", "ab*c", "ab+c", "ab?", "a{0,1}b", "a|b", "(a|b)c",
                                  "a.c", "a\\.c", "[ab]c"])
def test_list_keys_matches_like_a_search(store, uid, tail):
    import re
    names = ["a", "ac", "abc", "abbc", "bc", "a.c", "axc", "b", "zab"]
    keys = [f"{uid}/{n}" for n in names]
    assert store.put_batch(keys, [b"v"] * len(keys)) == OK
    pattern = f"^{uid}/{tail}"  # a literal prefix, then the tail (the master narrows by prefix)
    want = {k for k in keys if re.search(pattern, k)}
    # "^x/a|b" also matches other tests' keys containing "b": compare within this namespace.
    got = {k for k in store.list_keys(pattern) if k.startswith(f"{uid}/")}
    assert got == want, pattern
