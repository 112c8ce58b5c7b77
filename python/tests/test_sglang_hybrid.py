"""SGLang's v2 interface (hybrid models) in kvpool's backend (route A): every PoolName, in
embedded and standalone mode, driven through host pools built the way SGLang builds them
(fake_pool.py). Object keys are asserted as literal strings: the stock Mooncake backend's."""

import hashlib

import pytest

import kvpool
from fake_pool import (FakeHostPoolGroup, FakeLogicalAnchor, FakeMambaPool, FakeMHAPool,
                       FakeMLAPool, FakePackedPool, PlainHostTensorAllocator, page_indices)
from kvpool.allocator import KVPoolHostTensorAllocator
from kvpool.sglang import HiCacheStorageConfig, KVPoolHiCacheStorage
from kvpool.sglang.v2_types import PoolHitPolicy, PoolName, PoolTransfer

MODEL = "org/Hybrid-1B"
PREFIX = "org-Hybrid-1B"
ALL, TRAILING = PoolHitPolicy.ALL_PAGES, PoolHitPolicy.TRAILING_PAGES
MODES = ["embedded", pytest.param("standalone", marks=pytest.mark.skipif(
    not kvpool.HAS_STANDALONE, reason="no standalone mode"))]


def page_keys(uid, n, start=0):
    return [hashlib.sha256(f"{uid}-{i}".encode()).hexdigest() for i in range(start, start + n)]


def allocator(mode):
    return KVPoolHostTensorAllocator() if mode == "standalone" else PlainHostTensorAllocator()


def extra_for(pool, mode, **kw):
    extra = {"master_server_address": pool.master_address, "local_hostname": "127.0.0.1",
             "global_segment_size": 0}
    if mode == "standalone":
        extra.update(client_server_address=pool.node_address(0), standalone_storage=True)
    extra.update(kw)
    return extra


# ---- the models: an anchor, side pools with their hit policy, the literal keys of a page ------

class Model:
    def __init__(self, anchor, sides, is_mla, keys_of_page):
        self.anchor, self.is_mla = anchor, is_mla
        self.sides = sides  # name -> (host pool, hit policy)
        self.keys_of_page = keys_of_page  # hash -> {pool name: [literal object keys]}


def mamba_model(alloc, conv_only=False, report_empty_temporal=False):
    mamba = FakeMambaPool(alloc, temporal_shape=(0,) if conv_only else (4, 8),
                          report_empty_temporal=report_empty_temporal)
    temporal = [] if conv_only else ["temporal"]
    return Model(FakeMHAPool(alloc), {PoolName.MAMBA: (mamba, TRAILING)}, False, lambda h: {
        "kv": [f"{PREFIX}_{h}_0_k", f"{PREFIX}_{h}_0_v"],
        "mamba": [f"{PREFIX}_{h}_0_{c}" for c in temporal + ["conv_0", "conv_1"]]})


def swa_mha_model(alloc):
    return Model(FakeMHAPool(alloc), {PoolName.SWA: (FakeMHAPool(alloc, layer_num=2), TRAILING)},
                 False, lambda h: {"swa": [f"{PREFIX}_{h}_0_swa_k", f"{PREFIX}_{h}_0_swa_v"]})


def dsa_model(alloc):
    """DeepSeek V3.2 (DSA): MLA anchor, indexer, MTP draft (MLA) with its own indexer."""
    return Model(FakeMLAPool(alloc), {
        PoolName.INDEXER: (FakePackedPool(alloc), ALL),
        PoolName.DRAFT: (FakeMLAPool(alloc, layer_num=1), ALL),
        PoolName.DRAFT_INDEXER: (FakePackedPool(alloc, layer_num=1), ALL)}, True, lambda h: {
        "kv": [f"{PREFIX}_{h}__k"], "indexer": [f"{PREFIX}_{h}__indexer"],
        "draft": [f"{PREFIX}_{h}__draft_k"], "draft_indexer": [f"{PREFIX}_{h}__draft_indexer"]})


V4_ALL = ("deepseek_v4_c4", "deepseek_v4_c4_indexer", "deepseek_v4_c4_indexer_scale",
          "deepseek_v4_c128")
V4_STATE = ("deepseek_v4_c4_state", "deepseek_v4_c4_indexer_state", "deepseek_v4_c128_state")


