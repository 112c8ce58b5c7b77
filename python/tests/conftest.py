"""Test support: real `kvpool master` / `kvpool node` processes on free 127.0.0.1 ports.

The binary is $KVPOOL_BINARY, else <build>/src/tools/kvpool next to the imported kvpool
package (build/python/kvpool -> build/src/tools/kvpool). Every process is killed and reaped
when its fixture ends (and at interpreter exit, should a fixture not get to run).
"""

from __future__ import annotations

import atexit
import contextlib
import shutil
import os
import pathlib
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # fake_pool and friends
import hide_torch  # noqa: E402,F401  (before anything imports torch)

# The free-port picker the benchmark scripts share (only that module is imported from there).
sys.path.insert(1, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
from loopback_ports import free_port, wait_for_port  # noqa: E402,F401

import kvpool  # noqa: E402

TESTS_DIR = pathlib.Path(__file__).resolve().parent
REPO = TESTS_DIR.parents[1]
COMPAT_DIR = REPO / "python" / "compat"


def kvpool_binary() -> str:
    env = os.environ.get("KVPOOL_BINARY")
    if env:
        return env
    build = pathlib.Path(kvpool.__file__).resolve().parents[2]
    return str(build / "src" / "tools" / "kvpool")


_live: list = []


@contextlib.contextmanager
def etcd_server():
    """A one-member etcd on free 127.0.0.1 ports; yields its client port. REQUIRES: etcd on PATH."""
    data = tempfile.TemporaryDirectory(prefix="kvpool-py-etcd-")
    client, peer = free_port(), free_port()
    curl, purl = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    etcd = subprocess.Popen([shutil.which("etcd"), "--name", "t", "--data-dir", data.name + "/d",
                             "--listen-client-urls", curl, "--advertise-client-urls", curl,
                             "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
                             "--initial-cluster", f"t={purl}", "--log-level", "warn"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_for_port(client), "etcd did not start"
        yield client
    finally:
        etcd.kill()
        etcd.wait(timeout=10)
        data.cleanup()


@atexit.register
def _kill_leftovers() -> None:
    for p in _live:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)


class Proc:
    """One kvpool process with its output in a temp file (shown when a start fails)."""

    def __init__(self, args, name):
        self.name = name
        self.log = tempfile.NamedTemporaryFile(prefix=f"kvpool-py-{name}-", suffix=".log",
                                               delete=False)
        try:
            self.popen = subprocess.Popen([kvpool_binary(), *args], stdout=self.log,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        except OSError:
            self.log.close()
            os.unlink(self.log.name)
            raise
        _live.append(self.popen)

    def output(self) -> str:
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def stop(self) -> None:
        """Kills and reaps the process, removes its log. Idempotent."""
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=10)
        if self.popen in _live:
            _live.remove(self.popen)
        if not self.log.closed:
            self.log.close()
            os.unlink(self.log.name)


_master_help = None


def master_has_flag(flag: str) -> bool:
    """Whether this kvpool build's master knows `flag` (asked once)."""
    global _master_help
    if _master_help is None:
        _master_help = subprocess.run([kvpool_binary(), "master", "--help"], capture_output=True,
                                      text=True, timeout=30).stdout
    return flag in _master_help


class Pool:
    """A master and its nodes. node_address(i) is what setup_dummy takes."""

    def __init__(self, master_flags=(), metrics_port=0):
        """metrics_port: the master's HTTP port (0: a free one, not told)."""
        self.nodes: list = []
        self.node_ports: list = []
        self.master_port = free_port()
        self.metrics_port = metrics_port
        flags = ["--rpc_port", str(self.master_port), "--rpc_host", "127.0.0.1"]
        if master_has_flag("--metrics_port"):  # several masters at once: no fixed HTTP port
            flags += ["--metrics_port", str(metrics_port)]
        self.master = Proc(["master", *flags, *master_flags], "master")
        if not wait_for_port(self.master_port):
            out = self.master.output()
            self.stop()
            raise RuntimeError(f"kvpool master did not start:\n{out}")

    @property
    def master_address(self) -> str:
        return f"127.0.0.1:{self.master_port}"

    def node_address(self, i: int = 0) -> str:
        return f"127.0.0.1:{self.node_ports[i]}"

    def add_node(self, size: str = "256MB", *flags) -> None:
        port = free_port()
        node = Proc(["node", "--host", "127.0.0.1", "--port", str(port),
                     "--master_server_address", self.master_address, "--global_segment_size",
                     size, "--log_level", "warn", *flags], "node")
        self.nodes.append(node)
        self.node_ports.append(port)
        self._wait_for_segments(len(self.nodes), node)

    def _wait_for_segments(self, n: int, node: Proc) -> None:
        store = kvpool.KVPoolStore()
        assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "",
                           self.master_address) == 0, kvpool.last_error()
        try:
            end = time.monotonic() + 20
            while time.monotonic() < end:
                if len(store.stat()["segments"]) >= n and wait_for_port(self.node_ports[-1], 0.1):
                    return
                time.sleep(0.05)
            raise RuntimeError(f"kvpool node did not mount:\n{node.output()}")
        finally:
            store.close()

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.master.stop()


@pytest.fixture(scope="session")
def pool():
    """One master and one 256 MB node for the whole session; tests use unique keys."""
    p = Pool()
    try:
        p.add_node("256MB")
        yield p
    finally:
        p.stop()


@pytest.fixture
def fresh_pool():
    """A pool of its own, for tests that remove everything or kill processes."""
    p = Pool()
    try:
        p.add_node("128MB")
        yield p
    finally:
        p.stop()


@pytest.fixture
def uid() -> str:
    return uuid.uuid4().hex[:12]


@pytest.fixture
def store(pool):
    """An embedded store contributing no memory, closed after the test."""
    s = kvpool.KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address) == 0, \
        kvpool.last_error()
    yield s
    s.close()


@pytest.fixture
def dummy_store(pool):
    """A standalone store attached to the pool's node."""
    s = kvpool.KVPoolStore()
    assert s.setup_dummy(64 << 20, 16 << 20, pool.node_address(0)) == 0, kvpool.last_error()
    yield s
    s.close()


@pytest.fixture
def clean_env(monkeypatch):
    """No MOONCAKE_* / SGLANG_* / KVPOOL_* configuration leaks in from the environment."""
    for var in list(os.environ):
        if var.startswith(("MOONCAKE_", "SGLANG_", "KVPOOL_STANDALONE")) or var == "LOCAL_HOSTNAME":
            monkeypatch.delenv(var, raising=False)
    return monkeypatch
