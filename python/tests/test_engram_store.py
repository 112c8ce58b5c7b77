"""Mooncake's EngramStore / EngramStoreConfig (mooncake.store) on kvpool, against a real pool in
embedded and standalone mode: Mooncake's signatures, defaults, key names, table layout and
failures (RuntimeError / ValueError / TypeError as its binding raises them)."""

import numpy as np
import pytest

import kvpool
from kvpool.engram_store import EngramStore, EngramStoreConfig


@pytest.fixture(params=["embedded", "standalone"])
def any_store(request):
    if request.param == "standalone" and not kvpool.HAS_STANDALONE:
        pytest.skip("built without standalone mode")
    return request.getfixturevalue("store" if request.param == "embedded" else "dummy_store")


def layer_of(uid: str) -> int:
    return int(uid[:7], 16)  # a layer id of this test's own (the session pool is shared)


def config(vocab=(5, 3), dim=4) -> EngramStoreConfig:
    c = EngramStoreConfig()
    c.table_vocab_sizes = list(vocab)
    c.embedding_dim = dim
    return c


def tables(vocab=(5, 3), dim=4):
    return [np.arange(n * dim, dtype=np.float32).reshape(n, dim) + 1000 * h
            for h, n in enumerate(vocab)]


def test_config_defaults_types_and_fields():
    c = EngramStoreConfig()
    assert (c.table_vocab_sizes, c.embedding_dim) == ([1024], 64)
    c.table_vocab_sizes = (7, 9)
    c.embedding_dim = 8
    assert (c.table_vocab_sizes, c.embedding_dim) == ([7, 9], 8)
    c.table_vocab_sizes.append(1)  # a copy, as pybind11's vector field
    assert c.table_vocab_sizes == [7, 9]
    for field, bad in [("embedding_dim", 1.5), ("embedding_dim", "8"), ("embedding_dim", 2**31),
                       ("table_vocab_sizes", "12"), ("table_vocab_sizes", [1.0]),
                       ("table_vocab_sizes", 3)]:
        with pytest.raises(TypeError):
            setattr(c, field, bad)
    with pytest.raises(AttributeError):
        c.row_bytes = 4
    with pytest.raises(TypeError):
        EngramStoreConfig(embedding_dim=4)  # no-argument constructor only


def test_constructor_checks_and_getters(store):
    for vocab, dim in [((), 4), ((4, 0), 4), ((4, -1), 4), ((4,), 0), ((4,), -3)]:
        with pytest.raises(ValueError):
            EngramStore(1, config(vocab, dim), store)
    with pytest.raises(RuntimeError, match="store parameter"):
        EngramStore(1, config(), object())
    c = config((5, 3, 2), 16)
    e = EngramStore(7, c, store=store)
    c.embedding_dim = 99  # the store copied the config
    assert e.get_table_vocab_sizes() == [5, 3, 2]
    assert e.get_num_heads() == 3 and e.get_embedding_dim() == 16
    assert e.get_store_keys() == ["engram:l7:h0", "engram:l7:h1", "engram:l7:h2"]  # Mooncake's
    assert EngramStore(-2, config((1,), 1)).get_store_keys() == ["engram:l-2:h0"]


def test_populate_lookup_remove_round_trip(any_store, uid):
    layer = layer_of(uid)
    e = EngramStore(layer, config(), any_store)
    t = tables()
    assert e.populate(t) is None
    # Each head's object is its table's float32 rows in C order (Mooncake's layout).
    for key, table in zip(e.get_store_keys(), t):
        assert any_store.get(key) == table.tobytes()
    ids = np.array([[[4, 0], [1, 2]], [[0, 2], [3, 1]], [[2, 0], [2, 0]]], dtype=np.int64)
    out = e.lookup(ids)
    assert out.dtype == np.float32 and out.shape == (3, 2, 2, 4)
    for b in range(3):
        for pos in range(2):
            for h in range(2):
                np.testing.assert_array_equal(out[b, pos, h], t[h][ids[b, pos, h]])
    # Nested lists and int32 arrays give the same rows.
    np.testing.assert_array_equal(e.lookup(ids.tolist()), out)
    np.testing.assert_array_equal(e.lookup(ids.astype(np.int32)), out)
    assert e.remove_from_store() == 2
    assert e.remove_from_store(force=True) == 0  # missing keys are skipped, not errors
    with pytest.raises(RuntimeError, match="lookup failed"):
        e.lookup(ids)