def deepseek_v4_model(alloc, layout="page_first"):
    """DeepSeek V4: a logical KV anchor; compressed KV / indexer pools, compression states,
    an MLA-style SWA pool and the draft's SWA pool. layout applies to the compressed pools
    (layer_first: several buffers per object, beside single-buffer objects of the others)."""
    sides = {PoolName(n): (FakePackedPool(alloc, bytes_per_token=4, layout=layout), ALL)
             for n in V4_ALL}
    sides.update({PoolName(n): (FakePackedPool(alloc, layer_num=1), TRAILING) for n in V4_STATE})
    sides[PoolName.SWA] = (FakePackedPool(alloc, layer_num=2), TRAILING)
    sides[PoolName.DRAFT_SWA] = (FakePackedPool(alloc, layer_num=1), TRAILING)
    return Model(FakeLogicalAnchor(alloc), sides, True, lambda h: {
        **{n: [f"{PREFIX}_{h}__{n}"] for n in V4_ALL + V4_STATE},
        "swa": [f"{PREFIX}_{h}__swa"], "draft_swa": [f"{PREFIX}_{h}__draft_swa"]})


def mha_draft_model(alloc):
    """An MHA target with an EAGLE draft: DRAFT and DRAFT_SWA are K/V pools."""
    return Model(FakeMHAPool(alloc), {
        PoolName.DRAFT: (FakeMHAPool(alloc, layer_num=1), ALL),
        PoolName.DRAFT_SWA: (FakeMHAPool(alloc, layer_num=1), TRAILING)}, False, lambda h: {
        "draft": [f"{PREFIX}_{h}_0_draft_k", f"{PREFIX}_{h}_0_draft_v"],
        "draft_swa": [f"{PREFIX}_{h}_0_draft_swa_k", f"{PREFIX}_{h}_0_draft_swa_v"]})


MODELS = {"mamba": mamba_model, "mamba_conv_only": lambda a: mamba_model(a, conv_only=True),
          "mamba_conv_only_old_meta": lambda a: mamba_model(a, True, True),
          "swa_mha": swa_mha_model, "dsa": dsa_model, "deepseek_v4": deepseek_v4_model,
          "deepseek_v4_layer_first": lambda a: deepseek_v4_model(a, "layer_first"),
          "mha_draft": mha_draft_model}


def make_backend(pool, mode, model, register_kv=True, **extra):
    config = HiCacheStorageConfig(is_mla_model=model.is_mla, model_name=MODEL,
                                  extra_config=extra_for(pool, mode, **extra))
    group = FakeHostPoolGroup(model.anchor, {n: p for n, (p, _) in model.sides.items()})
    backend = KVPoolHiCacheStorage(config, {"mem_pool_host": group})
    if register_kv:
        backend.register_mem_host_pool_v2(model.anchor, PoolName.KV)
    for name, (side, _) in model.sides.items():
        backend.register_mem_host_pool_v2(side, name)
    return backend


def transfers(model, keys, first_page, names=None, trailing=None):
    """One PoolTransfer per side pool for pages first_page.. of each pool."""
    out = []
    for name, (side, policy) in model.sides.items():
        if names is not None and str(name) not in names:
            continue
        ks = keys if trailing is None or policy == ALL else keys[-trailing:]
        out.append(PoolTransfer(name=name, keys=ks, hit_policy=policy,
                                host_indices=page_indices(first_page, len(ks), side.page_size)))
    return out


def side_bytes(model, first_page, n):
    return {str(name): side.page_bytes(page_indices(first_page, n, side.page_size))
            for name, (side, _) in model.sides.items()}


def write_pages(backend, model, keys, first_page=0, seed=3):
    n = len(keys)
    for i, (side, _) in enumerate(model.sides.values()):
        side.fill_pages(page_indices(first_page, n, side.page_size), seed + i)
    results = backend.batch_set_v2(transfers(model, keys, first_page))
    assert results == {name: [True] * n for name in model.sides}
    if model.anchor.kv_buffer is not None:
        src = page_indices(first_page, n, model.anchor.page_size)
        model.anchor.fill_pages(src, seed + 100)
        assert backend.batch_set_v1(keys, src) == [True] * n


