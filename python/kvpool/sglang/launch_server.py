"""``python -m kvpool.sglang.launch_server <sglang server args>``: SGLang's server with its host
KV pool allocated in kvpool's shared memory when the storage backend is ``dynamic``.

SGLang chooses the host pool's allocator from the storage backend's name; for ``dynamic`` it
uses its default allocator, whose memory a standalone kvpool node cannot map. This launcher
installs :func:`kvpool.sglang.hooks.install_host_allocator` and then runs
``sglang.launch_server``. The hook is installed at import time of this module, so it also holds
in SGLang's scheduler processes: they are started with multiprocessing's "spawn", which
re-imports the main module (this one) in every child.
"""

import runpy
import sys

from kvpool.sglang.hooks import install_host_allocator

install_host_allocator()

if __name__ == "__main__":
    # Keep this module as __main__ (alter_sys=False) so spawned children re-import it.
    sys.argv[0] = "sglang.launch_server"
    runpy.run_module("sglang.launch_server", run_name="__main__", alter_sys=False)
