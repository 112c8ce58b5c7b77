"""Tenants from Python (docs/security.md, "Tenants"): tenant_id and a tenant key file through
setup(...) and setup(config); each tenant sees only its own objects, and a tenant key proves its
own tenant only."""

import subprocess

import numpy as np
import pytest

import kvpool
from kvpool import ErrorCode, KVPoolStore

from conftest import Pool, kvpool_binary, master_has_flag

pytestmark = pytest.mark.skipif(not master_has_flag("--tenant_quota"),
                                reason="this kvpool build has no tenants")


@pytest.fixture
def tenant_pool(monkeypatch, tmp_path):
    # The pool secret reaches the master and the node; tenant stores use their tenant keys.
    monkeypatch.setenv("KVPOOL_AUTH_SECRET", "py-tenant-secret")
    monkeypatch.delenv("KVPOOL_TENANT_KEY", raising=False)
    monkeypatch.delenv("KVPOOL_TENANT_KEY_FILE", raising=False)
    p = Pool()
    try:
        p.add_node("64MB")
        yield p, tmp_path
    finally:
        p.stop()


def tenant_key_file(tmp_path, tenant: str) -> str:
    path = tmp_path / f"{tenant}.key"
    subprocess.run([kvpool_binary(), "tenant-key", "--tenant", tenant, "--out", str(path)],
                   check=True, timeout=30)
    return str(path)


def put(store: KVPoolStore, key: str, data: np.ndarray) -> int:
    assert store.register_buffer(data.ctypes.data, data.nbytes) == 0
    return store.put_from(key, data.ctypes.data, data.nbytes)


def get(store: KVPoolStore, key: str, n: int):
    back = np.zeros(n, dtype=np.uint8)
    assert store.register_buffer(back.ctypes.data, back.nbytes) == 0
    rc = store.get_into(key, back.ctypes.data, back.nbytes)
    return rc, back


def test_tenants_see_only_their_own_objects(tenant_pool):
    pool, tmp = tenant_pool
    a = KVPoolStore()
    assert a.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address,
                   tenant_id="team-a", tenant_key_file=tenant_key_file(tmp, "team-a")) == 0, \
        kvpool.last_error()
    b = KVPoolStore()
    assert b.setup({"master_server_addr": pool.master_address, "tenant_id": "team-b",
                    "tenant_key_file": tenant_key_file(tmp, "team-b")}) == 0, kvpool.last_error()
    default = KVPoolStore()  # the pool secret from the environment: the default tenant
    assert default.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address) == 0

    data_a = np.arange(4096, dtype=np.uint8)
    data_b = (np.arange(4096, dtype=np.uint8) * 7).astype(np.uint8)
    assert put(a, "page", data_a) == 0, kvpool.last_error()
    for other in (b, default):
        assert other.is_exist("page") == 0
        rc, _ = get(other, "page", 4096)
        assert rc == int(ErrorCode.OBJECT_NOT_FOUND)
        assert other.remove("page") == int(ErrorCode.OBJECT_NOT_FOUND)
    assert put(b, "page", data_b) == 0, kvpool.last_error()
    rc, back = get(a, "page", 4096)
    assert rc == 4096 and np.array_equal(back, data_a)
    rc, back = get(b, "page", 4096)
    assert rc == 4096 and np.array_equal(back, data_b)
    for s in (a, b, default):
        s.close()


def test_tenant_key_proves_one_tenant(tenant_pool):
    pool, tmp = tenant_pool
    key_a = tenant_key_file(tmp, "team-a")
    s = KVPoolStore()
    code = s.setup({"master_server_addr": pool.master_address, "tenant_id": "team-b",
                    "tenant_key_file": key_a})
    assert code == int(ErrorCode.ILLEGAL_CLIENT), kvpool.last_error()
    # A tenant key contributes no memory (a segment holds every tenant's objects).
    code = s.setup({"master_server_addr": pool.master_address, "tenant_id": "team-a",
                    "tenant_key_file": key_a, "global_segment_size": "16MB"})
    assert code == int(ErrorCode.INVALID_PARAMS), kvpool.last_error()