@pytest.fixture
def backends():
    made = []
    yield made
    for b in made:
        b.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_every_pool_kind_roundtrips_with_stock_keys(pool, store, uid, backends, mode, kind):
    model = MODELS[kind](allocator(mode))
    b = make_backend(pool, mode, model)
    backends.append(b)
    assert b.mode == mode
    keys = page_keys(uid, 4)
    write_pages(b, model, keys)
    # The stock Mooncake backend's keys, each object the size of its buffers.
    for h in keys:
        for name, literal in model.keys_of_page(h).items():
            assert store.batch_is_exist(literal) == [1] * len(literal), (name, literal)
    if kind.startswith("mamba_conv_only"):  # no zero-size temporal object
        assert store.is_exist(f"{PREFIX}_{keys[0]}_0_temporal") == 0
        mamba = model.sides[PoolName.MAMBA][0]
        assert store.get_size(f"{PREFIX}_{keys[0]}_0_conv_1") == 2 * 2 * 3 * 4
        assert mamba.temporal_buffer.shape[-1] == 0
    # Every stop point restorable; each pool hits every page.
    result = b.batch_exists_v2(keys, transfers(model, keys, 0, trailing=1))
    assert result.kv_hit_pages == 4
    assert result.restorable_prefix_pages == [1, 2, 3, 4]
    assert result.extra_pool_hit_pages == {PoolName.KV: 4, **{n: 4 for n in model.sides}}
    # Read into other slots: exactly the bytes written.
    written = side_bytes(model, 0, 4)
    for side, _ in model.sides.values():
        side.zero_pages(page_indices(8, 4, side.page_size))
    assert b.batch_get_v2(transfers(model, keys, 8)) == {n: [True] * 4 for n in model.sides}
    assert side_bytes(model, 8, 4) == written


@pytest.mark.parametrize("mode", MODES)
def test_exists_stops_at_missing_side_objects(pool, store, uid, backends, mode):
    """8 KV pages; Mamba (window 1) at pages 3 and 6; SWA (window 2) at pages 2, 3, 5, 6; an
    ALL_PAGES indexer for pages 1..7."""
    alloc = allocator(mode)
    model = Model(FakeMHAPool(alloc), {
        PoolName.MAMBA: (FakeMambaPool(alloc), TRAILING),
        PoolName.SWA: (FakeMHAPool(alloc, layer_num=2), TRAILING),
        PoolName.INDEXER: (FakePackedPool(alloc), ALL)}, False, None)
    b = make_backend(pool, mode, model)
    backends.append(b)
    keys = page_keys(uid, 8)
    model.anchor.fill_pages(page_indices(0, 8, 16), 1)
    assert b.batch_set_v1(keys, page_indices(0, 8, 16)) == [True] * 8

    def put(name, pages):
        side, policy = model.sides[name]
        for p in pages:
            t = PoolTransfer(name=name, keys=[keys[p - 1]], hit_policy=policy,
                             host_indices=page_indices(p, 1, side.page_size))
            assert b.batch_set_v2([t]) == {name: [True]}

    put(PoolName.MAMBA, [3, 6])
    put(PoolName.SWA, [2, 3, 5, 6])
    put(PoolName.INDEXER, range(1, 8))

    def query(last_pages=None):
        ks = keys if last_pages is None else keys[:last_pages]
        probe = [PoolTransfer(name=PoolName.MAMBA, keys=ks[-1:], hit_policy=TRAILING),
                 PoolTransfer(name=PoolName.SWA, keys=ks[-2:], hit_policy=TRAILING),
                 PoolTransfer(name=PoolName.INDEXER, keys=ks, hit_policy=ALL)]
        return b.batch_exists_v2(ks, probe)

    r = query()
    assert (r.kv_hit_pages, r.restorable_prefix_pages) == (6, [3, 6])
    assert r.extra_pool_hit_pages == {PoolName.KV: 8, PoolName.MAMBA: 6, PoolName.SWA: 6,
                                      PoolName.INDEXER: 7}
    # One component of page 6's Mamba state gone: the page is gone for Mamba.
    assert store.remove(f"{PREFIX}_{keys[5]}_0_conv_1", True) == 0
    r = query()
    assert (r.kv_hit_pages, r.restorable_prefix_pages) == (3, [3])
    assert r.extra_pool_hit_pages[PoolName.MAMBA] == 3
    # The indexer's ALL_PAGES run ends at a hole: page 2's object gone.
    assert store.remove(f"{PREFIX}_{keys[1]}__indexer", True) == 0
    r = query()
    assert (r.kv_hit_pages, r.restorable_prefix_pages) == (0, [])
    assert r.extra_pool_hit_pages[PoolName.INDEXER] == 1
    # No side pool asked: the KV prefix alone.
    r = b.batch_exists_v2(keys)
    assert (r.kv_hit_pages, r.restorable_prefix_pages) == (8, list(range(1, 9)))
    # A KV hole stops everything before the side pools are asked.
    r = b.batch_exists_v2(page_keys(uid, 1, start=50) + keys, None)
    assert (r.kv_hit_pages, r.extra_pool_hit_pages) == (0, {})


