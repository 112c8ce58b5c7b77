"""Both routes share a hybrid model's pages: pages written by kvpool's backend (route A) are
read by the stock Mooncake backend's v2 logic over the compatibility package (`mooncake.store`
on kvpool, route B), and the other way round, in embedded and standalone mode.

SGLang is not installed, so route B is replayed here: its object keys come from a literal table
(the stock backend's scheme written out by hand, not kvpool's key code), its calls are the
stock backend's (batch_is_exist, then batch_put_from / batch_put_from_multi_buffers with
ReplicateConfig.group_ids; batch_get_into / batch_get_into_multi_buffers), and it has host pools
of its own, as a second engine would."""

import sys

import pytest

import kvpool
from conftest import COMPAT_DIR
from fake_pool import FakeMambaPool, FakeMHAPool, page_indices
from kvpool.sglang.pool import merged_ranges, pool_buffers
from kvpool.sglang.v2_types import PoolName, PoolTransfer
import test_sglang_hybrid as hybrid
from test_sglang_hybrid import (MODES, PREFIX, TRAILING, Model, allocator, make_backend,
                                page_keys, transfers, write_pages)

sys.path.insert(0, str(COMPAT_DIR))
from mooncake.store import MooncakeDistributedStore, ReplicateConfig  # noqa: E402

# The stock backend's suffixes per pool, for tp_rank 0, pp_size 1 (mha "0", mla ""), by model.
V4_POOLS = ("deepseek_v4_c4", "deepseek_v4_c4_indexer", "deepseek_v4_c4_indexer_scale",
            "deepseek_v4_c128", "deepseek_v4_c4_state", "deepseek_v4_c4_indexer_state",
            "deepseek_v4_c128_state", "swa", "draft_swa")
STOCK_SUFFIXES = {
    "mamba_swa": {"kv": ["_0_k", "_0_v"], "mamba": ["_0_temporal", "_0_conv_0", "_0_conv_1"],
                  "swa": ["_0_swa_k", "_0_swa_v"]},
    "dsa": {"kv": ["__k"], "indexer": ["__indexer"], "draft": ["__draft_k"],
            "draft_indexer": ["__draft_indexer"]},
    "deepseek_v4_layer_first": {n: [f"__{n}"] for n in V4_POOLS},
    "mha_draft": {"kv": ["_0_k", "_0_v"], "draft": ["_0_draft_k", "_0_draft_v"],
                  "draft_swa": ["_0_draft_swa_k", "_0_draft_swa_v"]}}


def hybrid_model(alloc):
    return Model(FakeMHAPool(alloc), {PoolName.MAMBA: (FakeMambaPool(alloc), TRAILING),
                                      PoolName.SWA: (FakeMHAPool(alloc, layer_num=2), TRAILING)},
                 False, None)


MODELS = {"mamba_swa": hybrid_model, "dsa": hybrid.dsa_model,
          "deepseek_v4_layer_first": lambda a: hybrid.deepseek_v4_model(a, "layer_first"),
          "mha_draft": hybrid.mha_draft_model}


