"""Issue 16 from Python: keys that are not valid UTF-8 (item 4), bad inputs a careless caller
passes (item 9) and the client timeouts a caller can set (item 10), against real processes."""

import os
import signal
import socket
import time

import numpy as np
import pytest

import kvpool
from kvpool import ErrorCode, KVPoolStore, ReplicateConfig

OK = 0
BAD = b"\xff\xfe"  # never valid UTF-8


def registered(store, nbytes=1 << 20):
    buf = np.zeros(nbytes, dtype=np.uint8)
    assert store.register_buffer(buf.ctypes.data, buf.nbytes) == OK, kvpool.last_error()
    return buf, buf.ctypes.data


def value_of(key: bytes, n: int = 3000) -> bytes:
    return (key * (n // len(key) + 1))[:n]


# ---- item 4: keys are bytes end to end --------------------------------------------------------

def check_non_utf8_keys(s, uid):
    k1, k2 = BAD + f"{uid}-1".encode(), b"\x80\xc0\xaf" + f"{uid}-2".encode()
    good = f"{uid}-utf8-\u00e9"  # str keys are their UTF-8 bytes
    missing = BAD + f"{uid}-missing".encode()
    assert s.put(k1, value_of(k1)) == OK, kvpool.last_error()
    assert s.put_batch([k2, good], [value_of(k2), value_of(good.encode())]) == OK, \
        kvpool.last_error()
    assert s.get(k1) == value_of(k1)
    assert s.get(good.encode()) == value_of(good.encode())  # str and bytes: the same key
    assert s.is_exist(k2) == 1
    assert s.is_exist(missing) == 0
    assert s.batch_is_exist([k1, missing, good]) == [1, 0, 1]
    assert s.batch_exists_prefix([k1, k2, missing, good]) == 2
    assert s.get_size(k2) == 3000
    assert s.get_size(missing) == ErrorCode.OBJECT_NOT_FOUND
    msg = kvpool.last_error()  # used to raise UnicodeDecodeError
    assert isinstance(msg, str) and "\\xff\\xfe" in msg and f"{uid}-missing" in msg

    # Zero copy: one missing non-UTF-8 key fails alone, not the whole batch (was -900 for all).
    buf, base = registered(s)
    got = s.batch_get_into([k1, missing, k2, good], [base, base + 4096, base + 8192,
                                                     base + 12288], [4096] * 4)
    assert got == [3000, ErrorCode.OBJECT_NOT_FOUND, 3000, 3000], kvpool.last_error()
    assert bytes(buf[:3000]) == value_of(k1)
    assert bytes(buf[8192:11192]) == value_of(k2)
    zk = BAD + f"{uid}-zc".encode()
    buf[16384:20384] = np.frombuffer(value_of(zk, 4000), dtype=np.uint8)
    assert s.batch_put_from([zk], [base + 16384], [4000]) == [OK], kvpool.last_error()
    assert s.get_into(zk, base + 20480, 4096) == 4000
    assert bytes(buf[20480:24480]) == value_of(zk, 4000)
    assert s.get_into(missing, base, 4096) == ErrorCode.OBJECT_NOT_FOUND
    assert "\\xff\\xfe" in kvpool.last_error()
    assert s.get_batch([k1, missing]) == [value_of(k1), b""]

    assert s.batch_remove([k2, missing], True) == [OK, ErrorCode.OBJECT_NOT_FOUND]
    assert s.remove(k1, True) == OK  # force: the gets above hold read leases
    assert s.remove(missing) == ErrorCode.OBJECT_NOT_FOUND
    assert "\\xff\\xfe" in kvpool.last_error()
    assert s.batch_is_exist([k1, k2, good]) == [0, 0, 1]


def test_non_utf8_keys_embedded(store, uid):
    check_non_utf8_keys(store, uid)


def test_non_utf8_keys_standalone(pool, uid):
    s = KVPoolStore()
    assert s.setup_dummy(64 << 20, 16 << 20, pool.node_address(0)) == OK, kvpool.last_error()
    try:
        # Zero-copy calls in standalone mode need HostMemAllocator memory: only the copying
        # and metadata calls here (the C++ integration test covers the zero-copy ones).
        k = BAD + f"{uid}-sa".encode()
        missing = BAD + f"{uid}-sa-missing".encode()
        assert s.put(k, value_of(k)) == OK, kvpool.last_error()
        assert s.get_batch([k, missing]) == [value_of(k), b""]
        assert s.batch_is_exist([k, missing]) == [1, 0]
        assert s.get_size(missing) == ErrorCode.OBJECT_NOT_FOUND
        assert "\\xff\\xfe" in kvpool.last_error()
        assert s.batch_remove([k, missing], True) == [OK, ErrorCode.OBJECT_NOT_FOUND]
    finally:
        s.close()


def check_exists_key_forms(s, uid):
    """The exists queries read their keys in place (no copy per key): every form List[str]
    took before is still accepted and means the same key; what it refused it still refuses."""
    k = f"{uid}-forms-\u00e9"
    assert s.put(k, b"v" * 100) == OK, kvpool.last_error()
    raw = k.encode()
    missing = f"{uid}-forms-missing"
    assert s.batch_is_exist([k, raw, bytearray(raw), missing]) == [1, 1, 1, 0]
    assert s.batch_is_exist((k, missing)) == [1, 0]
    assert s.batch_is_exist([]) == []
    assert s.batch_exists_prefix([raw, k, missing, k]) == 2
    assert s.batch_exists_prefix((bytearray(raw),)) == 1
    for bad in (k, raw, [1], [k, None], None, ["\ud800"]):
        with pytest.raises(TypeError):
            s.batch_is_exist(bad)
        with pytest.raises(TypeError):
            s.batch_exists_prefix(bad)
    assert s.batch_is_exist(["", k]) == [ErrorCode.INVALID_KEY, 1]  # checked per key as before


def test_exists_key_forms_embedded(store, uid):
    check_exists_key_forms(store, uid)


def test_exists_key_forms_standalone(dummy_store, uid):
    check_exists_key_forms(dummy_store, uid)


def test_last_error_never_raises_on_invalid_utf8(store, uid):
    key = b"\xc3" + uid.encode() + b"\xff"  # a truncated sequence, then a stray byte
    assert store.get_size(key) == ErrorCode.OBJECT_NOT_FOUND
    msg = kvpool.last_error()
    assert "\\xc3" + uid + "\\xff" in msg


# ---- item 9: inputs refused clearly -----------------------------------------------------------

@pytest.mark.parametrize("n", [0, -1, 17, 2**32, 2**32 + 1, 2**40, 2**64, 2**100])
def test_replica_num_out_of_range_raises(n):
    with pytest.raises(ValueError, match=r"replica_num=.* is outside 1\.\.16"):
        ReplicateConfig(replica_num=n)
    c = ReplicateConfig()
    with pytest.raises(ValueError, match="outside 1..16"):
        c.replica_num = n
    assert c.replica_num == 1  # unchanged


def test_replica_num_type_and_limit(store, uid):
    with pytest.raises(TypeError):
        ReplicateConfig(replica_num=True)
    with pytest.raises(TypeError):
        ReplicateConfig(replica_num=2.0)
    assert ReplicateConfig(replica_num=np.int64(3)).replica_num == 3
    c = ReplicateConfig(replica_num=16)
    assert store.put(f"{uid}-16", b"v", c) == OK, kvpool.last_error()  # best effort: 1 segment


def test_wrapping_range_is_named_as_such(store, uid):
    registered(store)
    top = 2**64 - 4096
    assert store.get_into(f"{uid}-w", top, 8192) == ErrorCode.INVALID_PARAMS
    msg = kvpool.last_error()
    assert "runs past the end of the address space" in msg and "size=8192" in msg, msg
    assert store.put_from(f"{uid}-w", top, 8192) == ErrorCode.INVALID_PARAMS
    assert "runs past the end of the address space" in kvpool.last_error()
    assert store.register_buffer(top, 8192) == ErrorCode.INVALID_PARAMS
    assert "runs past the end of the address space" in kvpool.last_error()


def test_batch_bigger_than_a_frame_is_split(fresh_pool, uid):
    """17,000 keys of 4,000 bytes: 68 MB of keys, more than the 64 MiB frame limit. Each key
    gets its own answer (it was -900 'Connection reset by peer' for every key)."""
    store = KVPoolStore()
    assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                       fresh_pool.master_address) == OK, kvpool.last_error()
    n, klen = 17000, 4000  # 68,000,000 > 2**26 = 67,108,864
    keys = [f"{uid}-{i:06d}-".encode().ljust(klen, b"k") for i in range(n)]
    buf, base = registered(store, n * 8)
    buf[:] = 7
    t0 = time.monotonic()
    put = store.batch_put_from(keys, [base + 8 * i for i in range(n)], [8] * n)
    assert put == [OK] * n, (set(put), kvpool.last_error())
    assert store.batch_is_exist(keys) == [1] * n
    assert store.batch_exists_prefix(keys) == n
    buf[:] = 0
    got = store.batch_get_into(keys, [base + 8 * i for i in range(n)], [8] * n)
    assert got == [8] * n, (set(got), kvpool.last_error())
    assert (buf == 7).all()
    assert store.batch_remove(keys, True) == [OK] * n
    assert time.monotonic() - t0 < 60
    store.close()


def test_batch_bigger_than_a_frame_standalone(fresh_pool, uid):
    s = KVPoolStore()
    assert s.setup_dummy(64 << 20, 16 << 20, fresh_pool.node_address(0)) == OK, \
        kvpool.last_error()
    try:
        n, klen = 17000, 4000
        keys = [f"{uid}-s{i:06d}-".encode().ljust(klen, b"k") for i in range(n)]
        assert s.put_batch(keys, [b"12345678"] * n) == OK, kvpool.last_error()
        assert s.batch_is_exist(keys) == [1] * n
        assert s.batch_exists_prefix(keys) == n
        got = s.get_batch(keys)
        assert got == [b"12345678"] * n
        assert s.batch_remove(keys, True) == [OK] * n
    finally:
        s.close()


@pytest.mark.parametrize("address,needle", [
    ("", "empty host"),
    ("garbage", "missing port"),
    ("127.0.0.1", "missing port"),
    ("127.0.0.1:0", "port must be a number from 1 to 65535"),
    ("127.0.0.1:x", "port must be a number from 1 to 65535"),
    ("no-such-host.invalid:50052", "does not resolve"),
    ("192.0.2.1:50052", "is not an address of this machine"),  # TEST-NET-1: never local
])
def test_setup_dummy_parses_its_address_strictly(address, needle):
    s = KVPoolStore()
    assert s.setup_dummy(1 << 20, 1 << 20, address) == ErrorCode.INVALID_PARAMS
    assert needle in kvpool.last_error(), kvpool.last_error()
    assert s.health_check() == 1


def test_setup_dummy_host_must_be_this_machine_and_port_is_used(pool):
    port = pool.node_ports[0]
    for host in ("127.0.0.1", "localhost"):
        s = KVPoolStore()
        assert s.setup_dummy(1 << 20, 1 << 20, f"{host}:{port}") == OK, kvpool.last_error()
        s.close()
    # The port names the node's socket: another port is another (absent) node, not 50052.
    s = KVPoolStore()
    other = pool.node_ports[0] + 1 if pool.node_ports[0] < 65535 else 1
    assert s.setup_dummy(1 << 20, 1 << 20, f"127.0.0.1:{other}") in (
        ErrorCode.RPC_FAIL, ErrorCode.RPC_TIMEOUT)
    assert f"kvpool_node_{other}" in kvpool.last_error()


def test_unresolvable_local_hostname_is_refused(pool):
    s = KVPoolStore()
    rc = s.setup("no-such-host.invalid", "P2PHANDSHAKE", 16 << 20, 0, "tcp", "",
                 pool.master_address)
    assert rc == ErrorCode.INVALID_PARAMS
    msg = kvpool.last_error()
    assert "local_hostname" in msg and "no-such-host.invalid" in msg and "resolve" in msg, msg
    assert s.setup({"local_hostname": "no-such-host.invalid:7777",
                    "global_segment_size": 16 << 20,
                    "master_server_addr": pool.master_address}) == ErrorCode.INVALID_PARAMS
    assert "no-such-host.invalid" in kvpool.last_error()


# ---- item 10: the client's timeouts from Python -------------------------------------------------

def test_timeouts_are_validated(pool):
    s = KVPoolStore()
    for bad in (0, -1, True, 1.5, "5s", 10**12):
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address,
                       rpc_timeout_ms=bad) == ErrorCode.INVALID_PARAMS, bad
        assert "rpc_timeout_ms" in kvpool.last_error()
    assert s.setup({"master_server_addr": pool.master_address,
                    "transfer_timeout_ms": 0}) == ErrorCode.INVALID_PARAMS
    assert "transfer_timeout_ms" in kvpool.last_error()
    assert s.setup_dummy(1 << 20, 1 << 20, pool.node_address(0),
                         transfer_timeout_ms=-5) == ErrorCode.INVALID_PARAMS
    assert s.health_check() == 1