class Recorder:
    """Forwards to a store, recording each call (name, args)."""

    def __init__(self, store):
        self._store, self.calls = store, []

    def __getattr__(self, name):
        method = getattr(self._store, name)

        def call(*args, **kwargs):
            self.calls.append((name, args))
            return method(*args, **kwargs)
        return call


def test_one_put_per_batch_and_one_group_per_page(pool, uid, backends):
    """batch_set_v2 writes every pool's objects in one batch put whose group ids tie each
    page's components together (SGLang's ids: "sglang-hicache:<tagged page key>"); v1 KV
    objects of the page join the same group; batch_get_v2 is one batch get."""
    alloc = PlainHostTensorAllocator()
    model = Model(FakeMHAPool(alloc), {PoolName.MAMBA: (FakeMambaPool(alloc), TRAILING),
                                       PoolName.SWA: (FakeMHAPool(alloc, layer_num=2), TRAILING)},
                  False, None)
    b = make_backend(pool, "embedded", model)
    backends.append(b)
    b.store = rec = Recorder(b.store)
    keys = page_keys(uid, 3)
    write_pages(b, model, keys)
    puts = [(n, a) for n, a in rec.calls if "put" in n]
    assert [n for n, _ in puts] == ["batch_put_from", "batch_put_from"]  # v2 once, v1 once
    v2_keys, v1_keys = puts[0][1][0], puts[1][1][0]
    assert len(v2_keys) == 3 * (3 + 2)  # temporal + 2 conv, SWA K + V per page
    groups = {k: g for n, a in puts for k, g in zip(a[0], a[3].group_ids)}
    for h in keys:
        mine = {g for k, g in groups.items() if k.startswith(f"{PREFIX}_{h}_")}
        assert mine == {f"sglang-hicache:{PREFIX}_{h}"}
    assert sum(1 for k in v1_keys if k in groups) == 3 * 2
    rec.calls.clear()
    assert b.batch_get_v2(transfers(model, keys, 8)) == {n: [True] * 3 for n in model.sides}
    assert [n for n, _ in rec.calls] == ["batch_get_into"]


