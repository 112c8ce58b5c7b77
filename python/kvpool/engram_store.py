"""Mooncake's ``EngramStore`` / ``EngramStoreConfig`` (mooncake.store) on kvpool: per-head
embedding tables of one model layer kept in the pool, looked up by precomputed row ids.

Layer ``layer_id`` head ``h`` is the object ``engram:l<layer_id>:h<h>``: the table's rows,
float32 ``[table_vocab_sizes[h], embedding_dim]`` in C order (Mooncake's key and layout, so
both implementations read each other's tables). ``populate`` writes a layer's heads as one batch
put; ``lookup`` fetches them as one batch get and gathers the rows; ``remove_from_store`` removes
them. Failures raise as Mooncake's binding does: ``RuntimeError`` (``ValueError`` for a bad
config at construction, ``TypeError`` for a wrongly typed config field), with the last store
error in ``kvpool.last_error()``.

Differences from Mooncake's: ``lookup`` reads each head's whole table (one batch get) and
gathers the rows here, where Mooncake reads only the rows (ranged reads into a registered
output); so it works in standalone mode too, where Mooncake's registration of a numpy output
fails. ``populate`` copies the arrays into the pool (any mode), where Mooncake registers them.

Thread-safety: an ``EngramStore`` holds no mutable state beyond its store; calls may run from
several threads as the store's own calls may.
"""

from __future__ import annotations

import operator
from typing import List

import numpy as np

from kvpool import _kvpool

_OBJECT_NOT_FOUND = -704
_INVALID_PARAMS = -600
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _as_c_int(value, lo: int, hi: int, what: str) -> int:
    """An int in [lo, hi] (pybind11's rule for a C integer: no float, no str; TypeError)."""
    if isinstance(value, float) or isinstance(value, (str, bytes)):
        raise TypeError(f"{what}: incompatible type {type(value).__name__}, expected an int")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{what}: incompatible type {type(value).__name__}, expected an int") \
            from None
    if not lo <= n <= hi:
        raise TypeError(f"{what}: {n} does not fit the field's C type")
    return n


class EngramStoreConfig:
    """The physical layout of one layer's tables: ``table_vocab_sizes`` (rows per head, one
    entry per head; default ``[1024]``) and ``embedding_dim`` (float32 values per row; default
    64). No-argument constructor only, as Mooncake's; fields are typed (``TypeError``) and no
    other attribute can be set (``AttributeError``)."""

    __slots__ = ("_table_vocab_sizes", "_embedding_dim")

    def __init__(self) -> None:
        self._table_vocab_sizes: List[int] = [1024]
        self._embedding_dim: int = 64

    @property
    def table_vocab_sizes(self) -> List[int]:
        return list(self._table_vocab_sizes)  # a copy, as pybind11's def_readwrite of a vector

    @table_vocab_sizes.setter
    def table_vocab_sizes(self, value) -> None:
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
            raise TypeError("table_vocab_sizes: expected a sequence of ints")
        self._table_vocab_sizes = [
            _as_c_int(v, _I64_MIN, _I64_MAX, "table_vocab_sizes item") for v in value]

    @property
    def embedding_dim(self) -> int:
        return self._embedding_dim

    @embedding_dim.setter
    def embedding_dim(self, value) -> None:
        self._embedding_dim = _as_c_int(value, _INT_MIN, _INT_MAX, "embedding_dim")


def _check_store(store):
    if store is None or isinstance(store, _kvpool.KVPoolStore):
        return store
    raise RuntimeError("EngramStore store parameter must be a kvpool store "
                       "(kvpool.MooncakeDistributedStore / mooncake.store."
                       "MooncakeDistributedStore)")


