"""Makes SGLang allocate its host KV pool with kvpool's allocator for the dynamic backend.

SGLang asks ``get_allocator_from_storage(allocator_type)`` for the host pool's allocator;
``allocator_type`` is the storage backend's name. :func:`install_host_allocator` wraps that
function (in every loaded SGLang module that holds it) so that ``"dynamic"`` (and ``"kvpool"``)
give :class:`kvpool.allocator.KVPoolHostTensorAllocator`; other names keep SGLang's choice.
It depends on that one SGLang function name and is a no-op (returning False) when no loaded
SGLang module has it.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Iterable

logger = logging.getLogger("kvpool.sglang")

KVPOOL_ALLOCATOR_TYPES = ("dynamic", "kvpool")
_CANDIDATE_MODULES = (
    "sglang.srt.mem_cache.memory_pool_host",
    "sglang.srt.mem_cache.pool_host",
    "sglang.srt.mem_cache.pool_host.base",
)


def _wrap(original):
    def get_allocator_from_storage(allocator_type, *args, **kwargs):
        if allocator_type in KVPOOL_ALLOCATOR_TYPES:
            from kvpool.allocator import KVPoolHostTensorAllocator

            return KVPoolHostTensorAllocator()
        return original(allocator_type, *args, **kwargs)

    get_allocator_from_storage.__kvpool_original__ = original
    get_allocator_from_storage.__doc__ = original.__doc__
    return get_allocator_from_storage


def install_host_allocator(modules: Iterable[str] = _CANDIDATE_MODULES) -> bool:
    """Installs the wrapper; True when at least one SGLang module was patched."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    patched = False
    for name, module in list(sys.modules.items()):
        if not name.startswith("sglang") or module is None:
            continue
        fn = getattr(module, "get_allocator_from_storage", None)
        if fn is None or not callable(fn):
            continue
        if getattr(fn, "__kvpool_original__", None) is None:
            setattr(module, "get_allocator_from_storage", _wrap(fn))
        patched = True
    if patched:
        logger.info("kvpool: SGLang's host KV pool for the dynamic backend is allocated with "
                    "KVPoolHostTensorAllocator")
    else:
        logger.warning("kvpool: no SGLang module with get_allocator_from_storage is importable; "
                       "the host KV pool keeps SGLang's default allocator")
    return patched
