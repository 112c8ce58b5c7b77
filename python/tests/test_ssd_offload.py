"""Mooncake's / SGLang's SSD-offload settings on an embedded store: enable_ssd_offload with
ssd_offload_path (or $MOONCAKE_OFFLOAD_FILE_STORAGE_PATH) puts a disk tier below the segment
the store contributes (docs/operations.md, "Disk tier")."""

from __future__ import annotations

import os
import time

import pytest

import kvpool
from conftest import Pool
from kvpool import ErrorCode, KVPoolStore

MIB = 1 << 20


@pytest.fixture
def master_only():
    """A master with no nodes: what an embedded store puts lands in its own segment."""
    p = Pool()
    try:
        yield p
    finally:
        p.stop()


def page(key: str, n: int = MIB) -> bytes:
    seed = key.encode() * (n // max(1, len(key)) + 1)
    return seed[:n]


def join(store, pool, segment="8mb", **kwargs) -> int:
    return store.setup("127.0.0.1", "P2PHANDSHAKE", segment, 0, "tcp", "", pool.master_address,
                       **kwargs)


def put_paced(store, keys, deadline_s=30.0):
    """Puts each page once the ones before it are on disk: the disk tier copies pages in the
    background, and a page evicted from DRAM before its copy is done is dropped."""
    end = time.monotonic() + deadline_s
    for i, k in enumerate(keys):
        assert store.put(k, page(k)) == 0, kvpool.last_error()
        while time.monotonic() < end and store.stat()["disk_replicas"] < i + 1:
            time.sleep(0.01)


def test_ssd_offload_keeps_more_than_the_segment_and_across_a_restart(master_only, tmp_path,
                                                                       monkeypatch):
    monkeypatch.delenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", raising=False)
    keys = [f"ssd/{i}" for i in range(24)]  # 3 x the 8 MB segment
    s = KVPoolStore()
    assert join(s, master_only, enable_ssd_offload=True, ssd_offload_path=str(tmp_path),
                 ssd_offload_size="64mb") == 0, kvpool.last_error()
    put_paced(s, keys)
    st = s.stat()
    assert st["disk_capacity"] == 64 * MIB
    assert st["disk_replicas"] == len(keys)
    assert (tmp_path / "kvpool-disk.data").exists()
    assert [s.get(k) for k in keys] == [page(k) for k in keys]
    s.close()
    # A new process-like store on the same directory re-adopts what was on disk.
    again = KVPoolStore()
    assert join(again, master_only, enable_ssd_offload=True, ssd_offload_path=str(tmp_path),
                 ssd_offload_size="64mb") == 0, kvpool.last_error()
    end = time.monotonic() + 20
    while time.monotonic() < end and again.is_exist(keys[0]) != 1:
        time.sleep(0.05)
    got = {k: again.get(k) for k in keys}
    readable = [k for k in keys if got[k]]
    assert readable == keys  # every page was on disk before the close
    for k in readable:
        assert got[k] == page(k), k  # exact bytes or nothing, never wrong ones
    again.close()


def test_ssd_offload_path_from_the_mooncake_environment_and_default_size(master_only, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", str(tmp_path))
    s = KVPoolStore()
    assert s.setup({"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
                    "global_segment_size": "4mb", "master_server_address":
                    master_only.master_address, "enable_ssd_offload": True}) == 0, \
        kvpool.last_error()
    assert s.stat()["disk_capacity"] == 4 * 4 * MIB  # 4 x the segment
    assert s.put("k", b"x" * 1000) == 0
    assert s.get("k") == b"x" * 1000
    s.close()


@pytest.mark.parametrize("kwargs, code, says", [
    (dict(enable_ssd_offload=True), ErrorCode.INVALID_PARAMS, "ssd_offload_path"),
    (dict(enable_ssd_offload=True, ssd_offload_path="/nonexistent/kvpool-ssd"),
     ErrorCode.FILE_NOT_FOUND, "/nonexistent/kvpool-ssd"),
    (dict(enable_ssd_offload=True, ssd_offload_path="DIR", global_segment_size=0),
     ErrorCode.INVALID_PARAMS, "global_segment_size is 0"),
    (dict(enable_ssd_offload=True, ssd_offload_path="DIR", ssd_offload_size=0),
     ErrorCode.INVALID_PARAMS, "ssd_offload_size is 0"),
    (dict(enable_ssd_offload=True, ssd_offload_path="DIR", ssd_offload_size="lots"),
     ErrorCode.INVALID_PARAMS, "ssd_offload_size"),
    (dict(enable_ssd_offload=True, ssd_offload_path="DIR", global_segment_size=1 << 63),
     ErrorCode.INVALID_PARAMS, "too large"),
])
def test_ssd_offload_bad_settings_are_clear_errors(master_only, tmp_path, monkeypatch, kwargs,
                                                   code, says):
    monkeypatch.delenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", raising=False)
    args = dict(kwargs)
    if args.get("ssd_offload_path") == "DIR":
        args["ssd_offload_path"] = str(tmp_path)
    segment = args.pop("global_segment_size", "4mb")
    s = KVPoolStore()
    assert join(s, master_only, segment=segment, **args) == code
    assert says in kvpool.last_error()
    assert s.health_check() == 1


def test_ssd_offload_errors_name_the_python_settings_and_leave_no_file(master_only, tmp_path,
                                                                        monkeypatch):
    """Issue 33: the disk tier's errors name ssd_offload_path / ssd_offload_size (what the user
    gave), not the node's --disk_path / --disk_size, and a setup refused for want of space
    leaves no empty data file behind."""
    monkeypatch.delenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", raising=False)
    s = KVPoolStore()
    assert join(s, master_only, enable_ssd_offload=True, ssd_offload_path=str(tmp_path),
                 ssd_offload_size="100000tb") == ErrorCode.NO_AVAILABLE_HANDLE
    msg = kvpool.last_error()
    assert "ssd_offload_size" in msg and "--disk_size" not in msg, msg
    assert not (tmp_path / "kvpool-disk.data").exists()
    assert join(s, master_only, enable_ssd_offload=True,
                 ssd_offload_path=str(tmp_path / "missing")) == ErrorCode.FILE_NOT_FOUND
    msg = kvpool.last_error()
    assert "ssd_offload_path" in msg and "--disk_path" not in msg, msg


def test_ssd_offload_path_is_ignored_when_offload_is_off(master_only, tmp_path):
    s = KVPoolStore()
    assert join(s, master_only, ssd_offload_path=str(tmp_path)) == 0, kvpool.last_error()
    assert s.stat()["disk_capacity"] == 0
    assert not os.listdir(tmp_path)
    s.close()
