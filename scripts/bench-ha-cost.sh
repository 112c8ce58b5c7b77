#!/usr/bin/env bash
# The cost of master HA on the put/get path as a user meets it (docs/benchmarks.md, issue 12):
# two pools on 127.0.0.1 with default flags, each a master and one node:
#   A: a single master (no HA); `kvpool bench --master 127.0.0.1:PORT`
#   B: a master with --enable_ha in a one-member etcd; node and bench given only etcd://
# then `kvpool bench` against A and B alternately (A,B,A,B,...), RUNS times each, the same work
# per run (--iterations), and prints for every row (workload, page, batch) the median keys/s of
# each and the ratio B/A of the medians, the same for the client's CPU per GB (the bench
# process), and the master process's CPU time per run (/proc/PID/stat, user + system): on a
# loaded machine the CPU figures, which count work rather than wall time, are the steadier ones.
# Usage: scripts/bench-ha-cost.sh [BUILD_DIR] [RUNS] [extra kvpool bench flags...]
set -euo pipefail
BUILD=${1:-build}
RUNS=${2:-3}
shift $(($# >= 2 ? 2 : $#)) || true
KVPOOL=$BUILD/src/tools/kvpool
# Room for a whole put row (puts are removed only at its end: a full pool would measure eviction).
SEGMENT=${SEGMENT:-2GB}
[ -x "$KVPOOL" ] || { echo "no $KVPOOL: build the kvpool target first" >&2; exit 1; }
command -v etcd >/dev/null || { echo "etcd is not installed (scripts/install-deps.sh)" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 200); do
    (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}

WORK=$(mktemp -d /tmp/kvpool-ha-cost-XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

ETCD_PORT=$(free_port)
ETCD_PEER=$(free_port)
etcd --name c --data-dir "$WORK/etcd" --log-level warn \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
  --initial-cluster "c=http://127.0.0.1:$ETCD_PEER" >"$WORK/etcd.log" 2>&1 &
PIDS+=($!)
wait_port "$ETCD_PORT"

SINGLE=$(free_port)
"$KVPOOL" master --rpc_host 127.0.0.1 --rpc_port "$SINGLE" --metrics_port 0 \
  >"$WORK/single.log" 2>&1 &
PIDS+=($!)
PID_A=$!
HA=$(free_port)
"$KVPOOL" master --rpc_host 127.0.0.1 --rpc_port "$HA" --metrics_port 0 --enable_ha true \
  --etcd_endpoints "127.0.0.1:$ETCD_PORT" --cluster_id cost >"$WORK/ha.log" 2>&1 &
PIDS+=($!)
PID_B=$!
wait_port "$SINGLE"
wait_port "$HA"
A="127.0.0.1:$SINGLE"
B="etcd://127.0.0.1:$ETCD_PORT/cost"
"$KVPOOL" node --host 127.0.0.1 --port "$(free_port)" --master_server_address "$A" \
  --global_segment_size "$SEGMENT" >"$WORK/node-a.log" 2>&1 &
PIDS+=($!)
"$KVPOOL" node --host 127.0.0.1 --port "$(free_port)" --master_server_address "$B" \
  --global_segment_size "$SEGMENT" >"$WORK/node-b.log" 2>&1 &
PIDS+=($!)
# Both nodes mounted and the HA master leading (its restore wait over).
for m in "$A" "$B"; do
  for _ in $(seq 100); do
    "$KVPOOL" stat --master "$m" 2>/dev/null | grep -q 'pool: 1 segments' && break
    sleep 0.2
  done
done

BENCH=(bench --mode remote --workload put,get --page_size 4KB --batch 1,32 --iterations 4000
  --working_set 16MB --no_limits --no_progress --peers none "$@")
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
echo "kvpool ${BENCH[*]}; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$RUNS"); do
  for side in A B; do
    master=$A pid=$PID_A
    [ "$side" = B ] && master=$B pid=$PID_B
    before=$(cpu_ticks "$pid")
    "$KVPOOL" "${BENCH[@]}" --master "$master" >"$WORK/run-$side-$i.txt" 2>&1 ||
      { cat "$WORK/run-$side-$i.txt" >&2; exit 1; }
    echo $(($(cpu_ticks "$pid") - before)) >"$WORK/cpu-$side-$i.txt"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$WORK" "$RUNS" "$(getconf CLK_TCK)" <<'EOF'
import statistics, sys
work, runs, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def rows(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) >= 7 and f[0] in ("put", "get") and f[1] == "remote":
            out[(f[0], f[2], f[3])] = (float(f[6]), float(f[11]))  # keys/s, cpu-s/GB
    return out
a = [rows(f"{work}/run-A-{i}.txt") for i in range(1, runs + 1)]
b = [rows(f"{work}/run-B-{i}.txt") for i in range(1, runs + 1)]
print(f"{'workload':<8} {'page':>6} {'batch':>5} {'single keys/s (runs)':>36} "
      f"{'HA keys/s (runs)':>36} {'HA/single':>9} {'client cpu HA/single':>20}")
ratios, cpu_ratios = [], []
for key in a[0]:
    av = [r[key][0] for r in a if key in r]
    bv = [r[key][0] for r in b if key in r]
    ratio = statistics.median(bv) / statistics.median(av)
    cpu = statistics.median([r[key][1] for r in b]) / statistics.median([r[key][1] for r in a])
    ratios.append(ratio)
    cpu_ratios.append(cpu)
    fmt = lambda v: "/".join(f"{x:.0f}" for x in v)
    print(f"{key[0]:<8} {key[1]:>6} {key[2]:>5} {fmt(av):>36} {fmt(bv):>36} {ratio:>9.3f} {cpu:>20.3f}")
print(f"median of the rows' ratios: keys/s {statistics.median(ratios):.3f}, "
      f"client cpu-s/GB {statistics.median(cpu_ratios):.3f}")
ca = [int(open(f"{work}/cpu-A-{i}.txt").read()) * 1000 / hz for i in range(1, runs + 1)]
cb = [int(open(f"{work}/cpu-B-{i}.txt").read()) * 1000 / hz for i in range(1, runs + 1)]
fmt = lambda v: "/".join(f"{x:.0f}" for x in v)
print(f"master CPU ms per run: single {fmt(ca)}, HA {fmt(cb)}; "
      f"HA/single of the medians {statistics.median(cb) / statistics.median(ca):.3f}")
EOF
