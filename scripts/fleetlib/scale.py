"""`fleet.py scale`: aggregate put/get throughput against 1..N node hosts."""
import json
import os
import time

from .base import MASTER_HTTP, MASTER_PORT, log, rate_bits
from .cluster import Fleet
from .results import pct, read_jsonl, tail, write_json


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
