"""A master and one node started from build/ for the Python benchmark scripts (real processes on
127.0.0.1, free ports, killed on exit)."""
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
BINARY = os.environ.get("KVPOOL_BINARY", os.path.join(ROOT, "build", "src", "tools", "kvpool"))


from loopback_ports import free_port, wait_for_port  # noqa: E402


def parse_size(text):
    """'256KB', '1MB', '1GB' or a byte count, in bytes."""
    units = {"KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
    for suffix, mult in units.items():
        if text.upper().endswith(suffix):
            return int(float(text[:-2]) * mult)
    return int(text)


@contextlib.contextmanager
def pool(segment, node_flags=(), master_flags=()):
    """Yields (master address, node address); the node is started but may not have mounted yet."""
    log = tempfile.TemporaryFile()
    mport, nport = free_port(), free_port()
    procs = [subprocess.Popen([BINARY, "master", "--rpc_port", str(mport), "--rpc_host",
                               "127.0.0.1", "--metrics_port", "0", *master_flags], stdout=log, stderr=log)]
    try:
        if not wait_for_port(mport):
            raise RuntimeError("master did not start")
        procs.append(subprocess.Popen(
            [BINARY, "node", "--host", "127.0.0.1", "--port", str(nport), "--master_server_address",
             f"127.0.0.1:{mport}", "--global_segment_size", segment, *node_flags],
            stdout=log, stderr=log))
        yield f"127.0.0.1:{mport}", f"127.0.0.1:{nport}"
    finally:
        for p in reversed(procs):
            p.kill()
            p.wait()


def wait_mounted(master, seconds=120):
    """Returns once the pool at `master` lists a mounted segment; RuntimeError after `seconds`."""
    import kvpool
    probe = kvpool.KVPoolStore()
    assert probe.setup({"master_server_address": master, "global_segment_size": 0}) == 0, \
        kvpool.last_error()
    try:
        end = time.monotonic() + seconds
        while not probe.stat()["segments"]:
            if time.monotonic() > end:
                raise RuntimeError("the node did not mount")
            time.sleep(0.01)
    finally:
        probe.close()


def memcpy_gbps(src, dst, reps=5):
    """One-thread memcpy (numpy copyto) of src into dst: the median GB/s of `reps` copies."""
    import numpy as np
    rates = []
    for _ in range(reps):
        t = time.perf_counter()
        np.copyto(dst, src)
        rates.append(src.nbytes / (time.perf_counter() - t) / 1e9)
    return statistics.median(rates)
