#!/usr/bin/python3
"""kvpool fleet: a pool across hosts on one Linux machine (docs/fleet.md).

Hosts are network namespaces on one Linux bridge, each with its own address (10.213.0.0/24) and
a link capped with tbf in both directions. In them run etcd, masters, nodes and engine processes
(scripts/fleet_worker.py), all with a shared secret (and optionally TLS). Faults: a host's link
taken down (partition), silent one-way routes to a sink (partial and asymmetric partitions),
kill -9 and restarts. Everything a run creates carries its run id (kvpf-<id>-*, kvpf<id>*,
/tmp/kvpf-<id>) and is removed on exit, on Ctrl-C / SIGTERM, and after the tool itself is killed
(a guard process cleans up when its pipe to the tool closes). `fleet.py clean` removes the
leftovers of every run.

  fleet.py smoke                      CI check: 3 hosts, 1 master, 2 nodes, a partition + heal
  fleet.py chaos --seed S --minutes M seeded faults under load, HA masters; a report
  fleet.py scale [--nodes 1,2,4,8,16] aggregate put/get against nodes, JSON results
  fleet.py plot RESULTS.json          plots of scale results (needs python3-matplotlib)
  fleet.py hicache --nodes 8 --engines 4  HiCache workload across hosts vs one host
  fleet.py up --nodes 2               start a fleet and hold it until Ctrl-C (exploration)
  fleet.py clean                      remove every leftover of any run

Root and network namespaces are required; without them it exits 2 saying so in one line.
Stdlib only; run with /usr/bin/python3.
"""
import argparse
import ctypes
import json
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


# ---------------------------------------------------------------------------------------------

class Host:
    def __init__(self, fleet, name, index, addr):
        self.fleet, self.name, self.index, self.addr = fleet, name, index, addr
        self.ns = f"{PREFIX}-{fleet.run_id}-{name}"
        self.veth = f"{PREFIX}{fleet.run_id}v{index}"  # bridge side; "eth0" inside
        self.cut_from = set()  # addresses this host's routes send to the sink

    def sh(self, *args, check=True):
        return ip(*args, ns=self.ns, check=check)


class Proc:
    def __init__(self, name, host, argv, popen, logpath):
        self.name, self.host, self.argv, self.p, self.logpath = name, host, argv, popen, logpath


