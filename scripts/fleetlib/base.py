"""The fleet's plumbing: constants, commands, network namespaces and their cleanup."""
import ctypes
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = "/usr/bin/python3"
WORKER = os.path.join(ROOT, "scripts", "fleet_worker.py")
PREFIX = "kvpf"
SUBNET = "10.213.0"
SINK_IP = f"{SUBNET}.254"  # a host that drops what it is sent (no forwarding): silent cuts
OBS_IP = f"{SUBNET}.253"  # the tool's own observer host: never partitioned
MASTER_PORT, MASTER_HTTP, NODE_PORT, NODE_HTTP = 50051, 9003, 50052, 9100
NOT_FOUND = -704
EXIT_NOT_PERMITTED = 77  # "skipped", as automake: scripts/test.sh tells it from a failure

libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1
CLONE_NEWNET = 0x40000000


def log(msg):
    print(f"[fleet {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def run(cmd, check=True, quiet=False, timeout=30):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.returncode}")
    return r


def ip(*args, ns=None, check=True):
    cmd = ["ip"] + (["-n", ns] if ns else []) + list(args)
    return run(cmd, check=check)


def _child_setup():
    # Die with the tool (SIGKILL when the thread that forked us exits): see docs/fleet.md.
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:
        os._exit(1)


# ---------------------------------------------------------------------------------------------
# Cleanup: of one run (the guard, the tool's own teardown) or of every run (`clean`).

def _netns_names():
    r = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def _links():
    r = run(["ip", "-o", "link", "show"], check=False)
    out = []
    for line in r.stdout.splitlines():
        m = re.match(r"\d+: ([^:@]+)", line)
        if m:
            out.append(m.group(1))
    return out


def clean_runs(run_id=None):
    """Kill every process in the run's namespaces, delete namespaces, links and run dirs.
    run_id None: every run. Returns what was removed."""
    ns_prefix = f"{PREFIX}-{run_id}-" if run_id else f"{PREFIX}-"
    link_prefix = f"{PREFIX}{run_id}" if run_id else PREFIX
    removed = []
    names = [n for n in _netns_names() if n.startswith(ns_prefix)]
    for _ in range(3):
        pids = set()
        for n in names:
            r = run(["ip", "netns", "pids", n], check=False)
            pids.update(int(p) for p in r.stdout.split() if p.isdigit())
        pids.discard(os.getpid())
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
                removed.append(f"pid {p}")
            except ProcessLookupError:
                pass
        time.sleep(0.3)
    for n in names:
        run(["ip", "netns", "del", n], check=False)
        removed.append(f"netns {n}")
    for link in _links():
        if link.startswith(link_prefix) and (run_id or re.match(r"kvpf[0-9a-f]{4}", link)):
            run(["ip", "link", "del", link], check=False)
            removed.append(f"link {link}")
    base = "/tmp"
    for d in os.listdir(base):
        if d.startswith(f"{PREFIX}-{run_id}" if run_id else f"{PREFIX}-") and \
                os.path.isdir(os.path.join(base, d)):
            shutil.rmtree(os.path.join(base, d), ignore_errors=True)
            removed.append(f"dir /tmp/{d}")
    return removed


def start_guard(run_id):
    """Fork a process in its own session that holds the read end of a pipe to the tool: when the
    tool dies in any way, the pipe reaches EOF and the guard removes everything of run_id. A
    tool that cleaned up itself writes 'done' first."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(w)
            os.setsid()
            for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(s, signal.SIG_IGN)
            data = b""
            while True:
                chunk = os.read(r, 64)
                if not chunk:
                    break
                data += chunk
            if b"done" not in data:
                clean_runs(run_id)
        finally:
            os._exit(0)
    os.close(r)
    return w, pid


def check_permitted():
    """None if namespaces work here, else a one-line reason."""
    if os.geteuid() != 0:
        return "network namespaces need root (run as root or with sudo)"
    if not shutil.which("ip"):
        return "the ip command (iproute2) is not installed"
    probe = f"{PREFIX}-probe{os.getpid()}"
    r = run(["ip", "netns", "add", probe], check=False)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()}"
    run(["ip", "netns", "del", probe], check=False)
    return None


def ns_call(ns, fn, *args, timeout=10.0):
    """Run fn(*args) on a fresh thread that first joins namespace ns (setns is per thread)."""
    res = {}

    def body():
        try:
            fd = os.open(f"/var/run/netns/{ns}", os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {ns}")
            finally:
                os.close(fd)
            res["v"] = fn(*args)
        except Exception as e:  # noqa: BLE001 - returned to the caller
            res["e"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(timeout)
    if "e" in res:
        raise res["e"]
    if "v" not in res:
        raise TimeoutError(f"call in {ns} took over {timeout} s")
    return res["v"]


def http_get(addr, path, timeout=1.0):
    with urllib.request.urlopen(f"http://{addr}{path}", timeout=timeout) as r:
        return r.read().decode("utf-8", "replace")


def rate_bits(rate):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", rate.lower())
    if not m:
        raise SystemExit(f"--link {rate}: use e.g. 1gbit, 200mbit")
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]


class Interrupted(Exception):
    pass
