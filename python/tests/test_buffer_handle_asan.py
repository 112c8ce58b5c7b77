"""Buffer handles used after close(), under AddressSanitizer (issue 15: "an error, not a
use-after-free").

The handles run in a child /usr/bin/python3 with gcc's ASan runtime preloaded and the
ASan-instrumented copy of the extension (build/python-asan, KVPOOL_BUILD_PYTHON_ASAN; on by
default with gcc): the binding code is instrumented, and every heap block (the handles' bytes
among them) comes from ASan's allocator, so any read of freed bytes, by the binding or by a
memcpy anywhere, aborts the child with a report. A canary run reads a dead handle's bytes
through its raw address and must be caught: the harness is not blind.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

import kvpool

BUILD = pathlib.Path(kvpool.__file__).resolve().parents[2]
ASAN_PKG = BUILD / "python-asan" / "kvpool"

CHILD = textwrap.dedent(r"""
    import gc, sys, uuid
    sys.modules["torch"] = None  # torch stays out of the sanitized process
    import numpy as np
    import kvpool
    print("MODULE", kvpool._kvpool.__file__)
    mode, addr, what = sys.argv[1:4]

    def open_store():
        s = kvpool.KVPoolStore()
        if mode == "embedded":
            rc = s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", addr)
        else:
            rc = s.setup_dummy(64 << 20, 16 << 20, addr)
        assert rc == 0, kvpool.last_error()
        return s

    s = open_store()
    key = f"asan-{mode}-{uuid.uuid4().hex[:8]}"
    value = bytes(range(256)) * 4096  # 1 MiB
    assert s.put(key, value) == 0, kvpool.last_error()

    if what == "canary":
        h = s.get_buffer(key)
        ptr, n = h.ptr(), h.size()
        del h
        gc.collect()
        import ctypes
        ctypes.string_at(ptr, n)  # the freed bytes: ASan must stop the process here
        print("NOT CAUGHT")
        sys.exit(0)

    h = s.get_buffer(key)
    view = memoryview(h)
    arr = np.frombuffer(h, dtype=np.uint8)
    handles = s.batch_get_buffer([key, key + "-missing", key])
    assert handles[1] is None
    views = [memoryview(x) for x in handles if x is not None]
    assert s.remove(key, True) == 0
    assert s.close() == 0

    def refuses(call):
        try:
            call()
        except kvpool.KVPoolError as e:
            assert e.code == -1010, e.code  # UNAVAILABLE_IN_CURRENT_STATUS
        else:
            raise AssertionError("a closed store's handle answered")

    for x in (h, handles[0], handles[2]):
        for call in (x.ptr, x.size, lambda: len(x), lambda: memoryview(x), lambda: bytes(x),
                     x.tobytes, lambda: np.frombuffer(x, dtype=np.uint8)):
            refuses(call)
    # Set up again: the old session's handles still refuse.
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", addr) == 0 if mode == "embedded" \
        else s.setup_dummy(64 << 20, 16 << 20, addr) == 0
    refuses(h.ptr)
    refuses(lambda: memoryview(h))
    assert s.close() == 0
    # Views exported before close() keep their bytes, also once the handles and the store are
    # gone.
    del h, handles, s
    gc.collect()
    assert bytes(view) == value and arr.tobytes() == value
    assert all(bytes(v) == value for v in views) and len(views) == 2
    view.release()
    del arr, views
    gc.collect()
    print("CHILD OK")
""")


def asan_preload() -> str:
    """LD_PRELOAD for the child: libasan and libstdc++ (written by src/python/CMakeLists.txt)."""
    f = ASAN_PKG / "asan_runtime.txt"
    return f.read_text().strip() if f.exists() else ""


needs_asan_module = pytest.mark.skipif(
    not list(ASAN_PKG.glob("_kvpool*.so"))
    or not all(os.path.isfile(p) for p in asan_preload().split(":")),
    reason="build without the ASan extension (KVPOOL_BUILD_PYTHON_ASAN, gcc builds only)")


@pytest.fixture(scope="module")
def asan_pythonpath(tmp_path_factory):
    """A kvpool package of this build's .py files around the ASan extension."""
    root = tmp_path_factory.mktemp("kvpool-asan")
    src = pathlib.Path(kvpool.__file__).resolve().parent
    shutil.copytree(src, root / "kvpool", ignore=shutil.ignore_patterns("_kvpool*.so",
                                                                         "__pycache__"))
    for so in ASAN_PKG.glob("_kvpool*.so"):
        shutil.copy2(so, root / "kvpool" / so.name)
    return str(root)


def run_child(pythonpath, mode, addr, what):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KVPOOL_", "MOONCAKE_"))}
    env.update(PYTHONPATH=pythonpath, LD_PRELOAD=asan_preload(),
               # CPython keeps its interned objects until exit: leaks are not this test's matter.
               ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:exitcode=66")
    return subprocess.run([sys.executable, "-c", CHILD, mode, addr, what], env=env,
                          capture_output=True, text=True, timeout=120)


def addr_for(pool, mode):
    if mode == "standalone":
        if not kvpool.HAS_STANDALONE:
            pytest.skip("built without standalone mode")
        return pool.node_address(0)
    return pool.master_address


@needs_asan_module
@pytest.mark.parametrize("mode", ["embedded", "standalone"])
def test_handles_after_close_are_errors_not_use_after_free(pool, asan_pythonpath, mode):
    r = run_child(asan_pythonpath, mode, addr_for(pool, mode), "handles")
    assert f"MODULE {asan_pythonpath}/kvpool/" in r.stdout, r.stdout  # the instrumented one
    assert "AddressSanitizer" not in r.stderr, r.stderr[-4000:]
    assert r.returncode == 0 and "CHILD OK" in r.stdout, (r.stdout + r.stderr)[-4000:]


@needs_asan_module
def test_the_harness_catches_a_read_of_freed_handle_bytes(pool, asan_pythonpath):
    r = run_child(asan_pythonpath, "embedded", pool.master_address, "canary")
    assert "NOT CAUGHT" not in r.stdout
    assert r.returncode == 66 and "heap-use-after-free" in r.stderr, (r.stdout + r.stderr)[-4000:]