class Fleet:
    def __init__(self, args, run_id=None):
        self.args = args
        self.run_id = run_id or secrets.token_hex(2)
        self.dir = f"/tmp/{PREFIX}-{self.run_id}"
        self.bridge = f"{PREFIX}{self.run_id}br"
        self.hosts = {}
        self.procs = {}
        self.guard_w = None
        self.secret_file = None
        self.tls = None
        self.binary = os.path.join(args.build, "src", "tools", "kvpool")
        self.t0 = time.monotonic()
        self.events = []  # (monotonic, text): every fault and heal, for the report

    # --- lifecycle ---------------------------------------------------------------------------
    def __enter__(self):
        try:
            return self._enter()
        except BaseException:
            self.teardown()
            raise

    def _enter(self):
        os.makedirs(self.dir, mode=0o700)
        os.makedirs(os.path.join(self.dir, "logs"))
        self.guard_w, _ = start_guard(self.run_id)
        ip("link", "add", self.bridge, "type", "bridge")
        ip("link", "set", self.bridge, "up")
        self.secret_file = os.path.join(self.dir, "secret")
        fd = os.open(self.secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, (secrets.token_hex(32) + "\n").encode())
        os.close(fd)
        log(f"run {self.run_id}: bridge {self.bridge}, dir {self.dir}, link {self.args.link}")
        self.sink = self.add_host("sink", 254, SINK_IP, cap=False)
        self.sink.sh("link", "set", "lo", "up")
        run(["ip", "netns", "exec", self.sink.ns, "sysctl", "-qw", "net.ipv4.ip_forward=0"],
            check=False)
        self.obs = self.add_host("obs", 253, OBS_IP, cap=False)
        return self

    def __exit__(self, *exc):
        self.teardown()
        return False

    def teardown(self):
        for p in list(self.procs.values()):
            if p.p.poll() is None:
                p.p.kill()
        for p in list(self.procs.values()):
            try:
                p.p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        keep = getattr(self.args, "keep_logs", "")
        if keep:
            dst = os.path.join(keep, f"fleet-{self.run_id}")
            shutil.copytree(os.path.join(self.dir, "logs"), dst, dirs_exist_ok=True)
            log(f"logs kept in {dst}")
        clean_runs(self.run_id)
        if self.guard_w is not None:
            try:
                os.write(self.guard_w, b"done")
                os.close(self.guard_w)
            except OSError:
                pass
            self.guard_w = None

    # --- network -----------------------------------------------------------------------------
    def add_host(self, name, index, addr=None, cap=True):
        addr = addr or f"{SUBNET}.{10 + index}"
        h = Host(self, name, index, addr)
        ip("netns", "add", h.ns)
        ip("link", "add", h.veth, "type", "veth", "peer", "name", "eth0", "netns", h.ns)
        ip("link", "set", h.veth, "master", self.bridge, "up")
        h.sh("addr", "add", f"{addr}/24", "dev", "eth0")
        h.sh("link", "set", "eth0", "up")
        h.sh("link", "set", "lo", "up")
        if cap and self.args.link != "none":
            bits = rate_bits(self.args.link)
            burst = max(int(bits / 8 / 100), 64 << 10)  # 10 ms at the rate, at least 64 KiB
            for dev, ns in ((h.veth, None), ("eth0", h.ns)):
                r = run(["tc"] + (["-n", ns] if ns else []) +
                        ["qdisc", "replace", "dev", dev, "root", "tbf", "rate", self.args.link,
                         "burst", str(burst), "latency", "50ms"], check=self.args.command != "smoke")
                if r.returncode != 0:  # the smoke tests partitions, not rates: run uncapped
                    log(f"tbf unavailable here ({r.stderr.strip()}); {h.name}'s link is uncapped")
        self.hosts[name] = h
        return h

    def partition(self, host):
        """The whole host off the network: its bridge-side link down (silent: nothing refuses)."""
        ip("link", "set", host.veth, "down")
        self.event(f"partition {host.name} ({host.addr}): link down")

    def heal(self, host):
        ip("link", "set", host.veth, "up")
        self.event(f"heal {host.name} ({host.addr}): link up")

    def cut(self, a, others):
        """Silent two-way cut between host a and hosts `others`: each side routes the other's
        address to the sink host, which drops it (no forwarding, no ICMP). Others stay
        reachable, so this makes partial and asymmetric partitions."""
        for b in others:
            for x, y in ((a, b), (b, a)):
                if y.addr not in x.cut_from:
                    x.sh("route", "add", f"{y.addr}/32", "via", SINK_IP, "dev", "eth0")
                    x.cut_from.add(y.addr)
        self.event(f"cut {a.name} from {','.join(b.name for b in others)}")

    def uncut(self, a, others):
        for b in others:
            for x, y in ((a, b), (b, a)):
                if y.addr in x.cut_from:
                    x.sh("route", "del", f"{y.addr}/32", check=False)
                    x.cut_from.discard(y.addr)
        self.event(f"uncut {a.name} from {','.join(b.name for b in others)}")

    def readdress(self, host, new_addr):
        host.sh("addr", "flush", "dev", "eth0")
        host.sh("addr", "add", f"{new_addr}/24", "dev", "eth0")
        self.event(f"readdress {host.name}: {host.addr} -> {new_addr}")
        host.addr = new_addr

    def event(self, text):
        self.events.append((time.monotonic(), text))
        log(text)

    # --- processes ---------------------------------------------------------------------------
    def spawn(self, name, host, argv, env=None, stdin=None, stdout=None):
        logpath = os.path.join(self.dir, "logs", f"{name}.log")
        out = open(logpath, "ab")
        e = dict(os.environ)
        e.update(env or {})
        p = subprocess.Popen(["ip", "netns", "exec", host.ns] + argv, stdin=stdin or
                             subprocess.DEVNULL, stdout=stdout or out, stderr=out, env=e,
                             preexec_fn=_child_setup, start_new_session=True)
        out.close()
        proc = Proc(name, host, argv, p, logpath)
        self.procs[name] = proc
        return proc

    def kill(self, name, sig=signal.SIGKILL):
        p = self.procs.get(name)
        if p and p.p.poll() is None:
            p.p.send_signal(sig)
            try:
                p.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.p.kill()
                p.p.wait()

    def security_flags(self):
        f = ["--auth_secret_file", self.secret_file]
        if self.tls:
            f += ["--tls_cert", self.tls["cert"], "--tls_key", self.tls["key"],
                  "--tls_ca", self.tls["ca"]]
        return f

    def make_tls(self, addrs):
        d = os.path.join(self.dir, "tls")
        os.makedirs(d)
        ca, cakey = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
        cert, key, csr = (os.path.join(d, n) for n in ("pool.pem", "pool.key", "pool.csr"))
        ext = os.path.join(d, "san.ext")
        run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", "/CN=kvpool fleet CA", "-keyout", cakey, "-out", ca])
        run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kvpool fleet",
             "-keyout", key, "-out", csr])
        with open(ext, "w") as f:
            f.write("subjectAltName=" + ",".join(f"IP:{a}" for a in addrs + ["127.0.0.1"]) + "\n")
        run(["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey,
             "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", cert])
        self.tls = {"ca": ca, "cert": cert, "key": key}

    def start_etcd(self, hosts):
        cluster = ",".join(f"{h.name}=http://{h.addr}:2380" for h in hosts)
        for h in hosts:
            self.spawn(f"etcd-{h.name}", h, [
                "etcd", "--name", h.name, "--data-dir", os.path.join(self.dir, f"etcd-{h.name}"),
                "--listen-client-urls", f"http://{h.addr}:2379",
                "--advertise-client-urls", f"http://{h.addr}:2379",
                "--listen-peer-urls", f"http://{h.addr}:2380",
                "--initial-advertise-peer-urls", f"http://{h.addr}:2380",
                "--initial-cluster", cluster, "--initial-cluster-state", "new",
                "--initial-cluster-token", f"kvpf-{self.run_id}", "--log-level", "warn"])
        return ";".join(f"{h.addr}:2379" for h in hosts)

    def start_master(self, host, etcd=None, extra=()):
        argv = [self.binary, "master", "--rpc_host", host.addr, "--rpc_port", str(MASTER_PORT),
                "--metrics_port", str(MASTER_HTTP)] + self.security_flags() + list(extra)
        if etcd:
            argv += ["--enable_ha", "true", "--etcd_endpoints", etcd, "--cluster_id", "fleet",
                     "--ha_advertise_host", host.addr]
        return self.spawn(f"master-{host.name}", host, argv)

    def start_node(self, host, master, size, extra=(), name=None):
        argv = [self.binary, "node", "--master_server_address", master, "--port", str(NODE_PORT),
                "--global_segment_size", size, "--metrics_port", str(NODE_HTTP),
                "--prefault", "false"] + self.security_flags() + list(extra)
        if self.args.node_host_flag:
            argv += ["--host", host.addr]
        if getattr(self.args, "disk", ""):
            # The host's disk: kept across the node's kill -9 and restart, as on a real host.
            disk = os.path.join(self.dir, f"disk-{host.name}")
            os.makedirs(disk, exist_ok=True)
            argv += ["--disk_path", disk, "--disk_size", self.args.disk]
        return self.spawn(name or f"node-{host.name}", host, argv)

    def worker_argv(self, name, host, master, mode, **kw):
        a = [PY, WORKER, "--mode", mode, "--name", name, "--host", host.addr, "--master", master,
             "--secret_file", self.secret_file,
             "--log", os.path.join(self.dir, "logs", f"{name}.jsonl")]
        if self.tls:
            a += ["--tls_ca", self.tls["ca"]]
        for k, v in kw.items():
            a += [f"--{k}", str(v)]
        return a

    def start_worker(self, name, host, master, mode, **kw):
        env = {"PYTHONPATH": os.path.join(self.args.build, "python"),
               "KVPOOL_LOG_LEVEL": "warn"}
        return self.spawn(name, host, self.worker_argv(name, host, master, mode, **kw), env=env,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    # --- observation -------------------------------------------------------------------------
    def http(self, addr, path, timeout=1.0):
        return ns_call(self.obs.ns, http_get, addr, path, timeout, timeout=timeout + 2)

    def wait_http(self, addr, path="/health", seconds=30, want=None):
        end = time.monotonic() + seconds
        last = ""
        while time.monotonic() < end:
            try:
                last = self.http(addr, path)
                if want is None or want(last):
                    return last
            except Exception as e:  # noqa: BLE001
                last = str(e)
            time.sleep(0.2)
        raise RuntimeError(f"http://{addr}{path} not ready after {seconds} s: {last[:200]}")

    def segments(self, master_http):
        return json.loads(self.http(master_http, "/segments"))["segments"]

    def cli(self, host, *args, timeout=15):
        """A kvpool CLI command run on `host` (e.g. `top --iterations 1`), its output."""
        cmd = ["ip", "netns", "exec", host.ns, self.binary] + list(args)
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, preexec_fn=_child_setup)
        return r.stdout

    def proc_cpu_seconds(self, names):
        """utime+stime of the named processes and their children that were waited for."""
        tck = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for n in names:
            p = self.procs.get(n)
            if not p:
                continue
            try:
                with open(f"/proc/{p.p.pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += sum(int(x) for x in fields[11:15]) / tck
            except OSError:
                pass
        return total


class Engine:
    """A cmd-mode worker: send a command, read its one-line JSON answer."""

    def __init__(self, fleet, name, host, master, **kw):
        self.proc = fleet.start_worker(name, host, master, "cmd", **kw)
        self.name = name
        line = self._read(60)
        if not line or not json.loads(line).get("ready"):
            raise RuntimeError(f"engine {name} did not start: {tail(self.proc.logpath)}")
        self.n = 0

    def _read(self, timeout):
        out = {}

        def rd():
            out["l"] = self.proc.p.stdout.readline()

        t = threading.Thread(target=rd, daemon=True)
        t.start()
        t.join(timeout)
        if t.is_alive():
            raise RuntimeError(f"engine {self.name}: no answer within {timeout} s")
        return out["l"].decode()

    def call(self, timeout=120, **cmd):
        self.n += 1
        cmd["id"] = self.n
        self.proc.p.stdin.write((json.dumps(cmd) + "\n").encode())
        self.proc.p.stdin.flush()
        line = self._read(timeout)
        if not line:
            raise RuntimeError(f"engine {self.name} exited: {tail(self.proc.logpath)}")
        return json.loads(line)


def write_json(path, obj):
    """Writes a run's results to `path` (--out), if one was given."""
    if not path:
        return
    with open(path, "w") as fh:
        json.dump(obj, fh, indent=1)
    log(f"results written to {path}")


def tail(path, n=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


# ---------------------------------------------------------------------------------------------
# Analysis of worker logs

def read_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    except OSError:
        pass
    return out


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def analyze(records, rpc_ms, transfer_ms, slack_s=1.0):
    """Totals over engine op records: wrong bytes, calls past deadline, rates, latencies."""
    deadline = {"put": 2 * rpc_ms / 1000 + transfer_ms / 1000 + slack_s,
                "get": 2 * rpc_ms / 1000 + transfer_ms / 1000 + slack_s,
                "exists": rpc_ms / 1000 + slack_s}
    rep = {"wrong_bytes": 0, "wrong_pages": [], "past_deadline": [], "ops": {}}
    for op in ("put", "get", "exists"):
        recs = [r for r in records if r.get("op") == op]
        if not recs:
            continue
        lat = [r["t1"] - r["t0"] for r in recs]
        keys = sum(len(r["keys"]) for r in recs)
        ok = sum(1 for r in recs for x in r["rc"] if (x == 0 if op == "put" else x >= 0))
        errs = {}
        for r in recs:
            for x in r["rc"]:
                if x < 0:
                    errs[str(x)] = errs.get(str(x), 0) + 1
        span = max(r["t1"] for r in recs) - min(r["t0"] for r in recs)
        nbytes = sum(r.get("bytes", 0) for r in recs)
        rep["ops"][op] = {"calls": len(recs), "keys": keys, "ok_keys": ok, "errors": errs,
                          "calls_per_s": round(len(recs) / span, 2) if span > 0 else None,
                          "GB_per_s": round(nbytes / span / 1e9, 4) if span > 0 else None,
                          "p50_ms": round(pct(lat, 50) * 1000, 2),
                          "p99_ms": round(pct(lat, 99) * 1000, 2),
                          "max_ms": round(max(lat) * 1000, 2),
                          "deadline_s": deadline[op]}
        for r in recs:
            if r["t1"] - r["t0"] > deadline[op]:
                rep["past_deadline"].append({"op": op, "engine": r.get("engine"),
                                             "elapsed_s": round(r["t1"] - r["t0"], 3),
                                             "w0": r.get("w0")})
    for r in records:
        if r.get("wrong_bytes"):
            rep["wrong_bytes"] += r["wrong_bytes"]
            rep["wrong_pages"].extend(r.get("wrong", []))
    return rep


# ---------------------------------------------------------------------------------------------
# smoke

PORT_PROBE = """
import sys, time, kvpool
s = kvpool.KVPoolStore()
rc = s.setup({"local_hostname": "localhost", "metadata_server": "P2PHANDSHAKE",
              "global_segment_size": 16 << 20, "local_buffer_size": 0, "protocol": "tcp",
              "master_server_address": sys.argv[1]})
print("SETUP", rc, s.get_hostname() if rc == 0 else kvpool.last_error(), flush=True)
time.sleep(float(sys.argv[2]))
"""


def probe_refused(f, host, target):
    """`kvpool stat` at `target` from `host` without a secret: (refused as it should be, text)."""
    env = {k: v for k, v in os.environ.items() if k != "KVPOOL_AUTH_SECRET"}
    r = subprocess.run(["ip", "netns", "exec", host.ns, f.binary, "stat", "--master", target,
                        "--timeout_ms", "3000"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=30, env=env, preexec_fn=_child_setup)
    out = r.stdout.strip().splitlines()
    last = out[-1] if out else ""
    return r.returncode != 0 and ("ILLEGAL_CLIENT" in r.stdout or "secret" in r.stdout), last


def port_checks(f, ctl, node_host, other, maddr, check):
    """Every listening port follows protected mode, probed from another host without the
    secret: the pool's master and a node (the pool has a secret), and a master and an embedded
    client's segment port on a host of their own without one (protected mode). The embedded
    client is given local_hostname "localhost" (Mooncake's default) with its master on another
    address: it must announce this host's address instead, from Mooncake's port range."""
    ok, why = probe_refused(f, other, maddr)
    check("the master refuses another host without the secret", ok, why)
    ok, why = probe_refused(f, ctl, f"{node_host.addr}:{NODE_PORT}")
    check("a node's data port refuses another host without the secret", ok, why)
    lone = f"{other.addr}:{MASTER_PORT + 10}"
    env = {k: v for k, v in os.environ.items() if k != "KVPOOL_AUTH_SECRET"}
    f.spawn("lone-master", other, [f.binary, "master", "--rpc_host", other.addr, "--rpc_port",
                                   str(MASTER_PORT + 10), "--enable_http_admin", "false"], env=env)
    env["PYTHONPATH"] = os.path.join(f.args.build, "python")
    probe = f.spawn("lone-embedded", other, [PY, "-c", PORT_PROBE, lone, "30"], env=env)
    line, end = "", time.monotonic() + 20
    while time.monotonic() < end and "SETUP" not in line:
        time.sleep(0.2)
        with open(probe.logpath, errors="replace") as fh:
            line = next((x for x in fh if x.startswith("SETUP")), "")
    parts = line.split()
    announced = parts[2] if len(parts) > 2 and parts[1] == "0" else ""
    host, _, port = announced.rpartition(":")
    check("an embedded client given localhost announces its host's address, port 12300-14300",
          host == other.addr and port.isdigit() and 12300 <= int(port) <= 14300,
          line.strip() or "no SETUP line")
    ok, why = probe_refused(f, node_host, lone)
    check("a master without a secret refuses another host (protected mode)", ok, why)
    if announced:
        ok, why = probe_refused(f, node_host, announced)
        check("an embedded client's segment port refuses another host (protected mode)", ok, why)
    f.kill("lone-embedded")
    f.kill("lone-master")


def duplicate_address_check(f, owner, maddr, mhttp, check):
    """A node on a new host announcing `owner`'s address (both behind one NAT address, or one
    --host copied to two hosts): the master refuses its mount, naming the flag, and `owner`'s
    segment stays mounted by its own node."""
    def holder():
        for seg in json.loads(f.http(mhttp, "/segments"))["segments"]:
            if seg["endpoint"] == f"{owner.addr}:{NODE_PORT}":
                return seg["client_id"]
        return None
    before = holder()
    dup_host = f.add_host("hd", 9)
    dup = f.spawn("node-dup", dup_host, [
        f.binary, "node", "--master_server_address", maddr, "--port", str(NODE_PORT),
        "--bind_address", "0.0.0.0", "--host", owner.addr, "--global_segment_size", "64MB",
        "--metrics_port", "0", "--prefault", "false"] + f.security_flags())
    refused, end = False, time.monotonic() + 10
    while time.monotonic() < end and not refused:
        time.sleep(0.3)
        with open(dup.logpath, errors="replace") as fh:
            refused = "two hosts announce the same address" in fh.read()
    after = holder()
    f.kill("node-dup")
    check("a second host announcing a node's address is refused, the node keeps its segment",
          refused and before is not None and after == before,
          f"refused={refused} holder before={before} after={after}")


def scenario_smoke(args):
    rpc_ms, xfer_ms = args.rpc_timeout_ms, args.transfer_timeout_ms
    checks = []

    def check(name, ok, detail=""):
        checks.append((name, bool(ok), detail))
        log(f"check {'PASS' if ok else 'FAIL'}: {name} {detail}")

    t_start = time.monotonic()
    with Fleet(args) as f:
        ctl = f.add_host("h0", 0)       # master + engine
        hn = [f.add_host(f"h{i}", i) for i in (1, 2)]  # one node each
        if args.tls:
            f.make_tls([h.addr for h in f.hosts.values()])
        f.start_master(ctl)
        maddr = f"{ctl.addr}:{MASTER_PORT}"
        mhttp = f"{ctl.addr}:{MASTER_HTTP}"
        f.wait_http(mhttp)
        for h in hn:
            f.start_node(h, maddr, "256MB")
        segs = f.wait_http(mhttp, "/segments", 20,
                           want=lambda b: len(json.loads(b)["segments"]) == 2)
        endpoints = [s["endpoint"] for s in json.loads(segs)["segments"]]
        log(f"segments: {endpoints}")
        check("nodes announce their host's address",
              all(not e.startswith("127.") for e in endpoints), str(endpoints))
        port_checks(f, ctl, hn[0], hn[1], maddr, check)
        eng = Engine(f, "e0", ctl, maddr, rpc_timeout_ms=rpc_ms, transfer_timeout_ms=xfer_ms,
                     page_size=args.page_size, batch=args.batch)
        n = args.pages
        keys = [f"smoke-{i}" for i in range(n)]
        r = eng.call(op="put", keys=keys, replicas=2)
        check("puts before the partition acknowledged", r["ok"] == n, f"{r['ok']}/{n} {r['errs']}")
        r = eng.call(op="get", keys=keys)
        check("reads before the partition exact", r["ok"] == n and r["wrong_bytes"] == 0,
              f"{r['ok']}/{n}")
        # Partition node h1; read everything while it is away (each page has a replica on h2).
        victim = hn[0]
        f.partition(victim)
        tp = time.monotonic()
        reads, part_keys = [], []
        i = 0
        while time.monotonic() - tp < args.partition_s or not reads:
            reads.append(eng.call(op="get", keys=keys))
            if i == 0:  # one batch of puts while the node is away
                pk = [f"smoke-p{i}-{j}" for j in range(args.batch)]
                i += 1
                pr = eng.call(op="put", keys=pk, replicas=2)
                part_keys.extend(pr.get("acked", []))
        f.heal(victim)
        during = sum(x["ok"] for x in reads)
        check("reads during the partition complete from the other replica",
              during == n * len(reads),
              f"{during}/{n * len(reads)} pages in {len(reads)} batch reads, slowest call "
              f"{max(x['max_s'] for x in reads):.2f} s")
        worst = max(x["max_s"] for x in reads)
        check(f"a silent node costs a read batch under {args.read_budget_s} s",
              worst <= args.read_budget_s, f"slowest {worst:.2f} s")
        # After the heal: everything acknowledged reads back exact (give the node a moment).
        time.sleep(1.0)
        allk = keys + part_keys
        r = eng.call(op="get", keys=allk)
        if r["ok"] != len(allk):
            time.sleep(3.0)
            r = eng.call(op="get", keys=allk)
        check("after the heal every acknowledged page reads back exact",
              r["ok"] == len(allk), f"{r['ok']}/{len(allk)} ({len(part_keys)} put during the "
              f"partition) {r['errs']}")
        duplicate_address_check(f, hn[0], maddr, mhttp, check)
        records = read_jsonl(os.path.join(f.dir, "logs", "e0.jsonl"))
        rep = analyze(records, rpc_ms, xfer_ms)
        check("wrong bytes", rep["wrong_bytes"] == 0, f"{rep['wrong_bytes']} {rep['wrong_pages'][:3]}")
        check("calls past their deadline", not rep["past_deadline"], str(rep["past_deadline"][:3]))
        if args.top:
            print(f.cli(ctl, "top", "--http", mhttp, "--iterations", "1"))
        elapsed = time.monotonic() - t_start
    print(f"fleet smoke: {len(checks)} checks, {sum(1 for c in checks if not c[1])} failed, "
          f"{elapsed:.1f} s")
    for name, ok, detail in checks:
        print(f"  {'ok  ' if ok else 'FAIL'} {name}: {detail}")
    for op, s in rep["ops"].items():
        print(f"  {op}: {s['calls']} calls, {s['ok_keys']}/{s['keys']} keys ok, p50 "
              f"{s['p50_ms']} ms, p99 {s['p99_ms']} ms, max {s['max_ms']} ms, errors {s['errors']}")
    return 0 if all(c[1] for c in checks) else 1


# ---------------------------------------------------------------------------------------------

def scenario_up(args):
    with Fleet(args) as f:
        m = f.add_host("m0", 0)
        nodes = [f.add_host(f"n{i}", 1 + i) for i in range(args.nodes)]
        e = f.add_host("e0", 100)
        f.start_master(m)
        maddr = f"{m.addr}:{MASTER_PORT}"
        for h in nodes:
            f.start_node(h, maddr, args.segment)
        f.wait_http(f"{m.addr}:{MASTER_HTTP}", "/segments", 20,
                    want=lambda b: len(json.loads(b)["segments"]) == args.nodes)
        print(f"fleet {f.run_id} up: master {maddr}; hosts:")
        for h in f.hosts.values():
            print(f"  {h.name:6} {h.addr:14} ip netns exec {h.ns} ...")
        print(f"  secret: {f.secret_file}; engine host: {e.ns}. Ctrl-C ends it.")
        end = time.monotonic() + args.hold_s
        while time.monotonic() < end:
            time.sleep(0.5)
    return 0


def cmd_clean(args):
    removed = clean_runs(None)
    print(f"fleet clean: removed {len(removed)} leftovers" +
          ("".join(f"\n  {x}" for x in removed) if removed else ""))
    return 0


class Interrupted(Exception):
    pass


def _on_signal(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["smoke", "chaos", "scale", "plot", "up", "clean", "check",
                                        "stale-write", "hicache"])
    p.add_argument("--rounds", type=int, default=3, help="stale-write: rounds")
    p.add_argument("results", nargs="*",
                   help="plot: the JSON file of a scale run, or those of hicache runs")
    p.add_argument("--build", default=os.path.join(ROOT, "build"),
                   help="build tree with src/tools/kvpool and python/ (default: build/)")
    p.add_argument("--link", default="1gbit", help="per-host link rate (tbf), or none")
    p.add_argument("--node_host_flag", action="store_true",
                   help="start nodes with --host <their address> (default: without, the README way)")
    p.add_argument("--tls", action="store_true", help="TLS on every connection (openssl certs)")
    p.add_argument("--keep_logs", default="", help="copy the run's logs into this directory")
    p.add_argument("--rpc_timeout_ms", type=int, default=2000)
    p.add_argument("--transfer_timeout_ms", type=int, default=None,
                   help="engines' data deadline (default 5000; scale: 30000, the client default)")
    p.add_argument("--page_size", type=int, default=None,
                   help="bytes per page (smoke 256 KiB, chaos 64 KiB, scale 1 MiB)")
    p.add_argument("--batch", type=int, default=None,
                   help="pages per batch call (smoke 32, chaos 8, scale 16)")
    p.add_argument("--pages", type=int, default=120, help="smoke: pages put before the partition")
    p.add_argument("--partition_s", type=float, default=5.0)
    p.add_argument("--read_budget_s", type=float, default=2.0)
    p.add_argument("--top", action="store_true", help="smoke: print kvpool top at the end")
    p.add_argument("--nodes", default=None,
                   help="up: nodes (2); chaos: nodes (4); scale: node counts (1,2,4,8,16)")
    p.add_argument("--segment", default=None,
                   help="each node's --global_segment_size (chaos 1GB, else 512MB)")
    p.add_argument("--disk", default="",
                   help="give every node a disk tier of this size (e.g. 1GB) under the run's "
                        "directory, kept across its restarts (default: DRAM only)")
    p.add_argument("--hold_s", type=float, default=3600)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--minutes", type=float, default=2.0)
    p.add_argument("--engines", type=int, default=None,
                   help="chaos: engines (2); scale: engine hosts per run (default: the node "
                        "count clamped to 2..8)")
    p.add_argument("--out", default="", help="write the JSON report/results (plot: the PNG) here")
    p.add_argument("--masters", type=int, default=3, help="chaos: 1 or 3 (3: with 3 etcd)")
    p.add_argument("--rate", type=float, default=3.0, help="chaos: batches per second per engine")
    p.add_argument("--settle_s", type=float, default=8.0, help="chaos: pause after each heal")
    p.add_argument("--seconds", type=float, default=20.0, help="scale: seconds per run")
    p.add_argument("--engine_link", default="none", help="scale: engine hosts' link rate")
    args = p.parse_args()

    if args.command == "clean":
        if os.geteuid() != 0:
            print("fleet: clean needs root", file=sys.stderr)
            return EXIT_NOT_PERMITTED
        return cmd_clean(args)
    if args.command == "plot":
        return cmd_plot(args)
    why = check_permitted()
    if why:
        print(f"fleet: network namespaces are not permitted here: {why}", file=sys.stderr)
        return EXIT_NOT_PERMITTED
    if args.command == "check":
        print("fleet: network namespaces work here")
        return 0
    d = {"smoke": (256 << 10, 32), "chaos": (64 << 10, 8), "scale": (1 << 20, 16),
         "stale-write": (1 << 20, 8)}
    page, batch = d.get(args.command, (256 << 10, 32))
    args.page_size = args.page_size or page
    args.segment = args.segment or ("1GB" if args.command == "chaos" else "512MB")
    if args.transfer_timeout_ms is None:
        args.transfer_timeout_ms = 30000 if args.command == "scale" else 5000
    args.batch = args.batch or batch
    if not os.access(os.path.join(args.build, "src", "tools", "kvpool"), os.X_OK):
        print(f"fleet: no kvpool binary in {args.build}/src/tools (build first)", file=sys.stderr)
        return 1
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)
    try:
        if args.command == "smoke":
            return scenario_smoke(args)
        if args.command == "up":
            args.nodes = int(args.nodes or 2)
            return scenario_up(args)
        if args.command == "chaos":
            return scenario_chaos(args)
        if args.command == "scale":
            return scenario_scale(args)
        if args.command == "stale-write":
            return scenario_stale_write(args)
        if args.command == "hicache":
            return scenario_hicache(args)
    except Interrupted as e:
        print(f"fleet: interrupted by {e}; everything of this run removed", file=sys.stderr)
        return 130
    return 1


# ---------------------------------------------------------------------------------------------
# chaos

CHAOS_TTL = 15  # masters' --client_ttl in chaos runs: a 10 s partition stays within it
FAULTS = ["node_partition", "leader_cut", "engine_partition", "asym", "kill_node", "kill_master",
          "node_readdress"]


class Placement(threading.Thread):
    """Learns where each acknowledged key's replicas live (master's /object), by tailing the
    engines' logs, so a key missing at the end can be told apart: lost with every replica's
    node, or a real loss."""

    def __init__(self, fleet, logs, masters):
        super().__init__(daemon=True)
        self.f, self.logs, self.masters = fleet, logs, masters
        self.offsets = {p: 0 for p in logs}
        self.where = {}  # key -> (endpoints, monotonic when learnt)
        self.acked = {}  # key -> monotonic ack time
        self.pending = []
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def read_new(self):
        for path in self.logs:
            try:
                with open(path) as fh:
                    fh.seek(self.offsets[path])
                    data = fh.read()
            except OSError:
                continue
            cut = data.rfind("\n") + 1
            self.offsets[path] += len(data[:cut].encode())
            for line in data[:cut].splitlines():
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("op") == "put":
                    for k, x in zip(r["keys"], r["rc"]):
                        if x == 0 and k not in self.acked:
                            self.acked[k] = r["t1"]
                            self.pending.append(k)

    def sweep(self):
        with self.lock:
            self.read_new()
            keys, self.pending = self.pending, []
            if not keys:
                return

            def body():
                leader = None
                for m in self.masters:
                    try:
                        if "role=leader" in http_get(m, "/health", 0.5) or len(self.masters) == 1:
                            leader = m
                            break
                    except Exception:  # noqa: BLE001
                        pass
                left = []
                for k in keys:
                    try:
                        j = json.loads(http_get(leader, "/object?key=" +
                                                urllib.parse.quote(k, safe=""), 1.0))
                        self.where[k] = ([r["endpoint"] for r in j.get("replicas", [])],
                                         time.monotonic())
                    except Exception:  # noqa: BLE001
                        left.append(k)
                return left

            try:
                left = ns_call(self.f.obs.ns, body, timeout=120)
            except Exception:  # noqa: BLE001
                left = keys
            self.pending = (left or []) + self.pending

    def run(self):
        while not self.stop.wait(2.0):
            self.sweep()


def scenario_chaos(args):
    rng = random.Random(args.seed)
    nm, ne = args.masters, args.engines or 2
    nn = int(args.nodes or 4)
    rpc_ms, xfer_ms = args.rpc_timeout_ms, args.transfer_timeout_ms
    budget = args.minutes * 60
    report = {"seed": args.seed, "minutes": args.minutes, "masters": nm, "nodes": nn,
              "engines": ne, "link": args.link, "faults": [], "top": []}
    with Fleet(args) as f:
        mh = [f.add_host(f"m{i}", i) for i in range(nm)]
        xh = [f.add_host(f"x{i}", 20 + i) for i in range(3 if nm > 1 else 0)]
        nh = [f.add_host(f"n{i}", 30 + i) for i in range(nn)]
        eh = [f.add_host(f"e{i}", 60 + i) for i in range(ne)]
        if args.tls:
            f.make_tls([h.addr for h in f.hosts.values()] +
                       [f"{SUBNET}.{130 + i}" for i in range(64)])
        etcd = f.start_etcd(xh) if xh else None
        for h in mh:
            f.start_master(h, etcd, extra=["--client_ttl", str(CHAOS_TTL)])
        maddr = f"etcd://{etcd}/fleet" if etcd else f"{mh[0].addr}:{MASTER_PORT}"
        mhttp = [f"{h.addr}:{MASTER_HTTP}" for h in mh]

        def leader():
            for h, u in zip(mh, mhttp):
                try:
                    if "role=leader" in f.http(u, "/health", 0.5) or nm == 1:
                        return h, u
                except Exception:  # noqa: BLE001
                    pass
            return None, None

        end = time.monotonic() + 60
        while leader()[0] is None and time.monotonic() < end:
            time.sleep(0.3)
        lh, lu = leader()
        if not lh:
            raise RuntimeError("no master leads after 60 s: " + tail(f.procs[f"master-{mh[0].name}"].logpath))
        log(f"leader {lh.name}")
        node_args = {}
        for h in nh:
            f.start_node(h, maddr, args.segment)
            node_args[h.name] = h
        f.wait_http(lu, "/segments", 30, want=lambda b: len(json.loads(b)["segments"]) >= nn)
        mon_log = os.path.join(f.dir, "logs", "monitor.jsonl")
        run_s = budget + 120
        f.spawn("monitor", f.obs, [PY, WORKER, "--mode", "monitor", "--log", mon_log,
                                   "--masters", ",".join(mhttp), "--seconds", str(run_s),
                                   "--interval_ms", "200"])
        engines = []
        for i, h in enumerate(eh):
            engines.append(f.start_worker(f"e{i}", h, maddr, "loop", rpc_timeout_ms=rpc_ms,
                                          transfer_timeout_ms=xfer_ms, page_size=args.page_size,
                                          batch=args.batch, replicas=2, rate=args.rate,
                                          seconds=run_s, seed=args.seed * 100 + i))
        logs = [os.path.join(f.dir, "logs", f"e{i}.jsonl") for i in range(ne)]
        placement = Placement(f, logs, mhttp)
        placement.start()
        time.sleep(5)
        destroyed = {}  # endpoint -> [monotonic times its node lost its memory]
        next_addr = [130]

        def node_endpoint(h):
            return f"{h.addr}:{NODE_PORT}"

        def snapshot(tag):
            _, u = leader()
            if u:
                try:
                    out = ns_call(f.obs.ns, lambda: subprocess.run(
                        [f.binary, "top", "--http", u, "--iterations", "1"],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                        timeout=10).stdout, timeout=15)
                    report["top"].append({"after": tag, "top": out[-1500:]})
                except Exception as e:  # noqa: BLE001
                    report["top"].append({"after": tag, "error": str(e)})

        t_end = time.monotonic() + budget
        order = []
        snapshot("start")
        while time.monotonic() < t_end - 20:
            if not order:
                order = FAULTS[:]
                rng.shuffle(order)
                if nm == 1:
                    order = [x for x in order if x != "leader_cut"]
            kind = order.pop()
            fault = {"kind": kind}
            t0 = time.monotonic()
            if kind == "node_partition":
                h = rng.choice(nh)
                fault["target"] = h.name
                f.partition(h)
                time.sleep(10)
                f.heal(h)
                # Silent past --client_ttl: the master declares it dead and drops its objects
                # (docs/failure-model.md); it comes back with an empty segment.
                if 10 >= CHAOS_TTL:
                    destroyed.setdefault(node_endpoint(h), []).append(t0 + CHAOS_TTL)
            elif kind == "engine_partition":
                h = rng.choice(eh)
                fault["target"] = h.name
                time.sleep(rng.uniform(0, 0.3))  # land mid-put or mid-get
                f.partition(h)
                time.sleep(5)
                f.heal(h)
            elif kind == "asym":
                h = rng.choice(nh)
                fault["target"] = h.name
                f.cut(h, eh)  # the node still reaches (and is reached by) the masters
                time.sleep(10)
                f.uncut(h, eh)
            elif kind == "leader_cut":
                lh, lu = leader()
                if not lh:
                    continue
                fault["target"] = lh.name
                others = xh + nh + [h for h in mh if h is not lh]
                f.cut(lh, others)  # engines and the observer still reach it
                time.sleep(10)
                f.uncut(lh, others)
            elif kind == "kill_master":
                lh, lu = leader()
                if not lh:
                    continue
                fault["target"] = lh.name
                f.kill(f"master-{lh.name}")
                f.event(f"kill -9 master {lh.name}")
                time.sleep(3)
                f.start_master(lh, etcd, extra=["--client_ttl", str(CHAOS_TTL)])
                f.event(f"restart master {lh.name}")
            elif kind in ("kill_node", "node_readdress"):
                h = rng.choice(nh)
                fault["target"] = h.name
                placement.sweep()
                old = node_endpoint(h)
                f.kill(f"node-{h.name}")
                f.event(f"kill -9 node {h.name} ({old})")
                destroyed.setdefault(old, []).append(time.monotonic())
                time.sleep(3)
                if kind == "node_readdress":
                    f.readdress(h, f"{SUBNET}.{next_addr[0]}")
                    next_addr[0] += 1
                    fault["new_address"] = h.addr
                f.start_node(h, maddr, args.segment)
                f.event(f"restart node {h.name} at {h.addr}")
            fault["t_fault"] = t0
            fault["t_heal"] = time.monotonic()
            report["faults"].append(fault)
            time.sleep(args.settle_s)
            snapshot(kind)
        # Stop the load, then read back every acknowledged key from a fresh engine.
        for e in engines:
            try:
                e.p.stdin.write(b"stop\n")
                e.p.stdin.close()
            except OSError:
                pass
        for e in engines:
            try:
                e.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                e.p.kill()
        placement.stop.set()
        placement.sweep()
        acked = dict(placement.acked)
        v = Engine(f, "verify", eh[0], maddr, rpc_timeout_ms=rpc_ms,
                   transfer_timeout_ms=xfer_ms, page_size=args.page_size, batch=64)
        keys = sorted(acked)
        missing = []
        for i in range(0, len(keys), 2048):
            r = v.call(op="get", keys=keys[i:i + 2048], timeout=300)
            missing.extend(r.get("missing", []))
            got = set(r.get("read", []))
            missing.extend(k for k in keys[i:i + 2048] if k not in got and
                           k not in r.get("missing", []))
        if missing:  # transient errors: ask once more
            time.sleep(3)
            r = v.call(op="get", keys=missing, timeout=300)
            got = set(r.get("read", []))
            missing = [k for k in missing if k not in got]
        evicted = 0
        try:
            for line in f.http(leader()[1], "/metrics").splitlines():
                if line.startswith("kvpool_master_evicted_objects_total"):
                    evicted += float(line.split()[-1])
        except Exception:  # noqa: BLE001
            pass
        snapshot("end")
        records = []
        for path in logs + [os.path.join(f.dir, "logs", "verify.jsonl")]:
            records.extend(read_jsonl(path))
        mon = read_jsonl(mon_log)
        t_base = f.t0
    # Analysis (after teardown: the logs were read above).
    rep = analyze([r for r in records if r.get("engine") != "verify"], rpc_ms, xfer_ms)
    rep["wrong_bytes"] += sum(r.get("wrong_bytes", 0) for r in records
                              if r.get("engine") == "verify")
    lost_all, lost_real, unknown = [], [], []
    for k in missing:
        eps, _ = placement.where.get(k, (None, None))
        if eps is None:
            unknown.append(k)
        elif eps and all(any(t > acked[k] for t in destroyed.get(ep, [])) for ep in eps):
            lost_all.append(k)
        else:
            lost_real.append(k)
    report.update({
        "acked_puts": len(acked), "missing_at_end": len(missing),
        "lost_with_every_replica_node": len(lost_all), "lost_real": len(lost_real),
        "lost_placement_unknown": len(unknown),
        "lost_examples": [{"key": k, "acked_at": round(acked[k] - t_base, 2),
                           "replicas": placement.where.get(k, (None,))[0],
                           "real": k in lost_real} for k in (lost_real + unknown)[:12]],
        "evicted_objects_at_leader": evicted,
        "wrong_bytes": rep["wrong_bytes"], "wrong_pages": rep["wrong_pages"][:10],
        "past_deadline": len(rep["past_deadline"]),
        "past_deadline_examples": rep["past_deadline"][:10], "ops": rep["ops"]})
    # Recovery: from each heal, the first put whose keys all succeeded and the first get whose
    # keys were all read or cleanly missing (OBJECT_NOT_FOUND: lost with their nodes earlier).
    ops = sorted((r for r in records if r.get("op") in ("put", "get") and
                  r.get("engine") != "verify"), key=lambda r: r["t0"])
    for flt in report["faults"]:
        th = flt["t_heal"]
        rec = {}
        for op in ("put", "get"):
            ok = [r["t1"] for r in ops if r["op"] == op and r["t0"] >= th and
                  all((x == 0 if op == "put" else (x >= 0 or x == NOT_FOUND)) for x in r["rc"])]
            rec[op] = round(ok[0] - th, 2) if ok else None
        flt["recover_s"] = rec
        win = [r for r in ops if r["t1"] >= flt["t_fault"] and r["t0"] <= th]
        flt["failed_keys_during"] = sum(1 for r in win for x in r["rc"] if x < 0)
        flt["keys_during"] = sum(len(r["rc"]) for r in win)
        flt["t_fault"] = round(flt["t_fault"] - t_base, 2)
        flt["t_heal"] = round(th - t_base, 2)
    report["split_brain"] = split_brain(mon)
    report["leaders"] = leader_timeline(mon, t_base)
    report["events"] = [(round(t - t_base, 2), e) for t, e in f.events]
    bad = (report["wrong_bytes"] or report["lost_real"] or report["past_deadline"] or
           report["split_brain"]["windows"])
    print_chaos(report)
    write_json(args.out, report)
    return 1 if bad else 0


def split_brain(mon):
    """Intervals in which each master acknowledged puts (its put_end counter rose between two
    polls, less its put_end errors); any two of different masters that overlap is split brain."""
    by = {}
    for r in mon:
        if "put_end_keys" in r:
            by.setdefault(r["master"], []).append(r)
    acks = []
    for m, rs in by.items():
        rs.sort(key=lambda r: r["t0"])
        for a, b in zip(rs, rs[1:]):
            da = (b["put_end_keys"] - b["put_end_errors"]) - (a["put_end_keys"] - a["put_end_errors"])
            if b["put_end_keys"] < a["put_end_keys"]:
                continue  # counters reset: the master restarted or dropped its term
            if da > 0:
                acks.append((a["t0"], b["t1"], m, b.get("epoch"), da))
    windows = []
    acks.sort()
    for i, x in enumerate(acks):
        for y in acks[i + 1:]:
            if y[0] >= x[1]:
                break  # sorted by start: no later interval overlaps x
            if x[2] != y[2]:
                windows.append({"a": x[2], "a_epoch": x[3], "b": y[2], "b_epoch": y[3],
                                "from": round(max(x[0], y[0]), 2), "to": round(min(x[1], y[1]), 2)})
    return {"ack_intervals": len(acks), "windows": windows[:20], "masters": sorted(by)}


def leader_timeline(mon, t_base):
    """(time, master, epoch) each time the serving leader (role=leader) changed."""
    out, last = [], None
    for r in sorted(mon, key=lambda r: r["t0"]):
        if r.get("role") == "leader":
            cur = (r["master"], r.get("epoch"))
            if cur != last:
                out.append((round(r["t0"] - t_base, 2), cur[0], cur[1]))
                last = cur
    return out


def print_chaos(r):
    print(f"fleet chaos: seed {r['seed']}, {r['minutes']} min, {r['masters']} masters, "
          f"{r['nodes']} nodes, {r['engines']} engines, link {r['link']}")
    print(f"  wrong bytes: {r['wrong_bytes']}")
    print(f"  acknowledged puts: {r['acked_puts']}, missing at the end: {r['missing_at_end']} "
          f"(lost with every replica's node: {r['lost_with_every_replica_node']}, real losses: "
          f"{r['lost_real']}, placement unknown: {r['lost_placement_unknown']}; evicted "
          f"{r['evicted_objects_at_leader']})")
    print(f"  calls past their deadline: {r['past_deadline']}")
    print(f"  split-brain windows: {len(r['split_brain']['windows'])} "
          f"({r['split_brain']['ack_intervals']} acknowledgement intervals observed)")
    print(f"  leaders: {r['leaders']}")
    for op, s in r["ops"].items():
        print(f"  {op}: {s['calls']} calls ({s['calls_per_s']}/s), {s['ok_keys']}/{s['keys']} keys "
              f"ok, p50 {s['p50_ms']} ms, p99 {s['p99_ms']} ms, max {s['max_ms']} ms, "
              f"{s['GB_per_s']} GB/s, errors {s['errors']}")
    print("  faults (time, kind, target, recovery after heal, failed keys while it lasted):")
    for x in r["faults"]:
        print(f"    {x['t_fault']:7.1f}s {x['kind']:16} {x.get('target', ''):4} recover "
              f"put {x['recover_s']['put']} s get {x['recover_s']['get']} s; failed "
              f"{x['failed_keys_during']}/{x['keys_during']} keys")


# ---------------------------------------------------------------------------------------------
# stale-write: the repro of a put whose bytes land after it failed (docs/fleet.md)

def scenario_stale_write(args):
    """Engine and node n1 cut from each other while a put is being written over an established
    connection; the put fails with RPC_TIMEOUT; after the cut heals, new puts are made and read
    back after a few seconds. Exit 1 if any byte read back is wrong."""
    total_wrong, rounds = 0, []
    with Fleet(args) as f:
        m = f.add_host("m0", 0)
        n1, n2 = f.add_host("n1", 1), f.add_host("n2", 2)
        e = f.add_host("e0", 3)
        f.start_master(m)
        maddr, mhttp = f"{m.addr}:{MASTER_PORT}", f"{m.addr}:{MASTER_HTTP}"
        f.wait_http(mhttp)
        for h in (n1, n2):
            f.start_node(h, maddr, "64MB")
        f.wait_http(mhttp, "/segments", 20, want=lambda b: len(json.loads(b)["segments"]) == 2)
        eng = Engine(f, "e0", e, maddr, rpc_timeout_ms=2000, transfer_timeout_ms=3000,
                     page_size=args.page_size, batch=args.batch)
        for rnd in range(args.rounds):
            warm = [f"w{rnd}-{i}" for i in range(args.batch)]
            eng.call(op="put", keys=warm, replicas=2)  # connections to both nodes established
            eng.call(op="get", keys=warm)
            f.cut(n1, [e])
            a = eng.call(op="put", keys=[f"a{rnd}-{i}" for i in range(args.batch)], replicas=2)
            f.uncut(n1, [e])
            b = eng.call(op="put", keys=[f"b{rnd}-{i}" for i in range(4 * args.batch)],
                         replicas=2)
            time.sleep(8)  # the cut-off put's retransmissions reach n1 meanwhile
            g = eng.call(op="get", keys=b.get("acked", []))
            wrong = [x for x in read_jsonl(os.path.join(f.dir, "logs", "e0.jsonl"))
                     if x.get("op") == "get" and x.get("wrong")]
            rounds.append({"round": rnd, "put_during_cut_ok": a["ok"], "errs": a["errs"],
                           "put_after_ok": b["ok"], "read_ok": g["ok"],
                           "wrong_bytes": g["wrong_bytes"]})
            total_wrong += g["wrong_bytes"]
            log(f"round {rnd}: put during the cut {a['ok']}/{args.batch} ok {a['errs']}; "
                f"after the heal {b['ok']} put, {g['ok']} read, wrong bytes {g['wrong_bytes']}")
        examples = [w for x in wrong for w in x["wrong"]][:6]
    print(f"fleet stale-write: {args.rounds} rounds, wrong bytes {total_wrong}")
    for w in examples:
        print(f"  key {w['key']} returned the bytes of {w['holds']}")
    return 1 if total_wrong else 0


# ---------------------------------------------------------------------------------------------
# scale

def machine_busy():
    """(CPU-seconds the whole machine was busy, softirq included, since boot; monotonic now)."""
    with open("/proc/stat") as fh:
        v = [int(x) for x in fh.readline().split()[1:]]
    idle = v[3] + v[4]
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK"), time.monotonic()


def scenario_scale(args):
    link_bits = rate_bits(args.link) if args.link != "none" else 0
    counts = [int(x) for x in (args.nodes or "1,2,4,8,16").split(",")]
    results = {"link": args.link, "page_size": args.page_size, "batch": args.batch,
               "engines": args.engines, "seconds": args.seconds, "runs": []}
    for n in counts:
        n_eng = args.engines or min(8, max(2, n))
        with Fleet(args) as f:
            m = f.add_host("m0", 0)
            nodes = [f.add_host(f"n{i}", 30 + i) for i in range(n)]
            saved = f.args.link
            f.args.link = args.engine_link
            eng_hosts = [f.add_host(f"e{i}", 100 + i) for i in range(n_eng)]
            f.args.link = saved
            f.start_master(m)
            maddr = f"{m.addr}:{MASTER_PORT}"
            mhttp = f"{m.addr}:{MASTER_HTTP}"
            f.wait_http(mhttp)
            for h in nodes:
                f.start_node(h, maddr, args.segment)
            f.wait_http(mhttp, "/segments", 30,
                        want=lambda b: len(json.loads(b)["segments"]) == n)
            procs = []
            for i, h in enumerate(eng_hosts):
                procs.append(f.start_worker(f"e{i}", h, maddr, "bulk", page_size=args.page_size,
                                            batch=args.batch, replicas=1, seconds=args.seconds,
                                            seed=i, rpc_timeout_ms=args.rpc_timeout_ms,
                                            transfer_timeout_ms=args.transfer_timeout_ms))
            for p in procs:
                line = p.p.stdout.readline()
                if not line:
                    raise RuntimeError(f"engine did not start: {tail(p.logpath)}")
            node_names = [f"node-{h.name}" for h in nodes]
            eng_names = [f"e{i}" for i in range(n_eng)]
            cpu0 = (f.proc_cpu_seconds(node_names), f.proc_cpu_seconds(eng_names),
                    f.proc_cpu_seconds(["master-m0"]), machine_busy())
            for p in procs:
                p.p.stdin.write(b"go\n")
                p.p.stdin.flush()
            phases = {"put": [], "get": []}
            cpu = {}
            for ph in ("put", "get"):
                for p in procs:
                    line = p.p.stdout.readline()
                    if not line:
                        raise RuntimeError(f"engine died: {tail(p.logpath)}")
                    phases[ph].append(json.loads(line))
                cpu[ph] = (f.proc_cpu_seconds(node_names), f.proc_cpu_seconds(eng_names),
                           f.proc_cpu_seconds(["master-m0"]), machine_busy())
            records = []
            for i in range(n_eng):
                records.extend(read_jsonl(os.path.join(f.dir, "logs", f"e{i}.jsonl")))
        row = {"nodes": n, "engines": n_eng}
        prev = cpu0
        for ph in ("put", "get"):
            recs = [r for r in records if r.get("op") == ph]
            nbytes = sum(r.get("bytes", 0) for r in recs)
            span = (max(r["t1"] for r in recs) - min(r["t0"] for r in recs)) if recs else 0
            gb = nbytes / 1e9
            row[f"{ph}_GBps"] = round(gb / span, 4) if span else 0
            row[f"{ph}_errors"] = sum(1 for r in recs for x in r["rc"] if x < 0)
            lat = [r["t1"] - r["t0"] for r in recs]
            row[f"{ph}_p50_ms"] = round(pct(lat, 50) * 1000, 1) if lat else None
            row[f"{ph}_p99_ms"] = round(pct(lat, 99) * 1000, 1) if lat else None
            if gb:
                row[f"{ph}_node_cpu_s_per_GB"] = round((cpu[ph][0] - prev[0]) / gb, 3)
                row[f"{ph}_engine_cpu_s_per_GB"] = round((cpu[ph][1] - prev[1]) / gb, 3)
                row[f"{ph}_master_cpu_s_per_GB"] = round((cpu[ph][2] - prev[2]) / gb, 3)
            busy, wall = cpu[ph][3][0] - prev[3][0], cpu[ph][3][1] - prev[3][1]
            row[f"{ph}_machine_busy_cores"] = round(busy / wall, 2) if wall else None
            row[f"{ph}_of_link"] = round(row[f"{ph}_GBps"] * 8e9 / (n * link_bits), 3)
            prev = cpu[ph]
        row["wrong_bytes"] = sum(r.get("wrong_bytes", 0) for r in records)
        results["runs"].append(row)
        log(f"scale {n} nodes: {row}")
    base = results["runs"][0]
    for row in results["runs"]:
        for ph in ("put", "get"):
            one = base[f"{ph}_GBps"] / base["nodes"] if base[f"{ph}_GBps"] else 0
            row[f"{ph}_efficiency"] = round(row[f"{ph}_GBps"] / (row["nodes"] * one), 3) \
                if one else None
    print(f"fleet scale: link {args.link} per node host, engines {args.engines or 'clamp(nodes, 2, 8)'} "
          f"(links {args.engine_link}), pages {args.page_size} B x {args.batch}")
    print("  nodes  put GB/s  eff  of-link  get GB/s  eff  of-link  node CPU-s/GB put/get  "
          "busy cores put/get  wrong")
    for r in results["runs"]:
        print(f"  {r['nodes']:5}  {r['put_GBps']:8.3f}  {r['put_efficiency']:4}  "
              f"{r.get('put_of_link')}  {r['get_GBps']:8.3f}  {r['get_efficiency']:4}  "
              f"{r.get('get_of_link')}  "
              f"{r.get('put_node_cpu_s_per_GB')}/{r.get('get_node_cpu_s_per_GB')}  "
              f"{r.get('put_machine_busy_cores')}/{r.get('get_machine_busy_cores')}  "
              f"{r['wrong_bytes']}")
    write_json(args.out, results)
    return 1 if any(r["wrong_bytes"] for r in results["runs"]) else 0


HICACHE_RE = {
    "turns": (r"turns\s+(\d+) \(([\d.]+)/s\)", lambda m: (int(m[1]), float(m[2]))),
    "l3": (r"L3 hit rate\s+([\d.]+)% .*?\((\d+) lost", lambda m: (float(m[1]), int(m[2]))),
    "checked": (r"checked\s+(\d+) pages read back byte-exact", lambda m: int(m[1])),
    "dropped": (r"dropped\s+(\d+) page writes refused", lambda m: int(m[1])),
}


def parse_hicache(text):
    """The figures of a `kvpool-bench --workload hicache` summary (hicache_workload.cc)."""
    out = {}
    for k, (rx, conv) in HICACHE_RE.items():
        m = re.search(rx, text)
        out[k] = conv(m) if m else None
    return out


def scenario_hicache(args):
    """The HiCache workload across hosts: --engines engine hosts (2 engine threads each, one
    kvpool-bench process per host) against --nodes node hosts and one master, then the same
    engines and nodes on one host over loopback for the single-host figure."""
    bench = os.path.join(args.build, "src", "tools", "kvpool-bench")
    if not os.access(bench, os.X_OK):
        print(f"fleet: no kvpool-bench in {args.build}/src/tools (configure with "
              "-DKVPOOL_BUILD_BENCH=ON)", file=sys.stderr)
        return 1
    n_nodes, n_eng, secs = int(args.nodes or 8), args.engines or 4, args.seconds
    common = ["bench", "--mode", "remote", "--workload", "hicache", "--engines", "2",
              "--duration_s", str(secs), "--no_progress", "--no_limits", "--peers", "none"]
    result = {"nodes": n_nodes, "engine_hosts": n_eng, "engines_per_host": 2,
              "seconds": secs, "link": args.link, "segment": args.segment}
    with Fleet(args) as f:
        m = f.add_host("m0", 0)
        nodes = [f.add_host(f"n{i}", 30 + i) for i in range(n_nodes)]
        eng_hosts = [f.add_host(f"e{i}", 100 + i) for i in range(n_eng)]
        f.start_master(m)
        maddr, mhttp = f"{m.addr}:{MASTER_PORT}", f"{m.addr}:{MASTER_HTTP}"
        f.wait_http(mhttp)
        for h in nodes:
            f.start_node(h, maddr, args.segment)
        f.wait_http(mhttp, "/segments", 60,
                    want=lambda b: len(json.loads(b)["segments"]) == n_nodes)
        log(f"hicache: {n_eng} engine hosts x 2 engines, {n_nodes} node hosts, {secs:.0f} s")
        procs = [f.spawn(f"bench-{h.name}", h, [bench] + common + ["--master", maddr,
                                                                   "--auth_secret_file",
                                                                   f.secret_file])
                 for h in eng_hosts]
        deadline = time.monotonic() + secs + 120
        for p in procs:
            p.p.wait(timeout=max(1, deadline - time.monotonic()))
        stat = json.loads(f.http(mhttp, "/segments"))
        per_host = []
        for p in procs:
            with open(p.logpath) as fh:
                text = fh.read()
            r = parse_hicache(text)
            r["host"], r["rc"] = p.host.name, p.p.returncode
            if p.p.returncode != 0:
                r["tail"] = tail(p.logpath)
            per_host.append(r)
        result["per_host"] = per_host
        result["evicted_objects"] = stat.get("evicted_objects")
        metrics = f.http(mhttp, "/metrics")
        refused = sum(float(x) for x in re.findall(
            r'^kvpool_master_put_refused_total\{[^}]*\} ([\d.e+]+)$', metrics, re.M))
        result["put_refused"] = int(refused)
    ok = [r for r in per_host if r["rc"] == 0 and r["turns"]]
    result["turns_per_s"] = round(sum(r["turns"][1] for r in ok), 1)
    result["l3_hit_rate_pct"] = (round(sum(r["l3"][0] for r in ok) / len(ok), 2)
                                 if ok else None)
    result["lost_between_exists_and_get"] = sum(r["l3"][1] for r in ok if r["l3"])
    result["dropped_writes"] = sum(r["dropped"] or 0 for r in ok)
    result["pages_checked"] = sum(r["checked"] or 0 for r in ok)
    # The single-host figure: the same engines (one process) and nodes over loopback.
    log(f"hicache: single-host reference, {2 * n_eng} engines, {n_nodes} nodes on loopback")
    ref = subprocess.run([bench] + common[:6] + [str(2 * n_eng)] + common[7:] +
                         ["--nodes", str(n_nodes), "--segment_size", args.segment],
                         capture_output=True, text=True, timeout=secs + 180)
    rr = parse_hicache(ref.stdout)
    result["single_host"] = {"rc": ref.returncode, **rr}
    if rr["turns"]:
        result["single_host_turns_per_s"] = rr["turns"][1]
        result["vs_single_host"] = round(result["turns_per_s"] / rr["turns"][1], 3)
    print(f"fleet hicache: {n_eng} engine hosts x 2 engines, {n_nodes} node hosts "
          f"(links {args.link}, {args.segment} each), {secs:.0f} s")
    for r in per_host:
        print(f"  {r['host']}: rc {r['rc']} turns {r['turns']} L3 {r['l3']} "
              f"checked {r['checked']} dropped {r['dropped']}")
    print(f"  turns/s {result['turns_per_s']} (single host: "
          f"{result.get('single_host_turns_per_s')}, ratio {result.get('vs_single_host')}), "
          f"L3 hit rate {result['l3_hit_rate_pct']}%, lost between exists and get "
          f"{result['lost_between_exists_and_get']}, refused puts {result['put_refused']}, "
          f"dropped writes {result['dropped_writes']}, pages checked byte-exact "
          f"{result['pages_checked']}")
    write_json(args.out, result)
    return 0 if len(ok) == len(per_host) and ref.returncode == 0 else 1


def cmd_plot(args):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("fleet plot: needs python3-matplotlib (apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 1
    if not args.results:
        print("fleet plot: pass the JSON file of a scale run (or hicache runs)", file=sys.stderr)
        return 2
    loaded = []
    for path in args.results:
        with open(path) as fh:
            loaded.append(json.load(fh))
    if "per_host" in loaded[0]:
        return plot_hicache(plt, loaded, args.out or os.path.splitext(args.results[0])[0] + ".png")
    if "lookups_per_s" in loaded[0]:
        return plot_master(plt, loaded, args.out or os.path.splitext(args.results[0])[0] + ".png")
    res = loaded[0]
    runs = res["runs"]
    n = [r["nodes"] for r in runs]
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for ph, mark in (("put", "o-"), ("get", "s-")):
        ax[0].plot(n, [r[f"{ph}_GBps"] for r in runs], mark, label=f"{ph}")
        one = runs[0][f"{ph}_GBps"] / runs[0]["nodes"]
        ax[0].plot(n, [one * x for x in n], ":", label=f"{ph}: nodes x one node")
        ax[1].plot(n, [r.get(f"{ph}_node_cpu_s_per_GB") for r in runs], mark, label=f"{ph}")
    ax[0].set_xlabel("nodes")
    ax[0].set_ylabel("aggregate GB/s")
    ax[0].set_xscale("log", base=2)
    ax[0].set_title(f"links {res['link']} per node host")
    ax[0].legend()
    ax[1].set_xlabel("nodes")
    ax[1].set_ylabel("node CPU-seconds per GB")
    ax[1].set_xscale("log", base=2)
    ax[1].legend()
    fig.tight_layout()
    out = args.out or os.path.splitext(args.results[0])[0] + ".png"
    fig.savefig(out, dpi=100)
    print(f"fleet plot: {out}")
    return 0


def plot_master(plt, runs, out):
    """scripts/fleet_master.py runs: exists latency and lookups/s, and the master's memory,
    per (objects, engine processes), in the order given."""
    labels = [f"{r['objects'] / 1e6:g} M obj.\n{r['engines']} eng. / {r['hosts']} h."
              for r in runs]
    xs = list(range(len(runs)))
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(xs, [r["exists_p50_ms"] for r in runs], "o-", label="exists(128) p50")
    ax[0].plot(xs, [r["exists_p99_ms"] for r in runs], "s-", label="exists(128) p99")
    ax[0].set_yscale("log")
    ax[0].set_ylabel("ms per call")
    ax[0].set_xticks(xs)
    ax[0].set_xticklabels(labels, fontsize=8)
    ax[0].legend(loc="upper left")
    tw = ax[0].twinx()
    tw.bar(xs, [r["lookups_per_s"] / 1e6 for r in runs], alpha=0.25, color="grey")
    tw.set_ylabel("million lookups/s (bars)")
    ax[1].bar(xs, [r["master_rss_bytes_filled"] / 1e9 for r in runs], color="#4a7")
    for x, r in zip(xs, runs):
        ax[1].text(x, r["master_rss_bytes_filled"] / 1e9,
                   f"{r['master_cores_during_exists']:.2f} cores", ha="center", va="bottom")
    ax[1].set_ylabel("master RSS after the fill, GB")
    ax[1].set_xticks(xs)
    ax[1].set_xticklabels(labels, fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"fleet plot: {out}")
    return 0


def plot_hicache(plt, runs, out):
    """Turns/s of `hicache` runs: the single-host figure, then the fleet per link rate
    (medians over the runs given), the L3 hit rate written on each bar."""
    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
    r0 = runs[0]
    bars = [(f"1 host, loopback\n({2 * r0['engine_hosts']} engines, {r0['nodes']} nodes)",
             median([r["single_host_turns_per_s"] for r in runs]),
             median([r["single_host"]["l3"][0] for r in runs]))]
    for link in sorted({r["link"] for r in runs}, key=lambda x: (x != "none", x)):
        group = [r for r in runs if r["link"] == link]
        bars.append((f"{r0['engine_hosts']} engine hosts + {r0['nodes']} node hosts\nlinks {link}",
                     median([r["turns_per_s"] for r in group]),
                     median([r["l3_hit_rate_pct"] for r in group])))
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = range(len(bars))
    ax.bar(xs, [b[1] for b in bars], color=["#888"] + ["#4a7"] * (len(bars) - 1))
    for x, (_, v, l3) in zip(xs, bars):
        ax.text(x, v, f"{v:.0f} turns/s\nL3 hits {l3:.1f}%", ha="center", va="bottom")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([b[0] for b in bars])
    ax.set_ylabel("turns/s (median of runs)")
    ax.set_ylim(0, max(b[1] for b in bars) * 1.3)
    ax.set_title(f"HiCache workload, {len(runs)} runs, {r0['seconds']:.0f} s each")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"fleet plot: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
