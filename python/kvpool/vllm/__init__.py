"""kvpool for vLLM: a secondary tier of vLLM's native KV offloading (route A, docs/vllm.md).

``register()`` adds the tier type ``"kvpool"`` to vLLM's ``SecondaryTierFactory``; it runs on
import when vLLM is installed, and as a vLLM general plugin (entry point
``vllm.general_plugins: kvpool = kvpool.vllm:register``) so that vLLM's processes load it
without any change to vLLM.
"""

from kvpool.vllm.tier import (  # noqa: F401
    TIER_TYPE,
    JobMetadata,
    JobResult,
    KVPoolSecondaryTier,
    LookupResult,
    offload_key_name,
)


def register() -> bool:
    """Registers the ``"kvpool"`` tier with vLLM's factory; False when vLLM has none."""
    try:
        from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory
    except Exception:
        return False
    registry = getattr(SecondaryTierFactory, "_registry", {})
    if TIER_TYPE not in registry:
        SecondaryTierFactory.register_tier(TIER_TYPE, "kvpool.vllm.tier", "KVPoolSecondaryTier")
    return True


register()

__all__ = ["KVPoolSecondaryTier", "JobMetadata", "JobResult", "LookupResult", "TIER_TYPE",
           "offload_key_name", "register"]
