"""SGLang's HiCacheStorage base and config when SGLang is installed; stand-ins when it is not
(tests, other engines). The stand-ins carry the same names and fields."""

from __future__ import annotations

import dataclasses
from typing import Any, List, Optional

try:
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage as HiCacheStorageBase
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig

    HAVE_SGLANG = True
except ImportError:
    HAVE_SGLANG = False

    class HiCacheStorageBase:  # type: ignore[no-redef]
        """Stand-in for sglang.srt.mem_cache.hicache_storage.HiCacheStorage."""

        def register_mem_pool_host(self, mem_pool_host: Any) -> None:
            self.mem_pool_host = mem_pool_host

    @dataclasses.dataclass
    class HiCacheStorageConfig:  # type: ignore[no-redef]
        """Stand-in for SGLang's HiCacheStorageConfig (same fields and defaults)."""

        tp_rank: int = 0
        tp_size: int = 1
        pp_rank: int = 0
        pp_size: int = 1
        attn_cp_rank: int = 0
        attn_cp_size: int = 1
        is_mla_model: bool = False
        enable_storage_metrics: bool = False
        is_page_first_layout: bool = True
        model_name: Optional[str] = None
        dp_rank: int = 0
        dp_size: int = 1
        tp_lcm_size: Optional[int] = None
        should_split_heads: bool = False
        extra_config: Optional[dict] = None


def _find_storage_metrics():
    for module in ("sglang.srt.observability.metrics_collector", "sglang.srt.metrics.collector"):
        try:
            return __import__(module, fromlist=["StorageMetrics"]).StorageMetrics
        except (ImportError, AttributeError):
            continue
    return None


@dataclasses.dataclass
class _StorageMetricsStandIn:
    prefetch_pgs: List[int] = dataclasses.field(default_factory=list)
    backup_pgs: List[int] = dataclasses.field(default_factory=list)
    prefetch_bandwidth: List[float] = dataclasses.field(default_factory=list)
    backup_bandwidth: List[float] = dataclasses.field(default_factory=list)


StorageMetrics = _find_storage_metrics() or _StorageMetricsStandIn
