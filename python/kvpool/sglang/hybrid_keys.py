"""Object keys of a hybrid model's side pools (SGLang's v2 interface), exactly as SGLang's stock
Mooncake backend builds them, so that both routes share a hybrid model's pages.

A page of pool P with (tagged) page key ``base`` is stored as one object per component, in the
order of P's ``get_page_buffer_meta`` for one page; ``mha`` is the rank suffix (``{tp_rank}`` or
``{tp_rank}_{pp_rank}``), ``mla`` the shared suffix (``""`` or ``{pp_rank}``):

  kv                  f"{base}_{mla}_k" (the page's buffers joined)
  mamba               f"{base}_{mha}_temporal" (left out when the temporal state has no
                      elements: conv-only models), then f"{base}_{mha}_conv_{i}" per conv state
  swa                 MHA model with a K/V pool: f"{base}_{mha}_swa_k", f"{base}_{mha}_swa_v";
                      MLA model: f"{base}_{mla}_swa"
  draft               MLA draft pool: f"{base}_{mla}_draft_k"; otherwise
                      f"{base}_{mha}_draft_k", f"{base}_{mha}_draft_v"
  draft_swa           MLA or DeepSeek V4 pool: f"{base}_{mla}_draft_swa"; MHA pool:
                      f"{base}_{mha}_draft_swa_k", f"{base}_{mha}_draft_swa_v"
  indexer, draft_indexer, deepseek_v4_*   f"{base}_{mla}_{pool}" (one page-packed object)

Every component of page ``base`` (all pools, and the KV objects of v1 once side pools are
registered) is written with group id f"sglang-hicache:{base}", the stock backend's, so the
master keeps a page's objects alive and evicts them together.
"""

from __future__ import annotations

from typing import Any, List, Sequence

from kvpool import ReplicateConfig
from kvpool.sglang.keys import KeyScheme

PAGE_PACKED_POOLS = frozenset({
    "indexer", "draft_indexer", "deepseek_v4_c4", "deepseek_v4_c4_indexer",
    "deepseek_v4_c4_indexer_scale", "deepseek_v4_c128", "deepseek_v4_c4_state",
    "deepseek_v4_c4_indexer_state", "deepseek_v4_c128_state"})
KNOWN_POOLS = PAGE_PACKED_POOLS | {"kv", "mamba", "swa", "draft", "draft_swa"}


def group_id(tagged_page_key: str) -> str:
    return f"sglang-hicache:{tagged_page_key}"


def group_config(group_ids: Sequence[str]) -> Any:
    """A ReplicateConfig with one group id per key (fields set after construction, the one
    form Mooncake's ReplicateConfig accepts too)."""
    config = ReplicateConfig()
    config.group_ids = list(group_ids)
    return config


def _class_names(pool: Any) -> set:
    return {c.__name__ for c in type(pool).__mro__}


def _is_mla_pool(pool: Any, also: tuple = ()) -> bool:
    """Whether a host pool holds one object per page: SGLang's MLA pool (or a class in
    `also`). SGLang's other classes hold K and V (the stock backend's rule); a pool of a class
    from elsewhere (a test's, another engine's) counts as MLA when it has no V buffer."""
    names = _class_names(pool)
    if names & ({"MLATokenToKVPoolHost"} | set(also)):
        return True
    if "MHATokenToKVPoolHost" in names or type(pool).__module__.startswith("sglang."):
        return False
    return getattr(pool, "v_buffer", None) is None


def _mha(scheme: KeyScheme, pool: str) -> str:
    if scheme.split_heads:
        # The stock backend formats a list of rank suffixes into these keys; refuse rather
        # than write keys nobody else can read.
        raise ValueError(f"kvpool: the {pool} pool is stored per TP rank, which is not "
                         f"available with split heads (tp_lcm_size > tp_size)")
    return scheme.mha_suffixes[0]


def component_suffixes(name: str, host_pool: Any, scheme: KeyScheme) -> List[str]:
    """The key suffix of each object of one page of pool `name` (see the module docstring).
    Raises ValueError for a pool this scheme cannot store."""
    mla = scheme.mla_suffix
    if name == "kv":
        return [f"_{mla}_k"]
    if name == "mamba":
        mha = _mha(scheme, name)
        convs = [f"_{mha}_conv_{i}" for i in range(len(getattr(host_pool, "conv_buffer", None)
                                                          or []))]
        if int(getattr(host_pool, "temporal_state_elem_size", 1)) > 0:
            convs.insert(0, f"_{mha}_temporal")
        if not convs:
            raise ValueError("kvpool: the mamba pool has neither a temporal nor a conv state")
        return convs
    if name == "draft":
        if _is_mla_pool(host_pool):
            return [f"_{mla}_draft_k"]
        mha = _mha(scheme, name)
        return [f"_{mha}_draft_k", f"_{mha}_draft_v"]
    if name == "draft_swa":
        if _is_mla_pool(host_pool, also=("DeepSeekV4PagedHostPool",)):
            return [f"_{mla}_draft_swa"]
        mha = _mha(scheme, name)
        return [f"_{mha}_draft_swa_k", f"_{mha}_draft_swa_v"]
    if name in PAGE_PACKED_POOLS:
        return [f"_{mla}_{name}"]
    if name == "swa":
        if not scheme.is_mla and getattr(host_pool, "v_buffer", None) is not None:
            mha = _mha(scheme, name)
            return [f"_{mha}_swa_k", f"_{mha}_swa_v"]
        if scheme.is_mla:
            return [f"_{mla}_swa"]
        raise ValueError(f"kvpool: an swa pool of an MHA model needs a K/V host pool (with "
                         f"v_buffer); got {type(host_pool).__name__}")
    raise ValueError(f"kvpool: unknown hybrid pool {name!r}; SGLang's pools are "
                     f"{', '.join(sorted(KNOWN_POOLS))}")