def test_populate_refusals_write_nothing(any_store, uid):
    layer = layer_of(uid)
    e = EngramStore(layer, config(), any_store)
    t = tables()
    with pytest.raises(RuntimeError, match="num_heads"):
        e.populate(t[:1])
    with pytest.raises(RuntimeError, match="NumPy"):
        e.populate([t[0], t[1].tolist()])
    with pytest.raises(RuntimeError, match="shape"):
        e.populate([t[0], t[1][:2]])
    with pytest.raises(RuntimeError, match="2D"):
        e.populate([t[0], t[1].reshape(-1)])
    with pytest.raises(TypeError):
        e.populate(tuple(t))  # a list, as Mooncake's py::list
    assert any_store.batch_is_exist(e.get_store_keys()) == [0, 0]
    # float64 input is cast to float32, as Mooncake's forcecast.
    e.populate([x.astype(np.float64) for x in t])
    # A second populate of an existing layer is refused and keeps the stored bytes.
    with pytest.raises(RuntimeError, match="populate failed"):
        e.populate([x + 1 for x in t])
    np.testing.assert_array_equal(e.lookup([[[1, 2]]])[0, 0], np.stack([t[0][1], t[1][2]]))
    assert e.remove_from_store() == 2


def test_lookup_refusals(any_store, uid):
    e = EngramStore(layer_of(uid), config(), any_store)
    e.populate(tables())
    for bad, what in [(np.zeros((2, 2), dtype=np.int64), "shape"),
                      (np.zeros((1, 1, 3), dtype=np.int64), "num_heads"),
                      (np.array([[[5, 0]]]), "lookup failed"),    # past head 0's 5 rows
                      (np.array([[[0, -1]]]), "lookup failed"),
                      (np.zeros((0, 1, 2), dtype=np.int64), "lookup failed"),
                      ([], "empty"), ([[]], "empty"),
                      ([[[0, 1]], [[0]]], "lookup failed"),       # ragged
                      ([[[0, 1.5]]], "cast")]:
        with pytest.raises(RuntimeError, match=what):
            e.lookup(bad)
    assert e.remove_from_store() == 2


def test_tables_written_by_mooncakes_layout_read_back(any_store, uid):
    """A layer written by another client as raw float32 rows under Mooncake's key names (what
    Mooncake's populate stores) is read by lookup; a table shorter than a requested row fails."""
    layer = layer_of(uid)
    t = tables((3,), 2)
    assert any_store.put(f"engram:l{layer}:h0", t[0].tobytes()) == 0
    e = EngramStore(layer, config((3,), 2), any_store)
    np.testing.assert_array_equal(e.lookup([[[2], [0]]])[0, :, 0], t[0][[2, 0]])
    short = EngramStore(layer, config((4,), 2), any_store)  # claims a 4th row the object lacks
    np.testing.assert_array_equal(short.lookup([[[1]]])[0, 0, 0], t[0][1])
    with pytest.raises(RuntimeError, match="lookup failed"):
        short.lookup([[[3]]])
    assert e.remove_from_store() == 1


def test_without_a_store_or_after_close(pool, uid):
    e = EngramStore(1, config())
    with pytest.raises(RuntimeError, match="rc=-600"):
        e.remove_from_store()
    with pytest.raises(RuntimeError, match="populate failed"):
        e.populate(tables())
    with pytest.raises(RuntimeError, match="lookup failed"):
        e.lookup([[[0, 0]]])
    s = kvpool.KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address) == 0
    e = EngramStore(layer_of(uid), config(), s)
    e.populate(tables())
    s2 = kvpool.KVPoolStore()
    assert s2.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address) == 0
    s.close()
    with pytest.raises(RuntimeError, match="lookup failed"):
        e.lookup([[[0, 0]]])
    with pytest.raises(RuntimeError, match="rc=-1010"):
        e.remove_from_store()
    assert EngramStore(layer_of(uid), config(), s2).remove_from_store() == 2
    s2.close()


def test_compat_module_exports_it(monkeypatch):
    from conftest import COMPAT_DIR
    import sys
    monkeypatch.syspath_prepend(str(COMPAT_DIR))
    for m in [m for m in sys.modules if m == "mooncake" or m.startswith("mooncake.")]:
        monkeypatch.delitem(sys.modules, m)
    import mooncake.store as ms
    assert ms.EngramStore is EngramStore and ms.EngramStoreConfig is EngramStoreConfig
    s = ms.MooncakeDistributedStore()
    assert EngramStore(3, ms.EngramStoreConfig(), s).get_store_keys() == ["engram:l3:h0"]


def test_a_layer_populated_in_one_mode_reads_in_the_other(store, dummy_store, uid):
    if not kvpool.HAS_STANDALONE:
        pytest.skip("built without standalone mode")
    layer = layer_of(uid)
    t = tables((6, 2, 9), 3)
    EngramStore(layer, config((6, 2, 9), 3), dummy_store).populate(t)
    reader = EngramStore(layer, config((6, 2, 9), 3), store)
    ids = np.array([[[5, 1, 8], [0, 0, 0]]])
    out = reader.lookup(ids)
    for h in range(3):
        np.testing.assert_array_equal(out[0, :, h], t[h][ids[0, :, h]])
    assert reader.remove_from_store() == 3
