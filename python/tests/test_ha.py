"""Master high availability from Python: setup(...) and setup(dict) given an etcd:// address
(Mooncake's convention) find the leader through a real etcd; SGLang's MOONCAKE_MASTER carries it
unchanged. Skipped with a message when etcd is not installed (scripts/install-deps.sh installs
it)."""

import shutil
import time

import pytest

import kvpool
from conftest import Proc, etcd_server, free_port, wait_for_port
from kvpool import ErrorCode, KVPoolStore
from kvpool.config import KVPoolStoreConfig

ETCD = shutil.which("etcd")
pytestmark = pytest.mark.skipif(ETCD is None, reason="etcd is not installed (apt-get install "
                                "etcd-server): master HA tests need a real etcd")


@pytest.fixture
def ha_pool():
    """A one-member etcd, one --enable_ha master and one node that knows only etcd://."""
    procs = []
    with etcd_server() as client:
        try:
            address = f"etcd://127.0.0.1:{client}/py"
            master_port = free_port()
            procs.append(Proc(["master", "--rpc_host", "127.0.0.1", "--rpc_port", str(master_port),
                               "--metrics_port", "0", "--enable_ha", "true", "--etcd_endpoints",
                               f"127.0.0.1:{client}", "--cluster_id", "py",
                               "--ha_restore_wait_ms", "0"], "master"))
            assert wait_for_port(master_port), procs[0].output()
            procs.append(Proc(["node", "--host", "127.0.0.1", "--port", str(free_port()),
                               "--master_server_address", address, "--global_segment_size", "32MB",
                               "--log_level", "warn"], "node"))
            yield address
        finally:
            for p in procs:
                p.stop()


def wait_for_segment(store):
    end = time.monotonic() + 20
    while time.monotonic() < end:
        s = store.stat()
        if isinstance(s, dict) and len(s.get("segments", [])) == 1:
            return
        time.sleep(0.05)
    raise AssertionError("the node did not mount at the leader")


def test_setup_with_etcd_address_puts_and_gets(ha_pool):
    s = KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", ha_pool) == 0, kvpool.last_error()
    try:
        wait_for_segment(s)
        assert s.put("ha-py", b"bytes through the leader") == 0, kvpool.last_error()
        assert s.get("ha-py") == b"bytes through the leader"
    finally:
        s.close()
    d = KVPoolStore()
    assert d.setup({"master_server_address": ha_pool, "local_hostname": "127.0.0.1"}) == 0, \
        kvpool.last_error()
    try:
        assert d.get("ha-py") == b"bytes through the leader"
    finally:
        d.close()


def test_malformed_etcd_address_is_refused_naming_it():
    s = KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                   "etcd://127.0.0.1:2379;;x") == ErrorCode.INVALID_PARAMS
    assert "etcd://host:port" in kvpool.last_error()


def test_sglang_config_carries_etcd_address(monkeypatch):
    monkeypatch.setenv("MOONCAKE_MASTER", "etcd://10.0.0.1:2379;10.0.0.2:2379/prod")
    c = KVPoolStoreConfig.from_env(__import__("os").environ)
    assert c.master_server_address == "etcd://10.0.0.1:2379;10.0.0.2:2379/prod"