def test_a_sigstopped_node_stalls_a_get_for_transfer_timeout_ms(fresh_pool, uid):
    """A hung node (SIGSTOP) is not dead: its connections stay open and the kernel still
    accepts, so a read waits until the batch's transfer deadline and reports RPC_TIMEOUT.
    transfer_timeout_ms bounds that stall (30 s by default)."""
    s = KVPoolStore()
    assert s.setup({"master_server_addr": fresh_pool.master_address, "rpc_timeout_ms": 2000,
                    "transfer_timeout_ms": 1500}) == OK, kvpool.last_error()
    node = fresh_pool.nodes[0].popen
    try:
        assert s.put(f"{uid}-h", b"x" * 4096) == OK, kvpool.last_error()
        os.kill(node.pid, signal.SIGSTOP)
        end = time.monotonic() + 5  # the stop takes effect when the kernel next schedules it
        while time.monotonic() < end:
            with open(f"/proc/{node.pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "T":
                    break
            time.sleep(0.01)
        t0 = time.monotonic()
        rc = s.get_batch([f"{uid}-h"])
        took = time.monotonic() - t0
        assert rc == [b""]
        assert s.get_size(f"{uid}-h") == 4096  # metadata is the master's: unaffected
        buf, base = registered(s)
        t1 = time.monotonic()
        assert s.get_into(f"{uid}-h", base, 4096) == ErrorCode.RPC_TIMEOUT, kvpool.last_error()
        took2 = time.monotonic() - t1
        assert 1.0 < took < 5 and 1.0 < took2 < 5, (took, took2)
    finally:
        os.kill(node.pid, signal.SIGCONT)
        s.close()