@pytest.mark.parametrize("mode", MODES)
def test_bad_inputs_fail_without_writing(pool, store, uid, backends, mode):
    model = mamba_model(allocator(mode))
    b = make_backend(pool, mode, model)
    backends.append(b)
    mamba = model.sides[PoolName.MAMBA][0]
    keys = page_keys(uid, 2)
    # A pool that was never registered: ValueError, as in SGLang's backend.
    stray = PoolTransfer(name=PoolName.INDEXER, keys=keys, host_indices=page_indices(0, 2, 16))
    for call in (b.batch_set_v2, b.batch_get_v2):
        with pytest.raises(ValueError, match="indexer"):
            call([stray])
    with pytest.raises(ValueError, match="indexer"):
        b.batch_exists_v2(keys, [stray])
    with pytest.raises(ValueError, match="unknown hybrid pool"):
        b.register_mem_host_pool_v2(mamba, "nonsense")
    b.register_mem_host_pool_v2(mamba, PoolName.MAMBA)  # again: no change, no error
    # Keys and indices of different lengths; a multi-token pool's page off its boundary.
    short = PoolTransfer(name=PoolName.MAMBA, keys=keys, host_indices=page_indices(0, 1, 1))
    assert b.batch_set_v2([short]) == {PoolName.MAMBA: [False, False]}
    swa_model = swa_mha_model(allocator(mode))
    b2 = make_backend(pool, mode, swa_model)
    backends.append(b2)
    skewed = PoolTransfer(name=PoolName.SWA, keys=keys[:1],
                          host_indices=page_indices(0, 1, 16) + 3)
    assert b2.batch_set_v2([skewed]) == {PoolName.SWA: [False]}
    odd = PoolTransfer(name=PoolName.SWA, keys=keys, host_indices=page_indices(0, 1, 16)[:20])
    assert b2.batch_set_v2([odd]) == {PoolName.SWA: [False, False]}
    # A host index past the pool's end: that page fails, the other is written, and no byte
    # outside the pool moves on a get either.
    beyond = PoolTransfer(name=PoolName.MAMBA, keys=keys,
                          host_indices=page_indices(0, 1, 1).tolist() + [mamba.size])
    mamba.fill_pages(page_indices(0, 1, 1), 9)
    assert b.batch_set_v2([beyond]) == {PoolName.MAMBA: [True, False]}
    assert store.is_exist(f"{PREFIX}_{keys[1]}_0_conv_0") == 0
    snapshot = mamba.page_bytes(page_indices(0, mamba.size, 1))
    again = PoolTransfer(name=PoolName.MAMBA, keys=[keys[0], keys[0]],
                         host_indices=[mamba.size + 1, mamba.size - 1])
    assert b.batch_get_v2([again]) == {PoolName.MAMBA: [False, True]}
    after = mamba.page_bytes(page_indices(0, mamba.size, 1))
    assert after[:-1] == snapshot[:-1] and after[-1] == snapshot[0]
    # Empty batches: nothing to do, no error.
    assert b.batch_set_v2([]) == {} and b.batch_get_v2([]) == {}
    empty = PoolTransfer(name=PoolName.MAMBA, keys=[], host_indices=page_indices(0, 0, 1))
    assert b.batch_set_v2([empty]) == {PoolName.MAMBA: []}


def test_split_heads_refuses_rank_sharded_side_pools(pool, backends):
    model = mamba_model(PlainHostTensorAllocator())
    config = HiCacheStorageConfig(model_name=MODEL, tp_size=2, tp_lcm_size=4,
                                  should_split_heads=True,
                                  extra_config=extra_for(pool, "embedded"))
    b = KVPoolHiCacheStorage(config, {"mem_pool_host": model.anchor})
    backends.append(b)
    with pytest.raises(ValueError, match="split heads"):
        b.register_mem_host_pool_v2(model.sides[PoolName.MAMBA][0], PoolName.MAMBA)


@pytest.mark.skipif(not kvpool.HAS_STANDALONE, reason="no standalone mode")
def test_standalone_side_pool_in_plain_memory(pool, backends):
    """A side pool outside kvpool's shared memory: standalone_allocator_mismatch decides, as
    for the anchor (error by default; copy moves pages through the node)."""
    anchor = FakeMHAPool(KVPoolHostTensorAllocator())
    mamba = FakeMambaPool(PlainHostTensorAllocator())
    model = Model(anchor, {PoolName.MAMBA: (mamba, TRAILING)}, False, None)
    with pytest.raises(RuntimeError, match="mamba pool"):
        make_backend(pool, "standalone", model)
    b = make_backend(pool, "standalone", model, standalone_allocator_mismatch="copy")
    backends.append(b)
    assert b.mode == "standalone-copy"
    keys = page_keys("copy-mode", 2)
    write_pages(b, model, keys)
    mamba.zero_pages(page_indices(8, 2, 1))
    assert b.batch_get_v2(transfers(model, keys, 8)) == {PoolName.MAMBA: [True, True]}
    assert mamba.page_bytes(page_indices(8, 2, 1)) == mamba.page_bytes(page_indices(0, 2, 1))


@pytest.mark.skipif(not kvpool.HAS_STANDALONE, reason="no standalone mode")
def test_standalone_side_pool_in_plain_memory_falls_back_to_embedded(pool, backends):
    """standalone_allocator_mismatch=embedded for a side pool: the backend rejoins the pool in
    embedded mode and registers the anchor and every side pool again."""
    alloc = KVPoolHostTensorAllocator()
    indexer = FakePackedPool(alloc)
    mamba = FakeMambaPool(PlainHostTensorAllocator())
    model = Model(FakeMHAPool(alloc), {PoolName.INDEXER: (indexer, ALL),
                                       PoolName.MAMBA: (mamba, TRAILING)}, False, None)
    b = make_backend(pool, "standalone", model, standalone_allocator_mismatch="embedded")
    backends.append(b)
    assert b.mode == "embedded"
    keys = page_keys("fallback", 2)
    write_pages(b, model, keys)
    written = side_bytes(model, 0, 2)
    for side, _ in model.sides.values():
        side.zero_pages(page_indices(4, 2, side.page_size))
    assert b.batch_get_v2(transfers(model, keys, 4)) == {n: [True] * 2 for n in model.sides}
    assert side_bytes(model, 4, 2) == written


