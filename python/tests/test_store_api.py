"""The Mooncake-compatible store API against real kvpool processes: every method of
../shared/reference/mooncake-python-api.md, its success value and its error returns."""

import socket
import threading
import time

import numpy as np
import pytest

import kvpool
from kvpool import ErrorCode, KVPoolStore, ReplicateConfig, SoftPinAction

OK = 0


def registered(store, nbytes=1 << 20):
    """A numpy buffer registered with `store` (kept alive by the caller)."""
    buf = np.zeros(nbytes, dtype=np.uint8)
    assert store.register_buffer(buf.ctypes.data, buf.nbytes) == OK, kvpool.last_error()
    return buf, buf.ctypes.data


# ---- error table ----------------------------------------------------------------------------

REFERENCE_CODES = {
    "OK": 0, "INTERNAL_ERROR": -1, "BUFFER_OVERFLOW": -10, "SHARD_INDEX_OUT_OF_RANGE": -100,
    "SEGMENT_NOT_FOUND": -101, "SEGMENT_ALREADY_EXISTS": -102, "CLIENT_NOT_FOUND": -103,
    "NO_AVAILABLE_HANDLE": -200, "INVALID_VERSION": -300, "INVALID_KEY": -400,
    "WRITE_FAIL": -500, "INVALID_PARAMS": -600, "ILLEGAL_CLIENT": -601, "INVALID_WRITE": -700,
    "INVALID_READ": -701, "INVALID_REPLICA": -702, "REPLICA_IS_NOT_READY": -703,
    "OBJECT_NOT_FOUND": -704, "OBJECT_ALREADY_EXISTS": -705, "OBJECT_HAS_LEASE": -706,
    "LEASE_EXPIRED": -707,
    "OBJECT_HAS_REPLICATION_TASK": -708, "OBJECT_REPLICA_BUSY": -714, "TASK_NOT_FOUND": -1400,
    "DFS_SERVICE_UNAVAILABLE": -1601, "REPLICA_NOT_FOUND": -710, "REPLICA_IS_GONE": -712,
    "TRANSFER_FAIL": -800, "CHECKSUM_MISMATCH": -801, "RPC_FAIL": -900, "RPC_TIMEOUT": -901,
    "ETCD_OPERATION_ERROR": -1000, "NOT_LEADER": -1050,
    "UNAVAILABLE_IN_CURRENT_STATUS": -1010, "UNAVAILABLE_IN_CURRENT_MODE": -1011,
    "NOT_SUPPORTED": -1012, "FILE_NOT_FOUND": -1100, "FILE_OPEN_FAIL": -1101,
    "FILE_READ_FAIL": -1102, "FILE_WRITE_FAIL": -1103, "TENANT_QUOTA_EXCEEDED": -1700,
}


def test_error_codes_match_mooncake_numbers():
    assert {c.name: int(c) for c in ErrorCode} == REFERENCE_CODES
    assert kvpool.error_name(-704) == "OBJECT_NOT_FOUND"
    assert kvpool.error_name(-12345) == "UNKNOWN_ERROR(-12345)"


def test_names_and_aliases():
    assert kvpool.MooncakeDistributedStore is KVPoolStore
    assert kvpool.MooncakeHostMemAllocator is kvpool.HostMemAllocator
    assert issubclass(kvpool.KVPoolError, RuntimeError)


# ---- set-up ---------------------------------------------------------------------------------

def test_calls_before_setup_report_unavailable():
    s = KVPoolStore()
    assert s.put("k", b"v") == ErrorCode.UNAVAILABLE_IN_CURRENT_STATUS
    assert "not set up" in kvpool.last_error()
    assert s.batch_is_exist(["a", "b"]) == [ErrorCode.UNAVAILABLE_IN_CURRENT_STATUS] * 2
    assert s.get("k") == b""
    assert s.health_check() == 1
    assert s.get_hostname() == ""
    assert s.close() == OK


