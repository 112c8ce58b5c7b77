"""Object keys of HiCache pages, exactly as SGLang's Mooncake backend builds them.

prefix = "_".join([extra_backend_tag (if any), model_name with "/" -> "-"]); base =
f"{prefix}_{page_hash}" (just the hash without a prefix).
  MHA: f"{base}_{tp_rank}_k" and f"{base}_{tp_rank}_v" ("{tp_rank}_{pp_rank}" when pp_size > 1);
       with split heads (tp_lcm_size > tp_size) one K/V pair per target rank.
  MLA: f"{base}_{pp_rank if pp_size > 1 else ''}_k" -> f"{base}__k": one object shared by all
       TP ranks (rank 0 writes it).
Keeping the scheme identical lets kvpool's backend and SGLang's stock Mooncake backend (on
kvpool through the compatibility package) share pages.
"""

from __future__ import annotations

from typing import Any, List, Mapping, Optional, Sequence


class KeyScheme:
    def __init__(self, model_name: Optional[str] = None, extra_backend_tag: Optional[str] = None,
                 tp_rank: int = 0, pp_rank: int = 0, pp_size: int = 1, is_mla: bool = False,
                 split_factor: int = 0):
        parts = []
        if extra_backend_tag is not None:
            parts.append(str(extra_backend_tag))
        if model_name:
            parts.append("-".join(model_name.split("/")))
        self.prefix = "_".join(parts) if parts else None
        self.is_mla = is_mla
        self.tp_rank = tp_rank
        self.split_heads = split_factor > 0
        if pp_size > 1:
            self.mla_suffix = f"{pp_rank}"
            rank_suffix = lambda r: f"{r}_{pp_rank}"  # noqa: E731
        else:
            self.mla_suffix = ""
            rank_suffix = lambda r: f"{r}"  # noqa: E731
        if split_factor > 0:
            base = tp_rank * split_factor
            self.mha_suffixes = [rank_suffix(base + i) for i in range(split_factor)]
        else:
            self.mha_suffixes = [rank_suffix(tp_rank)]

    @classmethod
    def from_storage_config(cls, storage_config: Any,
                            extra_config: Optional[Mapping[str, Any]] = None) -> "KeyScheme":
        extra = extra_config or {}
        if storage_config is None:
            return cls(extra_backend_tag=extra.get("extra_backend_tag"))
        split = 0
        if getattr(storage_config, "should_split_heads", False):
            split = int(storage_config.tp_lcm_size) // int(storage_config.tp_size)
        return cls(model_name=getattr(storage_config, "model_name", None),
                   extra_backend_tag=extra.get("extra_backend_tag"),
                   tp_rank=int(getattr(storage_config, "tp_rank", 0)),
                   pp_rank=int(getattr(storage_config, "pp_rank", 0)),
                   pp_size=int(getattr(storage_config, "pp_size", 1)),
                   is_mla=bool(getattr(storage_config, "is_mla_model", False)),
                   split_factor=split)

    @property
    def objects_per_page(self) -> int:
        return 1 if self.is_mla else 2 * len(self.mha_suffixes)

    def tag(self, page_key: str) -> str:
        return f"{self.prefix}_{page_key}" if self.prefix else page_key

    def object_keys(self, page_keys: Sequence[str]) -> List[str]:
        """The store keys of each page, page by page, in get_page_buffer_meta order."""
        out: List[str] = []
        for key in page_keys:
            base = self.tag(key)
            if self.is_mla:
                out.append(f"{base}_{self.mla_suffix}_k")
            else:
                for suffix in self.mha_suffixes:
                    out.append(f"{base}_{suffix}_k")
                    out.append(f"{base}_{suffix}_v")
        return out
