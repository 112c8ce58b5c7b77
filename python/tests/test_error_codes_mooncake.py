"""The codes Mooncake returns beyond its first list, as a Python caller meets them (reference
section 12): -714 OBJECT_REPLICA_BUSY for an upsert of an object a reader holds (a remove of it
stays -706 OBJECT_HAS_LEASE), in embedded and standalone mode, with the master's error metric
labelled by name. (-1400 and -1601: test_mooncake_full_api.py; the numbers: test_store_api.py.)
"""

import pathlib
import subprocess
import urllib.request

import pytest

import kvpool
from conftest import Pool, free_port, master_has_flag

BUILD = pathlib.Path(kvpool.__file__).resolve().parents[2]
LEASE_READER = BUILD / "tests" / "integration" / "lease_reader"


@pytest.fixture(scope="module")
def lease_pool():
    """A pool whose read leases last 60 s, so a reader that never releases keeps holding."""
    metrics = free_port() if master_has_flag("--metrics_port") else 0
    p = Pool(master_flags=("--default_kv_lease_ttl", "60000"), metrics_port=metrics)
    try:
        p.add_node("64MB")
        yield p
    finally:
        p.stop()


def hold(pool, prefix, count):
    """A process holding read leases on prefix/0 .. prefix/count-1 until killed."""
    proc = subprocess.Popen([str(LEASE_READER), "hold", pool.master_address, prefix, str(count)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    if not line.startswith("HELD"):
        proc.kill()
        proc.wait(timeout=10)
        raise AssertionError(f"lease_reader did not hold: {line}{proc.stdout.read()}")
    return proc


@pytest.mark.skipif(not LEASE_READER.exists(), reason="lease_reader not built (tests off)")
@pytest.mark.parametrize("mode", ["embedded", "standalone"])
def test_upsert_under_a_reader_is_object_replica_busy(lease_pool, uid, mode):
    if mode == "standalone" and not kvpool.HAS_STANDALONE:
        pytest.skip("built without standalone mode")
    s = kvpool.KVPoolStore()
    rc = (s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", lease_pool.master_address)
          if mode == "embedded" else s.setup_dummy(64 << 20, 16 << 20, lease_pool.node_address(0)))
    assert rc == 0, kvpool.last_error()
    prefix = f"{uid}-{mode}"
    try:
        assert s.put(f"{prefix}/0", b"old" * 100) == 0
        assert s.put(f"{prefix}/1", b"two" * 100) == 0
        reader = hold(lease_pool, prefix, 2)
        try:
            assert s.upsert(f"{prefix}/0", b"new" * 100) == -714
            assert s.upsert(f"{prefix}/0", b"new") == -714  # any size
            assert "leased by a reader" in kvpool.last_error()
            assert s.upsert_batch([f"{prefix}/0"], [b"x"]) == -714
            assert s.batch_upsert_from_buffers([f"{prefix}/0", f"{prefix}/1"],
                                               [b"x", b"y"]) == [-714, -714]
            assert s.remove(f"{prefix}/0") == -706  # Mooncake's remove code stays
            assert s.get(f"{prefix}/0") == b"old" * 100  # nothing was replaced
        finally:
            reader.kill()
            reader.wait(timeout=10)
        assert s.remove(f"{prefix}/0", True) == 0 and s.remove(f"{prefix}/1", True) == 0
    finally:
        s.close()
    if lease_pool.metrics_port:
        body = urllib.request.urlopen(
            f"http://127.0.0.1:{lease_pool.metrics_port}/metrics", timeout=5).read().decode()
        assert 'method="put_start",code="OBJECT_REPLICA_BUSY"' in body, body
