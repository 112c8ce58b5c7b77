#!/usr/bin/env python3
"""Put throughput of a master with KV events off vs on (docs/benchmarks.md, "KV events cost").

For each mode a fresh master and a 512 MB node on free 127.0.0.1 ports; one client puts
KEYS small objects (64 B: the master's work per key dominates) in batches of 128 and the
script reports keys/s; with events on, a subscriber process reads and decodes every batch.
Runs alternate off/on/off/... and the medians of ROUNDS runs are printed.

  PYTHONPATH=build/python KVPOOL_BINARY=build/src/tools/kvpool \
      /usr/bin/python3 scripts/kv_events_ab.py [--keys 40000] [--rounds 3] [--stuck 1000]
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python" / "tests"))
from conftest import Pool, free_port  # noqa: E402

import kvpool  # noqa: E402


SUBSCRIBER = """
import sys, time
from kvpool.kv_events import KvEventSubscriber
want, got = int(sys.argv[2]), 0
sub = KvEventSubscriber(sys.argv[1])
print("ready", flush=True)
end = time.monotonic() + 120
while got < want and time.monotonic() < end:
    b = sub.recv(100)
    if b is not None:
        got += sum(len(getattr(e, "block_hashes", [])) for e in b.events)
print(got, flush=True)
"""


STUCK = """
import sys, time, zmq
ctx, socks = zmq.Context(), []
for _ in range(int(sys.argv[2])):
    s = ctx.socket(zmq.SUB)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.RCVHWM, 1)
    s.setsockopt_string(zmq.SUBSCRIBE, "")
    s.connect(sys.argv[1])
    socks.append(s)
print("ready", flush=True)
time.sleep(3600)
"""


def run(keys: int, events: bool, stuck: int = 0) -> tuple[float, int]:
    """keys/s of one run; with events, how many stored events the subscriber received.
    `stuck`: subscribers (in one more process) that connect and never read."""
    flags, sub, idle = [], None, None
    if events:
        port = free_port()
        flags = ["--kv_events_endpoint", f"tcp://127.0.0.1:{port}"]
    pool = Pool(master_flags=flags)
    try:
        pool.add_node("512MB")
        if events:  # its own process: it competes for the CPUs, not for this one's GIL
            sub = subprocess.Popen([sys.executable, "-c", SUBSCRIBER, f"tcp://127.0.0.1:{port}",
                                    str(keys)], stdout=subprocess.PIPE, text=True)
            assert sub.stdout.readline().strip() == "ready"
            if stuck:
                idle = subprocess.Popen([sys.executable, "-c", STUCK, f"tcp://127.0.0.1:{port}",
                                         str(stuck)], stdout=subprocess.PIPE, text=True)
                assert idle.stdout.readline().strip() == "ready"
            time.sleep(0.3)  # ZMQ's slow joiner
        s = kvpool.KVPoolStore()
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.master_address) == 0
        names = [f"bench/{i:08d}" for i in range(keys)]
        value = b"v" * 64
        start = time.perf_counter()
        for i in range(0, keys, 128):
            batch = names[i:i + 128]
            assert s.put_batch(batch, [value] * len(batch)) == 0, kvpool.last_error()
        rate = keys / (time.perf_counter() - start)
        s.close()
        received = int(sub.communicate(timeout=180)[0].strip()) if events else 0
        return rate, received
    finally:
        for p in (sub, idle):
            if p is not None and p.poll() is None:
                p.kill()
        pool.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=40000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stuck", type=int, default=0,
                    help="with events on, this many more subscribers that never read")
    a = ap.parse_args()
    off, on = [], []
    for r in range(a.rounds):
        off.append(run(a.keys, False)[0])
        rate, received = run(a.keys, True, a.stuck)
        on.append(rate)
        print(f"round {r + 1}: off {off[-1]:,.0f} keys/s, on {rate:,.0f} keys/s "
              f"(subscriber got {received} of {a.keys} stored events)", flush=True)
    mo, mn = statistics.median(off), statistics.median(on)
    print(f"median off {mo:,.0f} keys/s, on {mn:,.0f} keys/s: {100 * (mn - mo) / mo:+.1f} %")


if __name__ == "__main__":
    main()
