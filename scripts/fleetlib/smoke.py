"""`fleet.py smoke` (the CI check) and `fleet.py up` (a fleet held for exploration)."""
import json
import os
import subprocess
import time

from .base import MASTER_HTTP, MASTER_PORT, NODE_PORT, PY, _child_setup, log
from .cluster import Engine, Fleet
from .results import analyze, read_jsonl


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
