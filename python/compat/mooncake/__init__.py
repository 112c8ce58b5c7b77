"""Mooncake compatibility package: ``mooncake.store`` backed by kvpool.

Put ``python/compat`` (or an installed copy) on PYTHONPATH *instead of* the real Mooncake
package; then ``from mooncake.store import MooncakeDistributedStore`` gives kvpool's store and
SGLang's stock ``--hicache-storage-backend mooncake`` runs on kvpool. See docs/sglang.md.
"""

import kvpool as _kvpool

__version__ = f"kvpool-{_kvpool.__version__}"

# As Mooncake's wheel: the buffer pool at package level (the same object under both names).
from kvpool.buffer_pool import BufferPool, RegisteredBufferPool  # noqa: E402,F401
