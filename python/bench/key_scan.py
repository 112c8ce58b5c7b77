"""Key scans (issue 15): list_keys three times, then remove_by_regex, over N keys of one client,
while another process puts single keys and records their latency (does a scan hold up the
request path?). Real kvpool processes on 127.0.0.1 (python/tests/conftest.py's Pool).

    PYTHONPATH=build/python KVPOOL_BINARY=build/src/tools/kvpool \
        /usr/bin/python3 python/bench/key_scan.py 200000
"""
import os
import subprocess
import sys
import time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from conftest import Pool
import kvpool

PROBE = r'''
import sys, time, kvpool
s = kvpool.KVPoolStore(); assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", sys.argv[1]) == 0
lat = []; end = time.monotonic() + float(sys.argv[2]); j = 0
while time.monotonic() < end:
    t = time.perf_counter(); s.put(f"probe/{sys.argv[3]}/{j}", b"y"); lat.append(time.perf_counter() - t); j += 1
lat.sort(); q = lambda f: lat[int(f * (len(lat) - 1))] * 1e3
print(f"{sys.argv[3]}: p50 {q(.5):.2f} ms p99 {q(.99):.2f} ms max {lat[-1]*1e3:.2f} ms ({len(lat)} puts)")
'''
N = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
p = Pool()
try:
    p.add_node("1GB")
    s = kvpool.KVPoolStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", p.master_address) == 0
    keys = [f"bench/{i:08d}" for i in range(N)]
    for i in range(0, N, 1000):
        assert s.batch_put_from_buffers(keys[i:i+1000], [b"x"] * 1000) == [0] * 1000
    env = dict(os.environ)
    idle = subprocess.run([sys.executable, "-c", PROBE, p.master_address, "2", "idle"], env=env,
                          capture_output=True, text=True)
    print(idle.stdout.strip(), idle.stderr[-300:])
    pr = subprocess.Popen([sys.executable, "-c", PROBE, p.master_address, "4", "during-scans"],
                          env=env, stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    for _ in range(3):
        t = time.perf_counter(); got = s.list_keys("^bench/"); tl = time.perf_counter() - t
        print(f"list_keys {len(got)} keys in {tl:.3f}s")
    t = time.perf_counter(); n = s.remove_by_regex("^bench/"); tr = time.perf_counter() - t
    print(f"remove_by_regex {n} keys in {tr:.3f}s")
    print(pr.communicate()[0].strip())
    s.close()
finally:
    p.stop()