def test_setup_embedded_with_segment(pool):
    s = KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", "16mb", 16 << 20, "tcp", "",
                   pool.master_address) == OK, kvpool.last_error()
    try:
        host = s.get_hostname()
        assert host.startswith("127.0.0.1:") and int(host.split(":")[1]) > 0
        assert any(seg["name"] == host for seg in s.stat()["segments"])
        assert s.health_check() == 0
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                       pool.master_address) == ErrorCode.UNAVAILABLE_IN_CURRENT_STATUS
    finally:
        assert s.close() == OK
    assert s.health_check() == 1
    assert s.put("k", b"v") == ErrorCode.UNAVAILABLE_IN_CURRENT_STATUS
    assert s.close() == OK


def test_setup_local_hostname_with_port(pool):
    from conftest import free_port

    port = free_port()
    s = KVPoolStore()
    assert s.setup(f"127.0.0.1:{port}", "P2PHANDSHAKE", "4mb", 0, "tcp", "",
                   pool.master_address) == OK, kvpool.last_error()
    assert s.get_hostname() == f"127.0.0.1:{port}"
    s.close()


def test_setup_accepts_mooncake_positional_call_with_engine(pool):
    # SGLang's stock backend passes 8 positionals, the 8th its (unused here) transfer engine.
    s = KVPoolStore()
    assert s.setup("localhost", "http://127.0.0.1:8080/metadata", 0, 16 << 20, "tcp",
                   "mlx5_0", pool.master_address, None) == OK
    s.close()


@pytest.mark.parametrize("kwargs, code", [
    (dict(protocol="rdma"), ErrorCode.NOT_SUPPORTED),
    (dict(protocol="udp"), ErrorCode.INVALID_PARAMS),
    (dict(global_segment_size=-1), ErrorCode.INVALID_PARAMS),
    (dict(global_segment_size="50%"), ErrorCode.INVALID_PARAMS),
    (dict(local_hostname=""), ErrorCode.INVALID_PARAMS),
    (dict(local_hostname="127.0.0.1:99999"), ErrorCode.INVALID_PARAMS),
    (dict(local_hostname="127.0.0.1:"), ErrorCode.INVALID_PARAMS),
    (dict(local_hostname="[::1"), ErrorCode.INVALID_PARAMS),
    (dict(master_server_addr=""), ErrorCode.INVALID_PARAMS),
    (dict(master_server_addr="127.0.0.1:notaport"), ErrorCode.INVALID_PARAMS),
    (dict(tenant_id="bad\0tenant"), ErrorCode.INVALID_PARAMS),
])
def test_setup_refuses_bad_arguments(pool, kwargs, code):
    args = dict(local_hostname="127.0.0.1", metadata_server="P2PHANDSHAKE",
                global_segment_size=0, local_buffer_size=0, protocol="tcp", rdma_devices="",
                master_server_addr=pool.master_address)
    args.update(kwargs)
    s = KVPoolStore()
    assert s.setup(**args) == code
    assert kvpool.last_error()
    assert s.health_check() == 1


def test_setup_unreachable_master_fails_fast():
    s = KVPoolStore()
    with socket.socket() as sock:  # bound, not listening: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        start = time.monotonic()
        rc = s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", f"127.0.0.1:{port}")
    assert rc in (ErrorCode.RPC_FAIL, ErrorCode.RPC_TIMEOUT)
    assert time.monotonic() - start < 10


