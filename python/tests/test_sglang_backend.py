"""kvpool's SGLang HiCache backend end to end against real kvpool processes, driven through a
host pool built the way SGLang builds one (fake_pool.py): page-first MHA and MLA layouts,
torch tensors (numpy when torch is absent), get_page_buffer_meta; embedded and standalone."""

import hashlib
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

import kvpool
from conftest import TESTS_DIR
from fake_pool import FakeMHAPool, FakeMLAPool, PlainHostTensorAllocator, page_indices
from kvpool.allocator import KVPoolHostTensorAllocator
from kvpool.config import KVPoolConfigError
from kvpool.sglang import HiCacheStorageConfig, KeyScheme, KVPoolHiCacheStorage

MODEL = "org/Model-7B"
PREFIX = "org-Model-7B"
needs_standalone = pytest.mark.skipif(not kvpool.HAS_STANDALONE, reason="no standalone mode")


def page_keys(uid, n, start=0):
    return [hashlib.sha256(f"{uid}-{i}".encode()).hexdigest() for i in range(start, start + n)]


def embedded_extra(pool, **kw):
    extra = {"master_server_address": pool.master_address, "local_hostname": "127.0.0.1",
             "global_segment_size": 0}
    extra.update(kw)
    return extra


def standalone_extra(pool, **kw):
    extra = {"client_server_address": pool.node_address(0),
             "master_server_address": pool.master_address, "standalone_storage": True,
             "local_hostname": "127.0.0.1", "global_segment_size": 0}
    extra.update(kw)
    return extra


def make_backend(extra, pool_obj=None, is_mla=False, tp_rank=0, tp_size=1, metrics=False):
    config = HiCacheStorageConfig(tp_rank=tp_rank, tp_size=tp_size, is_mla_model=is_mla,
                                  model_name=MODEL, enable_storage_metrics=metrics,
                                  extra_config=extra)
    backend = KVPoolHiCacheStorage(config, {})  # SGLang's dynamic backend: cls(config, kwargs)
    if pool_obj is not None:
        backend.register_mem_pool_host(pool_obj)
    return backend


def roundtrip(backend, host_pool, keys, seed=1):
    """set -> exists -> get into other slots; returns (written page bytes, read page bytes)."""
    n = len(keys)
    src, dst = page_indices(0, n, host_pool.page_size), page_indices(n, n, host_pool.page_size)
    host_pool.fill_pages(src, seed)
    assert backend.batch_set_v1(keys, src) == [True] * n
    assert backend.batch_exists(keys) == n
    host_pool.zero_pages(dst)
    assert backend.batch_get_v1(keys, dst) == [True] * n
    return host_pool.page_bytes(src), host_pool.page_bytes(dst)


@pytest.fixture
def backends():
    made = []
    yield made
    for b in made:
        b.close()


# ---- embedded -------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["page_first", "page_first_direct"])
def test_mha_embedded_roundtrip_and_keys(pool, store, uid, backends, layout):
    host = FakeMHAPool(PlainHostTensorAllocator(), layout=layout)
    b = make_backend(embedded_extra(pool), host)
    backends.append(b)
    assert b.mode == "embedded"
    keys = page_keys(uid, 5)
    written, read = roundtrip(b, host, keys)
    assert read == written
    # Keys exactly as SGLang's Mooncake backend builds them: two objects per page.
    assert store.batch_is_exist([f"{PREFIX}_{keys[0]}_0_k", f"{PREFIX}_{keys[0]}_0_v"]) == [1, 1]
    page_k = host.get_page_buffer_meta(page_indices(0, 1, host.page_size))[1][0]
    assert store.get_size(f"{PREFIX}_{keys[0]}_0_k") == page_k
    # Leading pages only: a hole stops the count.
    assert b.batch_exists(keys[:2] + page_keys(uid, 1, start=99) + keys[2:]) == 2
    assert b.batch_exists([]) == 0
    assert b.batch_get_v1(page_keys(uid, 1, start=50), page_indices(0, 1, 16)) == [False]


