"""A fleet: its hosts (network namespaces), the processes in them, and engines."""
import json
import os
import secrets
import shutil
import signal
import subprocess
import threading
import time

from .base import (MASTER_HTTP, MASTER_PORT, NODE_HTTP, NODE_PORT, OBS_IP, PREFIX, PY, SINK_IP,
                   SUBNET, WORKER, _child_setup, clean_runs, http_get, ip, log, ns_call, rate_bits,
                   run, start_guard)
from .results import tail


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
