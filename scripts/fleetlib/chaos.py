"""`fleet.py chaos` (seeded faults under load, HA masters) and `fleet.py stale-write`."""
import json
import os
import random
import subprocess
import threading
import time
import urllib.parse

from .base import (MASTER_HTTP, MASTER_PORT, NODE_PORT, NOT_FOUND, PY, SUBNET, WORKER, http_get,
                   log, ns_call)
from .cluster import Engine, Fleet
from .results import analyze, read_jsonl, tail, write_json


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
                                          batch=args.batch, replicas=args.replicas, rate=args.rate,
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