def test_mha_embedded_with_contributed_segment(pool, uid, backends):
    host = FakeMHAPool(PlainHostTensorAllocator())
    b = make_backend(embedded_extra(pool, global_segment_size="32mb"), host, tp_size=2)
    backends.append(b)
    seg = b.store.get_hostname()
    assert any(s["name"] == seg and s["size"] == 16 << 20 for s in b.store.stat()["segments"])
    written, read = roundtrip(b, host, page_keys(uid, 3))
    assert read == written


def test_ssd_offload_gives_each_rank_its_own_disk_tier(pool, uid, backends, tmp_path):
    # SGLang's keys: enable_ssd_offload + ssd_offload_path; kvpool's ssd_offload_size.
    host = FakeMHAPool(PlainHostTensorAllocator())
    extra = embedded_extra(pool, global_segment_size="16mb", enable_ssd_offload=True,
                           ssd_offload_path=str(tmp_path), ssd_offload_size="32mb")
    for rank in (0, 1):
        b = make_backend(extra, host, tp_rank=rank, tp_size=2)
        backends.append(b)
        assert (tmp_path / f"rank-{rank}" / "kvpool-disk.data").exists()
    assert b.store.stat()["disk_capacity"] >= 2 * (32 << 20)
    written, read = roundtrip(backends[1], host, page_keys(uid, 3))
    assert read == written


def test_ssd_offload_without_a_path_is_a_clear_error(pool, backends):
    extra = embedded_extra(pool, global_segment_size="16mb", enable_ssd_offload=True)
    with pytest.raises(RuntimeError, match="ssd_offload_path"):
        make_backend(extra)


def test_ssd_offload_from_the_mooncake_environment(pool, uid, backends, tmp_path, clean_env,
                                                   monkeypatch):
    monkeypatch.setenv("MOONCAKE_MASTER", pool.master_address)
    monkeypatch.setenv("MOONCAKE_LOCAL_HOSTNAME", "127.0.0.1")
    monkeypatch.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "8mb")
    monkeypatch.setenv("MOONCAKE_ENABLE_SSD_OFFLOAD", "true")
    monkeypatch.setenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", str(tmp_path))
    b = make_backend({})
    backends.append(b)
    assert (tmp_path / "rank-0" / "kvpool-disk.data").stat().st_size == 4 * (8 << 20)


def test_batch_set_skips_existing_pages(pool, uid, backends):
    host = FakeMHAPool(PlainHostTensorAllocator())
    b = make_backend(embedded_extra(pool), host)
    backends.append(b)
    keys = page_keys(uid, 2)
    src = page_indices(0, 2, host.page_size)
    host.fill_pages(src, seed=1)
    first = host.page_bytes(src)
    assert b.batch_set_v1(keys, src) == [True, True]
    host.fill_pages(src, seed=2)  # different bytes, same keys
    assert b.batch_set_v1(keys, src) == [True, True]  # counted as success, not rewritten
    dst = page_indices(4, 2, host.page_size)
    assert b.batch_get_v1(keys, dst) == [True, True]
    assert host.page_bytes(dst) == first


def test_mla_keys_and_rank0_writes(pool, store, uid, backends):
    host0, host1 = FakeMLAPool(PlainHostTensorAllocator()), FakeMLAPool(PlainHostTensorAllocator())
    r0 = make_backend(embedded_extra(pool), host0, is_mla=True, tp_rank=0, tp_size=2)
    r1 = make_backend(embedded_extra(pool), host1, is_mla=True, tp_rank=1, tp_size=2)
    backends += [r0, r1]
    keys = page_keys(uid, 3)
    src = page_indices(0, 3, 16)
    host1.fill_pages(src, seed=5)
    assert r1.batch_set_v1(keys, src) == [True] * 3  # rank 1 does not write MLA pages
    assert store.batch_is_exist([f"{PREFIX}_{k}__k" for k in keys]) == [0, 0, 0]
    host0.fill_pages(src, seed=6)
    assert r0.batch_set_v1(keys, src) == [True] * 3
    assert store.batch_is_exist([f"{PREFIX}_{k}__k" for k in keys]) == [1, 1, 1]
    assert r1.batch_exists(keys) == 3  # every rank sees the same answer
    dst = page_indices(8, 3, 16)
    assert r1.batch_get_v1(keys, dst) == [True] * 3
    assert host1.page_bytes(dst) == host0.page_bytes(src)


