"""Round trips of the v2 calls for a Mamba hybrid (Qwen3-Next style: full-attention KV plus
Mamba temporal and conv states) on a 128-page batch, counted by the master itself
(kvpool_master_requests_total on its /metrics). Run with -s to see the figures
(docs/benchmarks.md records them)."""

import re
import time
import urllib.request

import pytest

import kvpool
from conftest import Pool, free_port
from fake_pool import FakeMambaPool, FakeMHAPool, page_indices
from test_sglang_hybrid import (MODES, TRAILING, Model, allocator, make_backend, page_keys,
                                transfers)
from kvpool.sglang.v2_types import PoolName

PAGES = 128


def requests(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {m: int(float(v)) for m, v in
            re.findall(r'^kvpool_master_requests_total\{method="(\w+)"\} (\S+)$', text, re.M)}


def delta(port, before):
    time.sleep(0.2)  # nothing else talks to this master; let queued releases land
    now = requests(port)
    return {m: now[m] - before.get(m, 0) for m in now if now[m] != before.get(m, 0)
            and m != "ping"}


@pytest.fixture
def metered_pool():
    p = Pool(metrics_port=free_port())
    try:
        p.add_node("512MB")
        yield p
    finally:
        p.stop()


@pytest.mark.parametrize("mode", MODES)
def test_v2_batch_costs_one_master_round_trip_per_phase(metered_pool, uid, mode):
    alloc = allocator(mode)
    anchor = FakeMHAPool(alloc, size=2 * PAGES * 16, layer_num=4)
    mamba = FakeMambaPool(alloc, size=2 * PAGES, layers=4, temporal_shape=(16, 64),
                          conv_shapes=((3, 256), (3, 64)))
    model = Model(anchor, {PoolName.MAMBA: (mamba, TRAILING)}, False, None)
    b = make_backend(metered_pool, mode, model)
    try:
        keys = page_keys(uid, PAGES)
        mamba.fill_pages(page_indices(0, PAGES, 1), 7)
        port = metered_pool.metrics_port
        seen = {}
        before = requests(port)
        start = time.perf_counter()
        assert b.batch_set_v2(transfers(model, keys, 0)) == {PoolName.MAMBA: [True] * PAGES}
        took_set = time.perf_counter() - start
        seen["set"] = delta(port, before)
        before = requests(port)
        start = time.perf_counter()
        assert b.batch_get_v2(transfers(model, keys, PAGES)) == {PoolName.MAMBA: [True] * PAGES}
        took_get = time.perf_counter() - start
        seen["get"] = delta(port, before)
        assert b.batch_set_v1(keys, page_indices(0, PAGES, 16)) == [True] * PAGES
        before = requests(port)
        result = b.batch_exists_v2(keys, transfers(model, keys, 0, trailing=1))
        seen["exists"] = delta(port, before)
        assert result.kv_hit_pages == PAGES
        print(f"\n{mode}: 128-page Mamba v2 batch ({3 * PAGES} objects, "
              f"{sum(mamba.get_page_buffer_meta([0])[1]) * PAGES >> 10} KiB): master requests "
              f"{seen}; set {took_set * 1e3:.1f} ms, get {took_get * 1e3:.1f} ms")
        assert seen["set"] == {"put_start": 1, "put_end": 1}
        assert seen["get"].get("get_replica_list") == 1
        assert set(seen["get"]) <= {"get_replica_list", "lease_release"}
        assert seen["exists"] == {"exists_prefix": 1, "exists": 1}
    finally:
        b.close()