def test_duck_typed_transfers_and_a_kv_transfer(pool, uid, backends):
    """Transfers from another SGLang version (any object with the fields; pool names and hit
    policies as plain strings) work, results keyed by the name given; a KV transfer in v2 reads
    the MLA anchor's pages that batch_set_v1 wrote (the same `__k` object)."""
    from types import SimpleNamespace

    model = dsa_model(PlainHostTensorAllocator())
    b = make_backend(pool, "embedded", model, register_kv=False)
    backends.append(b)
    keys = page_keys(uid, 3)
    write_pages(b, model, keys)
    b.register_mem_host_pool_v2(model.anchor, "kv")
    model.anchor.zero_pages(page_indices(6, 3, 16))
    kv = SimpleNamespace(name="kv", keys=keys, host_indices=page_indices(6, 3, 16),
                         hit_policy="all_pages")
    indexer = SimpleNamespace(name="indexer", keys=keys, host_indices=page_indices(6, 3, 16),
                              hit_policy="all_pages")
    assert b.batch_get_v2([kv, indexer]) == {"kv": [True] * 3, "indexer": [True] * 3}
    assert (model.anchor.page_bytes(page_indices(6, 3, 16))
            == model.anchor.page_bytes(page_indices(0, 3, 16)))
    r = b.batch_exists_v2(keys, [indexer])
    assert (r.kv_hit_pages, r.extra_pool_hit_pages) == (3, {PoolName.KV: 3, "indexer": 3})
    with pytest.raises(ValueError, match="hit policy"):
        b.batch_exists_v2(keys, [SimpleNamespace(name="indexer", keys=keys, hit_policy="most")])


@pytest.mark.parametrize("mode", MODES)
def test_a_full_pool_evicts_whole_pages(uid, mode):
    """Pages written through both calls (side pools by batch_set_v2, KV by batch_set_v1) into
    a pool too small for them: eviction takes a page's objects together (one group per page),
    so every page both calls reported written is either whole or gone, never a Mamba state
    without its KV or the reverse. A page one call reported not written may be partial: SGLang
    does not count it as stored (its exists stops there)."""
    from conftest import Pool

    p = Pool()
    try:
        p.add_node("16MB")
        model = mamba_model(allocator(mode))
        b = make_backend(p, mode, model)
        try:
            batches = 24  # 24 x 128 pages of ~8.6 KiB: about twice the pool
            unwritten = set()  # pages a set call reported False for
            for i in range(batches):
                keys = page_keys(f"{uid}-{i}", 128)
                mamba = model.sides[PoolName.MAMBA][0]  # slots reused: bytes do not matter
                t = PoolTransfer(name=PoolName.MAMBA, keys=keys, hit_policy=TRAILING,
                                 host_indices=page_indices(0, 128, 1) % mamba.size)
                sides = b.batch_set_v2([t])
                kv = b.batch_set_v1(keys, page_indices(0, 128, 16) % model.anchor.size)
                for j, h in enumerate(keys):
                    if not kv[j] or not all(r[j] for r in sides.values()):
                        unwritten.add(h)
            whole = gone = 0
            for i in range(batches):
                for h in page_keys(f"{uid}-{i}", 128):
                    if h in unwritten:
                        continue
                    objects = [o for objs in model.keys_of_page(h).values() for o in objs]
                    found = b.store.batch_is_exist(objects)
                    assert found in ([1] * len(objects), [0] * len(objects)), (h, found)
                    whole += found[0] == 1
                    gone += found[0] == 0
            assert whole > 0 and gone > 0, (whole, gone)
            assert len(unwritten) < batches * 128 // 10, len(unwritten)
        finally:
            b.close()
    finally:
        p.stop()