def test_mla_layer_first_uses_multi_buffer_objects(pool, uid, backends):
    host = FakeMLAPool(PlainHostTensorAllocator(), layout="layer_first")
    b = make_backend(embedded_extra(pool), host, is_mla=True)
    backends.append(b)
    written, read = roundtrip(b, host, page_keys(uid, 4))
    assert read == written
    # One object per page, gathered from the L layer slices.
    assert b.store.get_size(f"{PREFIX}_{page_keys(uid, 1)[0]}__k") == len(written[0])


def test_mha_layer_first_is_refused_clearly(pool, backends):
    host = FakeMHAPool(PlainHostTensorAllocator(), layout="layer_first")
    b = make_backend(embedded_extra(pool))
    backends.append(b)
    with pytest.raises(ValueError, match="layer_first.*--hicache-mem-layout page_first"):
        b.register_mem_pool_host(host)


def test_stats_and_legacy_calls(pool, uid, backends):
    host = FakeMHAPool(PlainHostTensorAllocator())
    b = make_backend(embedded_extra(pool), host, metrics=True)
    backends.append(b)
    roundtrip(b, host, page_keys(uid, 2))
    stats = b.get_stats()
    assert stats.backup_pgs == [2] and stats.prefetch_pgs == [2]
    assert len(stats.backup_bandwidth) == 1 and stats.prefetch_bandwidth[0] > 0
    assert b.get_stats().backup_pgs == []  # cleared once read
    # Legacy calls: keys tagged with the model prefix; addresses or tensors.
    ptrs, sizes = host.get_page_buffer_meta(page_indices(0, 1, 16))
    assert b.set(f"{uid}-legacy", target_location=ptrs[0], target_sizes=sizes[0])
    assert b.exists(f"{uid}-legacy")
    assert b.store.is_exist(f"{PREFIX}_{uid}-legacy") == 1
    assert b.get(f"{uid}-legacy", target_location=ptrs[1], target_sizes=sizes[1])
    assert b.batch_get([f"{uid}-legacy", f"{uid}-nope"], [ptrs[1], ptrs[1]], [sizes[1]] * 2) == 1
    value = np.arange(64, dtype=np.uint8)
    assert b.batch_set([f"{uid}-v1", f"{uid}-v2"], values=[value, bytes(value)])
    out = np.zeros(64, dtype=np.uint8)
    got = b.batch_get([f"{uid}-v1", f"{uid}-none"], [out, np.zeros(64, dtype=np.uint8)])
    assert got[0] is out and got[1] is None and np.array_equal(out, value)
    fetched = b.get(f"{uid}-v2")
    assert bytes(np.asarray(fetched)) == bytes(value)
    assert b.get(f"{uid}-none") is None


def test_clear_removes_everything(fresh_pool, uid):
    host = FakeMHAPool(PlainHostTensorAllocator())
    b = make_backend(embedded_extra(fresh_pool), host)
    try:
        keys = page_keys(uid, 2)
        b.batch_set_v1(keys, page_indices(0, 2, 16))
        assert b.batch_exists(keys) == 2
        b.clear()
        assert b.batch_exists(keys) == 0
    finally:
        b.close()


def test_configuration_errors_surface_at_construction(pool, clean_env):
    with pytest.raises(KVPoolConfigError, match="Either the environment variable"):
        make_backend({"backend_name": "kvpool"})
    with pytest.raises(RuntimeError, match="protocol 'rdma'"):
        make_backend(embedded_extra(pool, protocol="rdma"))
    with pytest.raises(KVPoolConfigError, match="Invalid JSON mapping"):
        make_backend(embedded_extra(pool, device_name="{0: x}"))
    with pytest.raises(RuntimeError, match="could not join the pool"):
        make_backend(embedded_extra(pool, master_server_address="127.0.0.1:1"))