class StockRoute:
    """The stock Mooncake backend's v1 + v2 page I/O on `mooncake.store`, with its own host
    pools (`model`)."""

    def __init__(self, pool, mode, model, suffixes):
        self.model, self.suffixes = model, suffixes
        self.store = MooncakeDistributedStore()
        if mode == "standalone":
            rc = self.store.setup_dummy(64 << 20, 16 << 20, pool.node_address(0))
        else:
            rc = self.store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "",
                                  pool.master_address, None)
        assert rc == 0, kvpool.last_error()
        for host in hosts_of(model):
            for address, size in merged_ranges(pool_buffers(host)):
                assert self.store.register_buffer(address, size) == 0, kvpool.last_error()

    def _objects(self, name, host, keys, first_page):
        suffixes = self.suffixes[name]
        ptrs, sizes = host.get_page_buffer_meta(page_indices(first_page, len(keys),
                                                             host.page_size))
        obj_keys = [f"{PREFIX}_{h}{s}" for h in keys for s in suffixes]
        per = len(ptrs) // len(obj_keys)
        if per > 1:  # several buffers per object (an MLA page of several layers)
            ptrs = [ptrs[i:i + per] for i in range(0, len(ptrs), per)]
            sizes = [sizes[i:i + per] for i in range(0, len(sizes), per)]
        groups = [f"sglang-hicache:{PREFIX}_{h}" for h in keys for _ in suffixes]
        return obj_keys, ptrs, sizes, groups

    def pools(self):
        anchor = [] if self.model.anchor.kv_buffer is None else [("kv", self.model.anchor)]
        return anchor + [(str(n), p) for n, (p, _) in self.model.sides.items()]

    def write(self, keys, first_page):
        for name, host in self.pools():
            obj_keys, ptrs, sizes, groups = self._objects(name, host, keys, first_page)
            missing = [i for i, e in enumerate(self.store.batch_is_exist(obj_keys)) if e != 1]
            config = ReplicateConfig()
            config.group_ids = [groups[i] for i in missing]
            put = (self.store.batch_put_from_multi_buffers if isinstance(ptrs[0], list)
                   else self.store.batch_put_from)
            assert put([obj_keys[i] for i in missing], [ptrs[i] for i in missing],
                       [sizes[i] for i in missing], config) == [0] * len(missing)

    def read(self, keys, first_page):
        for name, host in self.pools():
            obj_keys, ptrs, sizes, _ = self._objects(name, host, keys, first_page)
            multi = isinstance(ptrs[0], list)
            get = self.store.batch_get_into_multi_buffers if multi else self.store.batch_get_into
            want = [sum(s) for s in sizes] if multi else sizes
            assert get(obj_keys, ptrs, sizes) == want, name

    def close(self):
        self.store.close()


def hosts_of(model):
    anchor = [] if model.anchor.kv_buffer is None else [model.anchor]
    return anchor + [p for p, _ in model.sides.values()]


def page_contents(model, first_page, n):
    hosts = hosts_of(model)
    return [h.page_bytes(page_indices(first_page, n, h.page_size)) for h in hosts]


@pytest.fixture
def closing():
    made = []
    yield made
    for x in made:
        x.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_route_a_pages_read_by_stock_route(pool, uid, closing, mode, kind):
    a_model, b_model = MODELS[kind](allocator(mode)), MODELS[kind](allocator(mode))
    a = make_backend(pool, mode, a_model)
    closing.append(a)
    keys = page_keys(uid, 4)
    write_pages(a, a_model, keys)
    b = StockRoute(pool, mode, b_model, STOCK_SUFFIXES[kind])
    closing.append(b)
    b.read(keys, 2)
    assert page_contents(b_model, 2, 4) == page_contents(a_model, 0, 4)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_stock_route_pages_read_by_route_a(pool, uid, closing, mode, kind):
    a_model, b_model = MODELS[kind](allocator(mode)), MODELS[kind](allocator(mode))
    b = StockRoute(pool, mode, b_model, STOCK_SUFFIXES[kind])
    closing.append(b)
    for i, host in enumerate(hosts_of(b_model)):
        host.fill_pages(page_indices(0, 4, host.page_size), 40 + i)
    keys = page_keys(uid, 4)
    b.write(keys, 0)
    a = make_backend(pool, mode, a_model)
    closing.append(a)
    probe = transfers(a_model, keys, 0, trailing=1)
    result = a.batch_exists_v2(keys, probe)
    assert (result.kv_hit_pages, result.restorable_prefix_pages) == (4, [1, 2, 3, 4])
    assert a.batch_get_v2(transfers(a_model, keys, 5)) == {n: [True] * 4 for n in a_model.sides}
    assert a.batch_get_v1(keys, page_indices(5, 4, a_model.anchor.page_size)) == [True] * 4
    assert page_contents(a_model, 5, 4) == page_contents(b_model, 0, 4)
    # Route A writing the same pages again changes nothing (the objects exist).
    assert a.batch_set_v2([PoolTransfer(name=n, keys=keys, hit_policy=policy,
                                        host_indices=page_indices(5, 4, p.page_size))
                           for n, (p, policy) in a_model.sides.items()]) == \
        {n: [True] * 4 for n in a_model.sides}
