"""`fleet.py hicache`: the HiCache workload across hosts vs one host."""
import json
import os
import re
import subprocess
import sys
import time

from .base import MASTER_HTTP, MASTER_PORT, log
from .cluster import Fleet
from .results import tail, write_json


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