def test_config_from_environment(pool, clean_env, uid, backends):
    clean_env.setenv("MOONCAKE_MASTER", pool.master_address)
    clean_env.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", "0")
    clean_env.setenv("MOONCAKE_LOCAL_HOSTNAME", "127.0.0.1")
    host = FakeMHAPool(PlainHostTensorAllocator())
    b = make_backend({"backend_name": "kvpool", "interface_v1": 1}, host)
    backends.append(b)
    assert b.config.source == "env"
    written, read = roundtrip(b, host, page_keys(uid, 1))
    assert read == written


def test_key_scheme():
    assert KeyScheme("a/b", None, tp_rank=3).object_keys(["h"]) == ["a-b_h_3_k", "a-b_h_3_v"]
    assert KeyScheme("a/b", "tag", tp_rank=1, pp_rank=2, pp_size=4).object_keys(["h"]) == \
        ["tag_a-b_h_1_2_k", "tag_a-b_h_1_2_v"]
    assert KeyScheme("m", None, is_mla=True, tp_rank=5).object_keys(["h"]) == ["m_h__k"]
    assert KeyScheme("m", None, is_mla=True, pp_rank=1, pp_size=2).object_keys(["h"]) == \
        ["m_h_1_k"]
    assert KeyScheme(None, None).object_keys(["h"]) == ["h_0_k", "h_0_v"]
    split = KeyScheme("m", None, tp_rank=1, split_factor=2)
    assert split.object_keys(["h"]) == ["m_h_2_k", "m_h_2_v", "m_h_3_k", "m_h_3_v"]
    assert split.objects_per_page == 4


# ---- standalone -----------------------------------------------------------------------------

@needs_standalone
@pytest.mark.parametrize("pool_cls, is_mla", [(FakeMHAPool, False), (FakeMLAPool, True)])
def test_standalone_zero_copy_roundtrip(pool, uid, backends, pool_cls, is_mla):
    host = pool_cls(KVPoolHostTensorAllocator())
    b = make_backend(standalone_extra(pool), is_mla=is_mla)  # connects at registration
    backends.append(b)
    assert b.store is None
    with pytest.raises(RuntimeError, match="not connected"):
        b.batch_exists(page_keys(uid, 1))
    b.register_mem_pool_host(host)
    assert b.mode == "standalone" and b.store.is_standalone()
    written, read = roundtrip(b, host, page_keys(uid, 6))
    assert read == written


@needs_standalone
def test_standalone_numpy_pool(pool, uid, backends, monkeypatch):
    monkeypatch.setenv("KVPOOL_TEST_NUMPY_INDICES", "1")
    host = FakeMHAPool(KVPoolHostTensorAllocator(), dtype=np.float16)
    assert isinstance(host.kv_buffer, np.ndarray)
    b = make_backend(standalone_extra(pool), host)
    backends.append(b)
    written, read = roundtrip(b, host, page_keys(uid, 2))
    assert read == written


