#!/usr/bin/python3
"""Engine process of scripts/fleet.py: runs inside one fleet host (network namespace), joins the
pool through the Python module (kvpool.KVPoolStore, a pure client: global_segment_size 0) and
moves pages whose bytes are a deterministic function of (key, version), so any wrong byte is
seen. Every operation is logged as one JSON line (docs/fleet.md, "Worker log").

Modes (--mode):
  cmd    read JSON commands from stdin, one per line, answer one JSON line on stdout each:
         {"op": "put", "keys": [...], "replicas": 2}    batch_put_from, in batches of --batch
         {"op": "get", "keys": [...]}                   batch_get_into + verification
         {"op": "exists", "keys": [...]}                batch_is_exist
         {"op": "quit"}
  loop   until --seconds pass (or stdin closes): put a batch of new keys, read a batch of keys put
         earlier by this worker, ask exists of a batch; paced by --rate batches per second.
  bulk   put --pages pages then read them all back, repeatedly, for --seconds (throughput).
  monitor  no kvpool: poll the masters' HTTP /metrics every --interval_ms and log role, epoch
         and put counters per master (the split-brain check of chaos runs).
Stdlib + numpy only; run with /usr/bin/python3 and PYTHONPATH=<repo>/build/python.
"""
import argparse
import hashlib
import json
import os
import random
import select
import sys
import time
import urllib.request

OUT = sys.stdout
BASE_WORDS = (8 << 20) // 8  # 8 MiB of seeded random words shared by every page


def now():
    return time.monotonic(), time.time()


