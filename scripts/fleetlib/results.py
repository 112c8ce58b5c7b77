"""Results of a run: JSON out, logs, latencies, and the analysis of worker logs."""
import json

from .base import log


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