def run_second_engine(spec):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS_DIR)] + sys.path)
    out = subprocess.run([sys.executable, str(TESTS_DIR / "engine_reader.py"), json.dumps(spec)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["embedded", pytest.param("standalone", marks=needs_standalone)])
@pytest.mark.parametrize("is_mla", [False, True])
def test_second_engine_process_reads_what_the_first_wrote(pool, uid, backends, mode, is_mla):
    standalone = mode == "standalone"
    allocator = KVPoolHostTensorAllocator() if standalone else PlainHostTensorAllocator()
    host = (FakeMLAPool if is_mla else FakeMHAPool)(allocator)
    extra = standalone_extra(pool) if standalone else embedded_extra(pool)
    b = make_backend(extra, host, is_mla=is_mla)
    backends.append(b)
    keys = page_keys(uid, 4)
    src = page_indices(0, 4, host.page_size)
    host.fill_pages(src, seed=11)
    assert b.batch_set_v1(keys, src) == [True] * 4
    expect = [hashlib.sha256(p).hexdigest() for p in host.page_bytes(src)]
    result = run_second_engine({
        "extra_config": extra, "model_name": MODEL, "is_mla": is_mla, "layout": "page_first",
        "keys": keys + page_keys(uid, 1, start=77), "allocator": "kvpool" if standalone
        else "plain", "tp_rank": 1 if is_mla else 0})
    assert result["mode"] is None  # closed at the end
    assert result["exists"] == 4
    assert result["got"] == [True] * 4 + [False]
    assert result["sha256"][:4] == expect


# ---- standalone with the wrong allocator: the seed's situation ------------------------------

@needs_standalone
def test_mismatch_error_is_actionable(pool, backends):
    host = FakeMHAPool(PlainHostTensorAllocator())
    b = make_backend(standalone_extra(pool))
    backends.append(b)
    with pytest.raises(RuntimeError) as e:
        b.register_mem_pool_host(host)
    msg = str(e.value)
    assert "fake_pool.PlainHostTensorAllocator" in msg  # the allocator found
    assert "KVPoolHostTensorAllocator" in msg  # the one required
    assert "kvpool.sglang.launch_server" in msg and "--hicache-storage-backend mooncake" in msg
    assert '"standalone_storage": false' in msg
    assert '"standalone_allocator_mismatch": "copy"' in msg
    assert b.store is None


@needs_standalone
def test_mismatch_detected_by_registration_when_allocator_is_unknown(pool, backends):
    host = FakeMHAPool(PlainHostTensorAllocator())
    del host.allocator  # no allocator attribute: the memory itself is checked
    b = make_backend(standalone_extra(pool))
    backends.append(b)
    with pytest.raises(RuntimeError, match="no allocator attribute.*The node refused it"):
        b.register_mem_pool_host(host)


@needs_standalone
def test_mismatch_copy_fallback(pool, uid, backends, caplog):
    host = FakeMHAPool(PlainHostTensorAllocator())
    b = make_backend(standalone_extra(pool, standalone_allocator_mismatch="copy"))
    backends.append(b)
    with caplog.at_level(logging.WARNING, logger="kvpool.sglang"):
        b.register_mem_pool_host(host)
    assert "standalone_allocator_mismatch=copy" in caplog.text
    assert b.mode == "standalone-copy" and b.store.is_standalone()
    written, read = roundtrip(b, host, page_keys(uid, 3))
    assert read == written


@needs_standalone
def test_mismatch_embedded_fallback(pool, uid, backends, caplog):
    host = FakeMLAPool(PlainHostTensorAllocator())
    b = make_backend(standalone_extra(pool, standalone_allocator_mismatch="embedded"),
                     is_mla=True)
    backends.append(b)
    with caplog.at_level(logging.WARNING, logger="kvpool.sglang"):
        b.register_mem_pool_host(host)
    assert "falling back to embedded mode" in caplog.text
    assert b.mode == "embedded" and not b.store.is_standalone()
    written, read = roundtrip(b, host, page_keys(uid, 3))
    assert read == written


@needs_standalone
def test_mismatch_embedded_fallback_needs_a_master(pool, backends):
    extra = standalone_extra(pool, standalone_allocator_mismatch="embedded")
    del extra["master_server_address"]
    b = make_backend(extra)
    backends.append(b)
    with pytest.raises(RuntimeError, match="needs\nmaster_server_address|needs master_server"):
        b.register_mem_pool_host(FakeMHAPool(PlainHostTensorAllocator()))


@needs_standalone
def test_pool_given_at_construction(pool, uid):
    host = FakeMHAPool(KVPoolHostTensorAllocator())
    config = HiCacheStorageConfig(model_name=MODEL, extra_config=standalone_extra(pool))
    b = KVPoolHiCacheStorage(config, host)  # the stock backends' (config, mem_pool) call
    try:
        assert b.mode == "standalone"
        store = b.store
        b.register_mem_pool_host(host)  # SGLang registers it again: nothing changes
        assert b.store is store and b.mode == "standalone"
        written, read = roundtrip(b, host, page_keys(uid, 1))
        assert read == written
    finally:
        b.close()


def test_pool_ranges_merge_overlaps_only():
    from kvpool.sglang.pool import merged_ranges

    class T:  # numpy-like: address and length
        def __init__(self, start, size):
            self.__array_interface__ = {"data": (start, False)}
            self.nbytes = size

    # Touching ranges (K and V halves, or two allocations side by side) stay apart.
    assert merged_ranges([T(100, 50), T(150, 50)]) == [(100, 50), (150, 50)]
    assert merged_ranges([T(100, 100), T(150, 10), T(120, 100)]) == [(100, 120)]
