#!/usr/bin/python3
"""The master under many engines across hosts (docs/scale.md, "The master under load").

A fleet (scripts/fleet.py) of one master host, one node host and --hosts engine hosts. A filler
puts --objects small objects (--object_bytes each), then --per_host engine processes on each
engine host ask batch_is_exist of --batch random present keys in a loop for --seconds. Reports
exists latency p50/p99 (per call, all engines together), lookups per second, the master's
CPU-seconds and resident memory before and after the fill. Writes the figures as JSON (--out).

  scripts/fleet_master.py --objects 1000000 --hosts 8 --per_host 8 --seconds 15 --out m.json
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet  # noqa: E402

SETUP = """
import sys, kvpool
def store(master, secret_file):
    s = kvpool.KVPoolStore()
    cfg = {"local_hostname": "localhost", "metadata_server": "P2PHANDSHAKE", "global_segment_size": 0,
           "local_buffer_size": 0, "protocol": "tcp", "master_server_address": master,
           "auth_secret_file": secret_file, "rpc_timeout_ms": 10000}
    rc = s.setup(cfg)
    if rc != 0:
        raise SystemExit(f"setup {rc} {kvpool.last_error()}")
    return s
"""

FILL = SETUP + """
import numpy as np, time
s = store(sys.argv[1], sys.argv[2])
n, size, batch = int(sys.argv[3]), int(sys.argv[4]), 1024
buf = np.full(size * batch, 7, dtype=np.uint8)
assert s.register_buffer(buf.ctypes.data, buf.nbytes) == 0
ptrs = [buf.ctypes.data + i * size for i in range(batch)]
t0, ok = time.monotonic(), 0
for first in range(0, n, batch):
    keys = [f"m-{i:09d}" for i in range(first, min(n, first + batch))]
    rc = s.batch_put_from(keys, ptrs[:len(keys)], [size] * len(keys))
    ok += sum(1 for x in rc if x == 0)
print("FILLED", ok, round(time.monotonic() - t0, 2), flush=True)
"""

ASK = SETUP + """
import random, time, json
s = store(sys.argv[1], sys.argv[2])
n, batch, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
rng = random.Random(sys.argv[6])
sys.stdin.readline()  # "go", so every engine starts together
lat, present, end = [], 0, time.monotonic() + seconds
while time.monotonic() < end:
    keys = [f"m-{rng.randrange(n):09d}" for _ in range(batch)]
    t = time.monotonic()
    rc = s.batch_is_exist(keys)
    lat.append(time.monotonic() - t)
    present += sum(1 for x in rc if x == 1)
print("RESULT " + json.dumps({"calls": len(lat), "present": present, "lat": lat}), flush=True)
"""


def proc_stat(pid):
    with open(f"/proc/{pid}/stat") as fh:
        f = fh.read().rsplit(")", 1)[1].split()
    cpu = (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    rss = 0
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    return cpu, rss


def master_pid(proc):
    """The kvpool master's pid (the Popen runs `ip netns exec`, which execs it)."""
    return proc.p.pid


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else 0.0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(fleet.ROOT, "build"))
    p.add_argument("--link", default="none")
    p.add_argument("--objects", type=int, default=1000000)
    p.add_argument("--object_bytes", type=int, default=256)
    p.add_argument("--hosts", type=int, default=8)
    p.add_argument("--per_host", type=int, default=8)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--out", default="")
    args = p.parse_args()
    # What fleet.Fleet reads of its arguments.
    args.command, args.tls, args.keep_logs, args.node_host_flag = "master", False, None, False
    why = fleet.check_permitted()
    if why:
        print(f"fleet_master: {why}")
        return fleet.EXIT_NOT_PERMITTED
    res = {"objects": args.objects, "object_bytes": args.object_bytes, "hosts": args.hosts,
           "engines": args.hosts * args.per_host, "batch": args.batch}
    with fleet.Fleet(args) as f:
        m = f.add_host("m0", 0)
        n = f.add_host("n0", 1)
        eh = [f.add_host(f"e{i}", 2 + i) for i in range(args.hosts)]
        master = f.start_master(m)
        maddr, mhttp = f"{m.addr}:{fleet.MASTER_PORT}", f"{m.addr}:{fleet.MASTER_HTTP}"
        f.wait_http(mhttp)
        seg = max(64 << 20, 2 * args.objects * max(64, args.object_bytes))
        f.start_node(n, maddr, str(seg))
        f.wait_http(mhttp, "/segments", 30, want=lambda b: len(json.loads(b)["segments"]) == 1)
        env = {"PYTHONPATH": os.path.join(args.build, "python")}
        pid = master_pid(master)
        cpu0, rss0 = proc_stat(pid)
        filler = f.spawn("filler", n, [fleet.PY, "-c", FILL, maddr, f.secret_file,
                                      str(args.objects), str(args.object_bytes)], env=env)
        filler.p.wait(timeout=1800)
        with open(filler.logpath, errors="replace") as fh:
            filled = [x for x in fh if x.startswith("FILLED")]
        fleet.log(filled[-1].strip() if filled else "filler failed")
        cpu1, rss1 = proc_stat(pid)
        res["fill"] = filled[-1].split()[1:] if filled else None
        res["master_rss_bytes_before"], res["master_rss_bytes_filled"] = rss0, rss1
        asks = []
        for h in eh:
            for j in range(args.per_host):
                name = f"ask-{h.name}-{j}"
                asks.append(f.spawn(name, h, [fleet.PY, "-c", ASK, maddr, f.secret_file,
                                              str(args.objects), str(args.batch),
                                              str(args.seconds), name], env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        time.sleep(min(60, 3 + 0.5 * len(asks)))  # every engine set up (imports, setup)
        cpu2, _ = proc_stat(pid)
        t0 = time.monotonic()
        for a in asks:
            a.p.stdin.write(b"go\n")
            a.p.stdin.flush()
        lat, calls, present = [], 0, 0
        for a in asks:
            out, _ = a.p.communicate(timeout=args.seconds + 120)
            for line in out.decode(errors="replace").splitlines():
                if line.startswith("RESULT "):
                    r = json.loads(line[7:])
                    lat.extend(r["lat"])
                    calls += r["calls"]
                    present += r["present"]
        wall = time.monotonic() - t0
        cpu3, rss3 = proc_stat(pid)
        res.update({
            "exists_calls": calls, "engines_reporting": sum(1 for a in asks if a.p.returncode == 0),
            "exists_p50_ms": round(pct(lat, 0.50) * 1e3, 3),
            "exists_p99_ms": round(pct(lat, 0.99) * 1e3, 3),
            "lookups_per_s": round(calls * args.batch / max(wall, 1e-9)),
            "present_fraction": round(present / max(1, calls * args.batch), 4),
            "master_cpu_s_fill": round(cpu1 - cpu0, 2),
            "master_cores_during_exists": round((cpu3 - cpu2) / max(wall, 1e-9), 2),
            "master_rss_bytes_end": rss3, "wall_s": round(wall, 1)})
    print(json.dumps(res, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