def test_setup_releases_the_gil_while_waiting():
    """A master that accepts but never answers: setup waits out its deadline without the GIL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        port = sock.getsockname()[1]
        ticks = [0]
        stop = threading.Event()

        def spin():
            while not stop.is_set():
                ticks[0] += 1
                time.sleep(0.001)

        t = threading.Thread(target=spin)
        t.start()
        try:
            start = time.monotonic()
            rc = KVPoolStore().setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                                     f"127.0.0.1:{port}")
            elapsed = time.monotonic() - start
        finally:
            stop.set()
            t.join()
    assert rc in (ErrorCode.RPC_TIMEOUT, ErrorCode.RPC_FAIL)
    assert elapsed < 15
    # ~1 tick per ms while the call waited: only possible with the GIL released.
    assert ticks[0] > elapsed * 1000 * 0.05, (ticks[0], elapsed)


def test_setup_with_dict(pool):
    s = KVPoolStore()
    assert s.setup({"local_hostname": "127.0.0.1", "global_segment_size": "8 MB",
                    "local_buffer_size": "4mb", "protocol": "tcp",
                    "master_server_address": pool.master_address}) == OK, kvpool.last_error()
    assert s.get_hostname().startswith("127.0.0.1:")
    s.close()


def test_setup_with_verify_checksum(pool, uid):
    s = KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address,
                   verify_checksum=True) == OK, kvpool.last_error()
    assert s.put(f"{uid}-v", b"checked bytes") == OK
    assert s.get(f"{uid}-v") == b"checked bytes"
    s.close()
    d = KVPoolStore()
    assert d.setup({"master_server_addr": pool.master_address, "verify_checksum": True}) == OK, \
        kvpool.last_error()
    assert d.get(f"{uid}-v") == b"checked bytes"
    d.close()


@pytest.mark.parametrize("config, needle", [
    ({"master_server_addr": "x:1", "global_segment_size": "50%"}, "global_segment_size"),
    ({"master_server_addr": "x:1", "globl_segment_size": 1}, "unknown key 'globl_segment_size'"),
    ({"global_segment_size": 0}, "master_server_addr"),
    ({"master_server_addr": 5}, "wrong type"),
    ({"master_server_addr": "x:1", "local_buffer_size": True}, "not a bool"),
])
def test_setup_dict_refuses_bad_config(config, needle):
    s = KVPoolStore()
    assert s.setup(config) == ErrorCode.INVALID_PARAMS
    assert needle in kvpool.last_error()


def test_setup_dummy_needs_a_node(pool):
    s = KVPoolStore()
    rc = s.setup_dummy(1 << 20, 1 << 20, "127.0.0.1:1")
    assert rc in (ErrorCode.RPC_FAIL, ErrorCode.RPC_TIMEOUT, ErrorCode.INVALID_PARAMS)
    assert kvpool.last_error()
    assert s.setup_dummy(-5, 0, pool.node_address(0)) == ErrorCode.INVALID_PARAMS
    assert s.setup_dummy(1 << 20, "1mb", pool.node_address(0)) == OK, kvpool.last_error()
    assert s.is_standalone()
    assert s.get_hostname() == pool.node_address(0)
    assert s.health_check() == 0
    s.close()


def test_context_manager_closes(pool):
    with KVPoolStore() as s:
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address) == 0
    assert s.health_check() == 1


# ---- registration and zero-copy calls --------------------------------------------------------

def test_register_buffer_errors(store):
    buf = np.zeros(4096, dtype=np.uint8)
    assert store.register_buffer(buf.ctypes.data, 0) == ErrorCode.INVALID_PARAMS
    assert store.register_buffer(0, 4096) == ErrorCode.INVALID_PARAMS
    assert store.unregister_buffer(buf.ctypes.data) == ErrorCode.INVALID_PARAMS
    assert store.register_buffer(buf.ctypes.data, 4096) == OK
    assert store.register_buffer(buf.ctypes.data, 4096) == OK  # again: harmless
    assert store.unregister_buffer(buf.ctypes.data) == OK
    with pytest.raises(TypeError):
        store.register_buffer(-1, 10)


def test_put_from_get_into_roundtrip_and_errors(store, uid):
    buf, base = registered(store)
    payload = np.random.default_rng(1).integers(0, 256, 5000, dtype=np.uint8)
    buf[:5000] = payload
    key = f"{uid}-obj"
    assert store.put_from(key, base, 5000) == OK
    assert store.put_from(key, base + 8192, 5000) == OK  # exists: success, not rewritten
    assert store.get_into(key, base + 100000, 5000) == 5000
    assert np.array_equal(buf[100000:105000], payload)
    assert store.get_into(key, base + 200000, 4999) == ErrorCode.BUFFER_OVERFLOW
    assert store.get_into(f"{uid}-missing", base, 100) == ErrorCode.OBJECT_NOT_FOUND
    # Addresses outside every registered region are refused before any byte moves.
    other = np.zeros(8192, dtype=np.uint8)
    assert store.get_into(key, other.ctypes.data, 8192) == ErrorCode.INVALID_PARAMS
    assert "register" in kvpool.last_error()
    assert store.put_from(f"{uid}-x", 0x1000, 10) == ErrorCode.INVALID_PARAMS
    assert store.put_from(f"{uid}-y", base + (1 << 20) - 10, 20) == ErrorCode.INVALID_PARAMS
    assert store.put_from(f"{uid}-z", base, 0) == ErrorCode.INVALID_PARAMS
    assert store.put_from("", base, 10) == ErrorCode.INVALID_KEY
    assert store.put_from("k" * 5000, base, 10) == ErrorCode.INVALID_KEY


def test_batch_put_from_get_into_per_key_results(store, uid):
    buf, base = registered(store)
    rng = np.random.default_rng(2)
    buf[:4096 * 3] = rng.integers(0, 256, 4096 * 3, dtype=np.uint8)
    keys = [f"{uid}-{i}" for i in range(3)]
    assert store.batch_put_from(keys, [base, base + 4096, base + 8192], [4096] * 3) == [OK] * 3
    dst = base + 65536
    got = store.batch_get_into(keys + [f"{uid}-none"], [dst, dst + 4096, dst + 8192, dst + 12288],
                               [4096, 4096, 100, 4096])
    assert got == [4096, 4096, ErrorCode.BUFFER_OVERFLOW, ErrorCode.OBJECT_NOT_FOUND]
    assert np.array_equal(buf[65536:65536 + 8192], buf[:8192])
    assert store.batch_put_from(keys, [base], [1, 2, 3]) == [ErrorCode.INVALID_PARAMS] * 3
    assert store.batch_get_into(keys, [dst] * 3, [10]) == [ErrorCode.INVALID_PARAMS] * 3
    assert store.batch_put_from([], [], []) == []


def test_multi_buffer_gather_and_scatter(store, uid):
    buf, base = registered(store)
    rng = np.random.default_rng(3)
    parts = [(0, 1000), (5000, 3000), (20000, 24)]
    for off, n in parts:
        buf[off:off + n] = rng.integers(0, 256, n, dtype=np.uint8)
    key = f"{uid}-multi"
    assert store.batch_put_from_multi_buffers([key], [[base + o for o, _ in parts]],
                                              [[n for _, n in parts]]) == [OK]
    assert store.get_size(key) == 4024
    expect = np.concatenate([buf[o:o + n] for o, n in parts])
    dst = [(100000, 24), (200000, 4000)]
    got = store.batch_get_into_multi_buffers([key], [[base + o for o, _ in dst]],
                                             [[n for _, n in dst]])
    assert got == [4024]
    assert np.array_equal(np.concatenate([buf[o:o + n] for o, n in dst]), expect)
    assert store.batch_get_into_multi_buffers([key], [[base]], [[10]]) == \
        [ErrorCode.BUFFER_OVERFLOW]
    assert store.batch_put_from_multi_buffers([f"{uid}-bad"], [[base, base]], [[10]]) == \
        [ErrorCode.INVALID_PARAMS]


def test_upsert_from_replaces(store, uid):
    buf, base = registered(store)
    key = f"{uid}-up"
    buf[:4] = list(b"old!")
    assert store.put_from(key, base, 4) == OK
    buf[:6] = list(b"newer!")
    assert store.upsert_from(key, base, 6) == OK
    assert store.get_size(key) == 6
    assert store.batch_upsert_from([key, f"{uid}-up2"], [base, base], [6, 2]) == [OK, OK]
    # A read's lease ends with the read (unlike Mooncake's fixed 10 s): the upsert goes through.
    assert store.get(key) == b"newer!"
    assert store.upsert_from(key, base, 3) == OK
    assert store.get_size(key) == 3


# ---- copying calls --------------------------------------------------------------------------

def test_put_get_bytes_and_buffers(store, uid):
    k = f"{uid}-p"
    assert store.put(k, b"hello") == OK
    assert store.get(k) == b"hello"
    assert store.put(f"{uid}-ba", bytearray(b"ba")) == OK
    assert store.put(f"{uid}-np", np.arange(10, dtype=np.int32)) == OK
    assert store.get_size(f"{uid}-np") == 40
    assert store.get(f"{uid}-missing") == b""
    assert "OBJECT_NOT_FOUND" in kvpool.last_error()
    with pytest.raises(TypeError):
        store.put(f"{uid}-s", "a str is not bytes")
    with pytest.raises(TypeError):
        store.put(f"{uid}-nc", np.arange(10)[::2])  # not contiguous


def test_put_parts_put_batch_get_batch_get_buffer(store, uid):
    assert store.put_parts(f"{uid}-parts", b"ab", bytearray(b"cd"), memoryview(b"ef")) == OK
    assert store.get(f"{uid}-parts") == b"abcdef"
    assert store.put_parts(f"{uid}-parts2", b"x", config=ReplicateConfig()) == OK
    with pytest.raises(TypeError):
        store.put_parts(f"{uid}-parts3", b"x", conf=None)
    keys = [f"{uid}-b{i}" for i in range(3)]
    assert store.put_batch(keys, [b"1", b"22", b"333"]) == OK
    assert store.get_batch(keys + [f"{uid}-none"]) == [b"1", b"22", b"333", b""]
    assert store.put_batch(keys, [b"1"]) == ErrorCode.INVALID_PARAMS
    assert store.put_batch([f"{uid}-e", ""], [b"1", b"2"]) == ErrorCode.INVALID_KEY
    h = store.get_buffer(keys[2])
    assert h is not None and len(h) == 3 and h.size() == 3 and bytes(memoryview(h)) == b"333"
    assert np.frombuffer(h, dtype=np.uint8).tolist() == [51, 51, 51]
    assert store.get_buffer(f"{uid}-none") is None


def test_upsert_copying(store, uid):
    k = f"{uid}-u"
    assert store.upsert(k, b"first") == OK
    assert store.upsert(k, b"second") == OK
    assert store.get(k) == b"second"
    assert store.upsert_batch([f"{uid}-u1", f"{uid}-u2"], [b"a", b"bb"]) == OK
    assert store.get_size(f"{uid}-u2") == 2
    assert store.upsert(f"{uid}-empty", b"") == ErrorCode.INVALID_PARAMS


def test_copying_batch_extensions(store, uid):
    keys = [f"{uid}-c0", f"{uid}-c1"]
    a = np.arange(100, dtype=np.uint8)
    assert store.batch_put_from_buffers(keys, [a, [a[:10], a[10:30]]]) == [OK, OK]
    out0 = np.zeros(100, dtype=np.uint8)
    out1a, out1b = np.zeros(5, dtype=np.uint8), np.zeros(40, dtype=np.uint8)
    assert store.batch_get_into_buffers(keys, [out0, [out1a, out1b]]) == [100, 30]
    assert np.array_equal(out0, a)
    assert np.array_equal(np.concatenate([out1a, out1b])[:30], a[:30])
    small = np.zeros(10, dtype=np.uint8)
    assert store.batch_get_into_buffers(keys[:1], [small]) == [ErrorCode.BUFFER_OVERFLOW]
    with pytest.raises(TypeError):
        store.batch_get_into_buffers(keys[:1], [b"read-only bytes"])


# ---- queries and removal --------------------------------------------------------------------

def test_exists_size_prefix(store, uid):
    keys = [f"{uid}-e{i}" for i in range(4)]
    assert store.put_batch(keys[:2] + keys[3:], [b"a", b"b", b"d"]) == OK
    assert store.is_exist(keys[0]) == 1
    assert store.is_exist(keys[2]) == 0
    assert store.is_exist("") == ErrorCode.INVALID_KEY
    assert store.batch_is_exist(keys) == [1, 1, 0, 1]
    assert store.batch_exists_prefix(keys) == 2
    assert store.batch_exists_prefix([]) == 0
    assert store.batch_exists_prefix(["", keys[0]]) == ErrorCode.INVALID_KEY
    assert store.get_size(keys[3]) == 1
    assert store.get_size(keys[2]) == ErrorCode.OBJECT_NOT_FOUND


def test_remove_family(store, uid):
    keys = [f"{uid}-r{i}" for i in range(3)]
    assert store.put_batch(keys, [b"1", b"2", b"3"]) == OK
    assert store.remove(keys[0]) == OK
    assert store.remove(keys[0]) == ErrorCode.OBJECT_NOT_FOUND
    assert store.get(keys[1]) == b"2"  # its read lease ends with the read
    assert store.remove(keys[1]) == OK
    assert store.batch_remove([keys[2], f"{uid}-none"]) == [OK, ErrorCode.OBJECT_NOT_FOUND]
    assert store.remove_by_regex("[unclosed") == ErrorCode.INVALID_PARAMS
    assert store.remove_by_regex(f"^{uid}-.*") == 0  # all removed above: a count, not a code


def test_remove_all_counts(fresh_pool):
    s = KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", fresh_pool.master_address) == 0
    try:
        assert s.put_batch([f"k{i}" for i in range(5)], [b"v"] * 5) == OK
        assert s.get("k0") == b"v"  # its read lease ends with the read
        assert s.remove_all() == 5
        assert s.remove_all(force=True) == 0
        assert s.remove_all() == 0
    finally:
        s.close()


def test_health_check_reports_dead_master(fresh_pool):
    s = KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", fresh_pool.master_address) == 0
    assert s.health_check() == 0
    fresh_pool.master.stop()
    start = time.monotonic()
    assert s.health_check() == 2
    assert time.monotonic() - start < 10
    assert s.put("k", b"v") in (ErrorCode.RPC_FAIL, ErrorCode.RPC_TIMEOUT)
    s.close()


# ---- ReplicateConfig ------------------------------------------------------------------------

def test_replicate_config_fields_and_generations(store, uid):
    c = ReplicateConfig()
    assert (c.replica_num, c.with_soft_pin, c.with_hard_pin, c.preferred_segments,
            c.prefer_alloc_in_same_node, c.soft_pin_action, c.soft_pin_ttl_ms) == \
        (1, False, False, [], False, SoftPinAction.PRESERVE, None)
    c.with_soft_pin = True  # older generation
    c.soft_pin_action = SoftPinAction.ENABLE  # newer generation
    c.soft_pin_ttl_ms = 1000
    c.group_ids = ["g"]
    c.preferred_segment = "127.0.0.1:1"
    assert "SoftPinAction.ENABLE" in repr(c)
    k = ReplicateConfig(replica_num=2, with_hard_pin=True)
    assert k.replica_num == 2 and k.with_hard_pin
    # A preferred segment that does not exist is a preference, not a requirement.
    assert store.put(f"{uid}-rc", b"v", c) == OK
    with pytest.raises(ValueError, match="outside 1..16"):  # was INVALID_PARAMS at put time
        ReplicateConfig(replica_num=0)
    with pytest.raises(TypeError):  # uint64 as Mooncake's (was INVALID_PARAMS at put time)
        ReplicateConfig(soft_pin_ttl_ms=-1)


def test_concurrent_threads_share_a_store(store, uid):
    errors = []

    def work(t):
        for i in range(20):
            k = f"{uid}-t{t}-{i}"
            if store.put(k, bytes([t, i])) != OK or store.get(k) != bytes([t, i]):
                errors.append((k, kvpool.last_error()))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