class Pages:
    """page(key, version) = (a key-chosen window of a seeded random block) XOR (a key-derived
    64-bit word), with "key|version" in its first 64 bytes: bytes of another key or version never
    pass, and a wrong page tells whose bytes it holds."""

    def __init__(self, np, size):
        if size % 8 or size < 64:
            raise SystemExit("page size must be a multiple of 8 and at least 64")
        self.np = np
        self.size = size
        rng = np.random.default_rng(20240528)
        self.base = rng.integers(0, 2**63, size=BASE_WORDS + size // 8, dtype=np.uint64)

    def fill(self, key, version, out):
        """out: uint8 array of self.size bytes."""
        np = self.np
        h = hashlib.blake2b(f"{key}|{version}".encode(), digest_size=16).digest()
        off = int.from_bytes(h[:4], "little") % BASE_WORDS
        pat = np.uint64(int.from_bytes(h[4:12], "little"))
        words = out.view(np.uint64)
        np.bitwise_xor(self.base[off:off + self.size // 8], pat, out=words)
        head = f"{key}|{version}".encode()[:64].ljust(64, b"\0")
        out[:64] = np.frombuffer(head, dtype=np.uint8)

    def whose(self, buf):
        return bytes(buf[:64]).rstrip(b"\0").decode("utf-8", "replace")


class Worker:
    def __init__(self, args):
        import numpy as np
        import kvpool
        self.np = np
        self.kvpool = kvpool
        self.args = args
        self.pages = Pages(np, args.page_size)
        self.log = open(args.log, "a", buffering=1)
        self.store = kvpool.KVPoolStore()
        cfg = {
            "local_hostname": args.host,
            "metadata_server": "P2PHANDSHAKE",
            "global_segment_size": 0,
            "local_buffer_size": 16 << 20,
            "protocol": "tcp",
            "master_server_address": args.master,
            "rpc_timeout_ms": args.rpc_timeout_ms,
            "transfer_timeout_ms": args.transfer_timeout_ms,
        }
        if args.secret_file:
            cfg["auth_secret_file"] = args.secret_file
        if args.tls_ca:
            cfg["tls_ca_file"] = args.tls_ca
        t0 = time.monotonic()
        rc = -1
        # The master may still be starting (or electing): retry setup for up to 30 s.
        while time.monotonic() - t0 < 30:
            rc = self.store.setup(cfg)
            if rc == 0:
                break
            time.sleep(0.5)
        self.emit({"op": "setup", "rc": rc, "err": "" if rc == 0 else kvpool.last_error(),
                   "t0": t0, "t1": time.monotonic()})
        if rc != 0:
            raise SystemExit(f"setup failed: {rc} {kvpool.last_error()}")
        n = max(args.batch, 1)
        self.put_buf = np.zeros(n * args.page_size, dtype=np.uint8)
        self.get_buf = np.zeros(n * args.page_size, dtype=np.uint8)
        self.want = np.zeros(args.page_size, dtype=np.uint8)
        for b in (self.put_buf, self.get_buf):
            r = self.store.register_buffer(b.ctypes.data, b.nbytes)
            if r != 0:
                raise SystemExit(f"register_buffer failed: {r}")

    def emit(self, rec):
        rec["w"] = time.time()
        rec["engine"] = self.args.name if hasattr(self, "args") else ""
        self.log.write(json.dumps(rec, separators=(",", ":")) + "\n")

    def code_name(self, rc):
        try:
            return self.kvpool.ErrorCode(rc).name
        except ValueError:
            return str(rc)

    def put(self, keys, replicas, version=0):
        out = []
        ps = self.args.page_size
        for i in range(0, len(keys), self.args.batch):
            chunk = keys[i:i + self.args.batch]
            ptrs, sizes = [], []
            for j, k in enumerate(chunk):
                self.pages.fill(k, version, self.put_buf[j * ps:(j + 1) * ps])
                ptrs.append(self.put_buf.ctypes.data + j * ps)
                sizes.append(ps)
            cfg = self.kvpool.ReplicateConfig()
            cfg.replica_num = replicas
            t0, w0 = now()
            rcs = self.store.batch_put_from(chunk, ptrs, sizes, cfg)
            t1 = time.monotonic()
            rec = {"op": "put", "t0": t0, "t1": t1, "w0": w0, "keys": chunk, "rc": list(rcs),
                   "v": version, "bytes": ps * sum(1 for r in rcs if r == 0)}
            self.note_errors(rec, [r for r in rcs if r != 0])
            out.append(rec)
        return out

    def note_errors(self, rec, failed):
        """Adds the failed codes' names and the library's last message to `rec`; emits it."""
        errs = {self.code_name(r) for r in failed}
        if errs:
            rec["errs"] = sorted(errs)
            rec["err"] = self.kvpool.last_error()[:300]
        self.emit(rec)

    def get(self, keys, version=0):
        np = self.np
        out = []
        ps = self.args.page_size
        for i in range(0, len(keys), self.args.batch):
            chunk = keys[i:i + self.args.batch]
            ptrs = [self.get_buf.ctypes.data + j * ps for j in range(len(chunk))]
            self.get_buf[:len(chunk) * ps] = 0
            t0, w0 = now()
            rcs = self.store.batch_get_into(chunk, ptrs, [ps] * len(chunk))
            t1 = time.monotonic()
            wrong_bytes, wrong = 0, []
            verified = 0
            for j, (k, r) in enumerate(zip(chunk, rcs)):
                if r < 0:
                    continue
                got = self.get_buf[j * ps:(j + 1) * ps]
                self.pages.fill(k, version, self.want)
                if r != ps or not np.array_equal(got, self.want):
                    n = int(np.count_nonzero(got != self.want))
                    wrong_bytes += max(n, 1)  # a short read with equal bytes is still wrong
                    wrong.append({"key": k, "rc": r, "holds": self.pages.whose(got)})
                else:
                    verified += ps
            rec = {"op": "get", "t0": t0, "t1": t1, "w0": w0, "keys": chunk, "rc": list(rcs),
                   "v": version, "bytes": verified, "wrong_bytes": wrong_bytes}
            if wrong:
                rec["wrong"] = wrong
            self.note_errors(rec, [r for r in rcs if r < 0])
            out.append(rec)
        return out

    def exists(self, keys):
        t0, w0 = now()
        rcs = self.store.batch_is_exist(keys)
        rec = {"op": "exists", "t0": t0, "t1": time.monotonic(), "w0": w0, "keys": keys,
               "rc": list(rcs)}
        self.emit(rec)
        return [rec]

    @staticmethod
    def summary(recs):
        s = {"calls": len(recs), "keys": 0, "ok": 0, "errs": {}, "wrong_bytes": 0, "bytes": 0,
             "max_s": 0.0}
        for r in recs:
            s["keys"] += len(r["keys"])
            ok = [x for x in r["rc"] if (x == 0 if r["op"] == "put" else x >= 0)]
            s["ok"] += len(ok)
            for e in r.get("errs", []):
                s["errs"][e] = s["errs"].get(e, 0) + 1
            s["wrong_bytes"] += r.get("wrong_bytes", 0)
            s["bytes"] += r.get("bytes", 0)
            s["max_s"] = max(s["max_s"], r["t1"] - r["t0"])
            if r["op"] == "exists":
                s["present"] = s.get("present", 0) + sum(1 for x in r["rc"] if x == 1)
            if r["op"] == "put":
                s.setdefault("acked", []).extend(k for k, x in zip(r["keys"], r["rc"]) if x == 0)
            if r["op"] == "get":
                s.setdefault("read", []).extend(k for k, x in zip(r["keys"], r["rc"]) if x >= 0)
                s.setdefault("missing", []).extend(
                    k for k, x in zip(r["keys"], r["rc"]) if x == -704)
        return s

    def run_cmd(self):
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            c = json.loads(line)
            op = c.get("op")
            if op == "quit":
                break
            t0 = time.monotonic()
            if op == "put":
                recs = self.put(c["keys"], c.get("replicas", 1), c.get("v", 0))
            elif op == "get":
                recs = self.get(c["keys"], c.get("v", 0))
            elif op == "exists":
                recs = self.exists(c["keys"])
            else:
                OUT.write(json.dumps({"error": f"unknown op {op}"}) + "\n")
                continue
            s = self.summary(recs)
            s["op"] = op
            s["id"] = c.get("id")
            s["elapsed_s"] = time.monotonic() - t0
            OUT.write(json.dumps(s) + "\n")

    def run_loop(self):
        a = self.args
        rng = random.Random(a.seed)
        end = time.monotonic() + a.seconds
        acked = []
        seq = 0
        period = 1.0 / a.rate if a.rate > 0 else 0
        nxt = time.monotonic()
        while time.monotonic() < end:
            if select.select([sys.stdin], [], [], 0)[0]:
                break  # the tool wrote "stop" or closed our stdin
            keys = [f"{a.name}-{seq + i}" for i in range(a.batch)]
            seq += a.batch
            for r in self.put(keys, a.replicas):
                acked.extend(k for k, x in zip(r["keys"], r["rc"]) if x == 0)
            if acked:
                self.get(rng.sample(acked, min(a.batch, len(acked))))
                self.exists(rng.sample(acked, min(a.batch, len(acked))))
            if period:
                nxt += period
                d = nxt - time.monotonic()
                if d > 0:
                    time.sleep(d)
                else:
                    nxt = time.monotonic()
        self.emit({"op": "end", "t0": time.monotonic(), "t1": time.monotonic(), "keys": [],
                   "rc": []})

    def run_bulk(self):
        """Wait for "go" on stdin, put new pages for --seconds/2, then read random batches of
        them for --seconds/2; print one JSON summary per phase."""
        a = self.args
        sys.stdin.readline()
        rng = random.Random(a.seed)
        half = a.seconds / 2
        acked, seq, recs = [], 0, []
        end = time.monotonic() + half
        while time.monotonic() < end:
            keys = [f"{a.name}-bulk-{seq + i}" for i in range(a.batch)]
            seq += a.batch
            for r in self.put(keys, a.replicas):
                recs.append(r)
                acked.extend(k for k, x in zip(r["keys"], r["rc"]) if x == 0)
        s = self.summary(recs)
        OUT.write(json.dumps({"phase": "put", "bytes": s["bytes"], "keys": s["keys"],
                          "ok": s["ok"], "errs": s["errs"]}) + "\n")
        recs = []
        end = time.monotonic() + half
        while acked and time.monotonic() < end:
            recs.extend(self.get(rng.sample(acked, min(a.batch, len(acked)))))
        s = self.summary(recs)
        OUT.write(json.dumps({"phase": "get", "bytes": s["bytes"], "keys": s["keys"],
                          "ok": s["ok"], "errs": s["errs"], "wrong_bytes": s["wrong_bytes"]}) + "\n")


def run_monitor(args):
    """Poll every master's /metrics; log role, epoch, leader flag and put_end key counters."""
    log = open(args.log, "a", buffering=1)
    urls = args.masters.split(",")
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for u in urls:
            t0, w0 = now()
            rec = {"op": "mon", "master": u, "t0": t0, "w0": w0}
            try:
                with urllib.request.urlopen(f"http://{u}/metrics", timeout=0.5) as r:
                    text = r.read().decode("utf-8", "replace")
                put_keys = put_err = 0.0
                for line in text.splitlines():
                    if line.startswith("kvpool_master_ha_role{"):
                        rec["role"] = line.split('role="', 1)[1].split('"', 1)[0]
                    elif line.startswith("kvpool_master_ha_epoch "):
                        rec["epoch"] = int(float(line.split()[1]))
                    elif line.startswith("kvpool_master_ha_leader "):
                        rec["leader"] = int(float(line.split()[1]))
                    elif line.startswith('kvpool_master_request_keys_total{method="put_end"}'):
                        put_keys = float(line.split()[-1])
                    elif line.startswith('kvpool_master_errors_total{method="put_end"'):
                        put_err += float(line.split()[-1])
                    elif line.startswith("kvpool_master_objects "):
                        rec["objects"] = int(float(line.split()[1]))
                rec["put_end_keys"] = put_keys
                rec["put_end_errors"] = put_err
            except Exception as e:  # unreachable (partitioned, killed): that is data too
                rec["down"] = type(e).__name__
            rec["t1"] = time.monotonic()
            log.write(json.dumps(rec, separators=(",", ":")) + "\n")
        time.sleep(args.interval_ms / 1000.0)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", choices=["cmd", "loop", "bulk", "monitor"], required=True)
    p.add_argument("--name", default="e0")
    p.add_argument("--host", default="127.0.0.1", help="this host's address (local_hostname)")
    p.add_argument("--master", default="127.0.0.1:50051")
    p.add_argument("--secret_file", default="")
    p.add_argument("--tls_ca", default="")
    p.add_argument("--log", required=True)
    p.add_argument("--page_size", type=int, default=256 << 10)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--replicas", type=int, default=2)
    p.add_argument("--pages", type=int, default=64)
    p.add_argument("--rate", type=float, default=5.0)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rpc_timeout_ms", type=int, default=2000)
    p.add_argument("--transfer_timeout_ms", type=int, default=5000)
    p.add_argument("--masters", default="", help="monitor: host:port of each master's HTTP")
    p.add_argument("--interval_ms", type=int, default=200)
    args = p.parse_args()
    if args.mode == "monitor":
        run_monitor(args)
        return
    # Answers go to the tool on our own copy of stdout; anything the C++ library prints lands in
    # stderr (the log), never in the middle of an answer.
    global OUT
    OUT = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    w = Worker(args)
    OUT.write(json.dumps({"ready": True}) + "\n")
    if args.mode == "cmd":
        w.run_cmd()
    elif args.mode == "loop":
        w.run_loop()
    else:
        w.run_bulk()
    w.store.close()


if __name__ == "__main__":
    main()
