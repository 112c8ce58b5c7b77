"""The shared secret from Python (docs/security.md): from $KVPOOL_AUTH_SECRET or the
'auth_secret_file' config key; a store without it is refused with ILLEGAL_CLIENT."""

import numpy as np
import pytest

import kvpool
from kvpool import ErrorCode, KVPoolStore

from conftest import Pool, master_has_flag

pytestmark = pytest.mark.skipif(not master_has_flag("--auth_secret_file"),
                                reason="this kvpool build has no authentication")


@pytest.fixture
def secret_pool(monkeypatch, tmp_path):
    secret_file = tmp_path / "secret"
    secret_file.write_text("py-secret\n")
    secret_file.chmod(0o600)
    # The environment reaches the master, the node and the pool's own check store.
    monkeypatch.setenv("KVPOOL_AUTH_SECRET", "py-secret")
    p = Pool()
    try:
        p.add_node("64MB")
        yield p, str(secret_file)
    finally:
        p.stop()


def test_secret_from_env_or_config_file_and_refused_without(secret_pool, monkeypatch):
    pool, secret_file = secret_pool
    s = KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address) == 0, \
        kvpool.last_error()
    data = np.arange(4096, dtype=np.uint8)
    assert s.register_buffer(data.ctypes.data, data.nbytes) == 0
    assert s.put_from("py-secret-key", data.ctypes.data, data.nbytes) == 0, kvpool.last_error()
    s.close()

    monkeypatch.delenv("KVPOOL_AUTH_SECRET")
    refused = KVPoolStore()
    code = refused.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address)
    assert code == int(ErrorCode.ILLEGAL_CLIENT), kvpool.last_error()
    assert "authentication failed" in kvpool.last_error()

    by_file = KVPoolStore()
    assert by_file.setup({"master_server_addr": pool.master_address,
                          "auth_secret_file": secret_file}) == 0, kvpool.last_error()
    back = np.zeros(4096, dtype=np.uint8)
    assert by_file.register_buffer(back.ctypes.data, back.nbytes) == 0
    assert by_file.get_into("py-secret-key", back.ctypes.data, back.nbytes) == 4096
    assert np.array_equal(back, data)
    by_file.close()