class EngramStore:
    """One layer's embedding tables in ``store`` (``None``: no store; then every data call
    fails). ``EngramStore(layer_id, config, store=None)``; the config is copied."""

    def __init__(self, layer_id: int, config: EngramStoreConfig, store=None) -> None:
        layer_id = _as_c_int(layer_id, _INT_MIN, _INT_MAX, "layer_id")
        if not isinstance(config, EngramStoreConfig):
            raise TypeError("config: expected an EngramStoreConfig")
        self._store = _check_store(store)
        self._vocab = config.table_vocab_sizes
        self._dim = config.embedding_dim
        if not self._vocab:
            raise ValueError("EngramStoreConfig.table_vocab_sizes must not be empty")
        if self._dim <= 0:
            raise ValueError("EngramStoreConfig.embedding_dim must be positive")
        if any(v <= 0 for v in self._vocab):
            raise ValueError("EngramStoreConfig.table_vocab_sizes must contain only positive "
                             "values")
        self._keys = [f"engram:l{layer_id}:h{h}" for h in range(len(self._vocab))]

    # ---- getters ----

    def get_table_vocab_sizes(self) -> List[int]:
        return list(self._vocab)

    def get_store_keys(self) -> List[str]:
        return list(self._keys)

    def get_num_heads(self) -> int:
        return len(self._vocab)

    def get_embedding_dim(self) -> int:
        return self._dim

    # ---- data ----

    def _row_bytes(self) -> int:
        return self._dim * 4

    def populate(self, embedding_buffers) -> None:
        """Stores the layer: ``embedding_buffers[h]`` is head h's table, a NumPy array of shape
        ``[table_vocab_sizes[h], embedding_dim]`` (cast to C-contiguous float32). The keys must
        not exist yet (remove the layer first); all heads are put in one batch, and if any fails
        the others are removed again. Raises RuntimeError."""
        if not isinstance(embedding_buffers, list):
            raise TypeError("populate(): embedding_buffers must be a list")
        if len(embedding_buffers) != len(self._vocab):
            raise RuntimeError("embedding_buffers size must match num_heads")
        tables = []
        for buf, rows in zip(embedding_buffers, self._vocab):
            if not isinstance(buf, np.ndarray):
                raise RuntimeError("embedding_buffers must be NumPy arrays")
            try:
                arr = np.ascontiguousarray(buf, dtype=np.float32)
            except (TypeError, ValueError):
                raise RuntimeError("embedding_buffers must be float32 arrays") from None
            if arr.ndim != 2:
                raise RuntimeError("each embedding buffer must be 2D [N_h, D]")
            if arr.shape != (rows, self._dim):
                raise RuntimeError("embedding buffer shape does not match "
                                   "get_table_vocab_sizes()/get_embedding_dim()")
            tables.append(arr)
        if self._populate(tables) != 0:
            raise RuntimeError("populate failed")

    def _populate(self, tables) -> int:
        s = self._store
        if s is None:
            return -1
        exists = s.batch_is_exist(self._keys)
        if len(exists) != len(self._keys) or any(e != 0 for e in exists):
            # An existing key would keep its old bytes (a put does not overwrite); a negative
            # answer leaves the state unknown. Either way nothing is written.
            return -1
        codes = s.batch_put_from_buffers(self._keys, [memoryview(t).cast("B") for t in tables])
        if len(codes) == len(self._keys) and all(c == 0 for c in codes):
            return 0
        for key, code in zip(self._keys, codes):
            if code == 0:
                s.remove(key, True)  # roll back the heads that were written
        return -1

    def lookup(self, row_ids) -> np.ndarray:
        """Rows by id: ``row_ids`` is ``[B, L, H]`` (a NumPy array, cast to int64, or nested
        sequences); returns float32 ``[B, L, H, embedding_dim]`` where ``out[b, l, h]`` is row
        ``row_ids[b, l, h]`` of head h's table. Raises RuntimeError for a wrong shape, an id
        outside its table, a missing or short table, or no store."""
        if isinstance(row_ids, np.ndarray):
            try:
                ids = np.ascontiguousarray(row_ids, dtype=np.int64)
            except (TypeError, ValueError):
                raise RuntimeError("row_ids array must be convertible to int64") from None
            if ids.ndim != 3:
                raise RuntimeError("row_ids array must have shape [B, L, H]")
            if ids.shape[2] != len(self._vocab):
                raise RuntimeError("row_ids last dimension must match num_heads")
        else:
            ids = self._nested_ids(row_ids)
        out = self._lookup(ids)
        if out is None:
            raise RuntimeError("EngramStore lookup failed")
        return out

    def _nested_ids(self, row_ids) -> np.ndarray:
        try:
            rows = [[[operator.index(h) for h in token] for token in batch] for batch in row_ids]
        except TypeError as e:
            if "iterable" in str(e):
                raise
            # A non-int id: pybind11's failed cast, a RuntimeError in Mooncake's binding.
            raise RuntimeError(f"Unable to cast a row id to int64: {e}") from None
        if not rows or not rows[0]:
            raise RuntimeError("row_ids must not be empty")
        num_heads, length = len(self._vocab), len(rows[0])
        if any(len(b) != length or any(len(t) != num_heads for t in b) for b in rows):
            raise RuntimeError("EngramStore lookup failed")
        try:
            return np.array(rows, dtype=np.int64).reshape(len(rows), length, num_heads)
        except OverflowError:
            raise RuntimeError("EngramStore lookup failed") from None

    def _lookup(self, ids: np.ndarray):
        b, length, num_heads = ids.shape
        if self._store is None or b <= 0 or length <= 0:
            return None
        vocab = np.asarray(self._vocab, dtype=np.int64)
        if ids.size and (ids.min() < 0 or (ids >= vocab).any()):
            return None
        handles = self._store.batch_get_buffer(self._keys)
        if len(handles) != num_heads:
            return None
        out = np.empty((b, length, num_heads, self._dim), dtype=np.float32)
        row_bytes = self._row_bytes()
        for h, handle in enumerate(handles):
            head_ids = ids[:, :, h]
            if handle is None or (int(head_ids.max()) + 1) * row_bytes > handle.size():
                return None  # missing, or too short for a requested row (a fragment past it)
            rows = handle.size() // row_bytes
            table = np.frombuffer(handle, dtype=np.uint8, count=rows * row_bytes)
            out[:, :, h, :] = table.view(np.float32).reshape(rows, self._dim)[head_ids]
        return out

    def remove_from_store(self, force: bool = False) -> int:
        """Removes the layer's head tables; returns how many were removed (missing ones are
        skipped). Raises RuntimeError naming the first other error's code (a leased table
        without ``force``: -706 OBJECT_HAS_LEASE; no store: -600)."""
        if self._store is None:
            rc = _INVALID_PARAMS
        else:
            removed, rc = 0, 0
            for key in self._keys:
                code = self._store.remove(key, bool(force))
                if code == 0:
                    removed += 1
                elif code != _OBJECT_NOT_FOUND and rc == 0:
                    rc = code
            if rc == 0:
                return removed
        raise RuntimeError(f"remove_from_store failed, rc={rc}")
