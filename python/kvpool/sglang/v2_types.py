"""SGLang's v2 (hybrid-model) storage types: SGLang's own when it is installed, stand-ins with
the same names, fields and values when it is not (tests, other engines).

The backend reads these objects duck-typed (``transfer.name``, ``.keys``, ``.host_indices``,
``.hit_policy``), so SGLang's real ``PoolTransfer`` and the stand-in work alike, and pool names
and hit policies may be the enums or their string values (``"mamba"``, ``"trailing_pages"``).
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Dict, List, Optional

try:
    from sglang.srt.mem_cache.hicache_storage import (  # noqa: F401
        PoolHitPolicy,
        PoolName,
        PoolTransfer,
        PoolTransferResult,
    )
except ImportError:

    class PoolName(str, enum.Enum):  # type: ignore[no-redef]
        """Stand-in for SGLang's PoolName (same members and values)."""

        KV = "kv"
        MAMBA = "mamba"
        SWA = "swa"
        INDEXER = "indexer"
        DEEPSEEK_V4_C4 = "deepseek_v4_c4"
        DEEPSEEK_V4_C4_INDEXER = "deepseek_v4_c4_indexer"
        DEEPSEEK_V4_C4_INDEXER_SCALE = "deepseek_v4_c4_indexer_scale"
        DEEPSEEK_V4_C128 = "deepseek_v4_c128"
        DEEPSEEK_V4_C4_STATE = "deepseek_v4_c4_state"
        DEEPSEEK_V4_C4_INDEXER_STATE = "deepseek_v4_c4_indexer_state"
        DEEPSEEK_V4_C128_STATE = "deepseek_v4_c128_state"
        DRAFT = "draft"
        DRAFT_INDEXER = "draft_indexer"
        DRAFT_SWA = "draft_swa"

        def __str__(self) -> str:
            return self.value

    class PoolHitPolicy(str, enum.Enum):  # type: ignore[no-redef]
        """Stand-in for SGLang's PoolHitPolicy."""

        ALL_PAGES = "all_pages"
        TRAILING_PAGES = "trailing_pages"

    @dataclasses.dataclass
    class PoolTransfer:  # type: ignore[no-redef]
        """Stand-in for SGLang's PoolTransfer (the fields a storage backend sees)."""

        name: Any
        host_indices: Any = None
        device_indices: Any = None
        keys: Optional[List[str]] = None
        hit_policy: Any = PoolHitPolicy.ALL_PAGES
        nodes_to_load: Optional[List[Any]] = None
        indices_from_pool: Any = None

    @dataclasses.dataclass
    class PoolTransferResult:  # type: ignore[no-redef]
        """Stand-in for SGLang's PoolTransferResult."""

        kv_hit_pages: int
        extra_pool_hit_pages: Dict[str, int]
        restorable_prefix_pages: Optional[List[int]] = None

        @classmethod
        def empty(cls) -> "PoolTransferResult":
            return cls(0, {})


def pool_name(name: Any) -> str:
    """The string value of a pool name (an enum member or a plain string)."""
    return str(getattr(name, "value", name))


def hit_policy(policy: Any) -> str:
    value = str(getattr(policy, "value", policy))
    if value not in ("all_pages", "trailing_pages"):
        raise ValueError(f"kvpool: unsupported pool hit policy {policy!r} (all_pages or "
                         f"trailing_pages)")
    return value


def make_result(kv_hit_pages: int, hit_count: Dict[Any, int], restorable: List[int]) -> Any:
    """A PoolTransferResult; SGLang versions before restorable_prefix_pages take two fields."""
    try:
        return PoolTransferResult(kv_hit_pages, hit_count, restorable)
    except TypeError:
        return PoolTransferResult(kv_hit_pages, hit_count)
