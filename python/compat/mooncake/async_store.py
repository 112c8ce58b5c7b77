"""``mooncake.async_store`` on kvpool: ``async_<name>`` runs ``<name>`` in the default executor."""

import asyncio
import functools

from mooncake.store import MooncakeDistributedStore


class MooncakeDistributedStoreAsync(MooncakeDistributedStore):
    def __getattr__(self, name):
        if name.startswith("async_"):
            sync = getattr(self, name[len("async_"):])

            async def call(*args, **kwargs):
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(None, functools.partial(sync, *args, **kwargs))

            return call
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
