#!/usr/bin/env bash
# The figures only a machine with more cores gives (issue 29: remote 256 KiB pages from 8
# client threads at batch 4, 32 and 128; 128 x 1 MiB; the HiCache workload), in one bounded run
# of about 4 minutes, from a kit made by scripts/device-kit.sh. Each run starts its own private
# pool with default flags (`kvpool-bench bench` without --master), measures this machine's
# memcpy and TCP limits beside it, and writes its rows as text and JSON.
# Usage: scripts/device-figures.sh [KIT_DIR (device-kit)] [OUT_DIR ($OUT, else device-out)]
# (relative paths: from where it is called; the defaults are in the repository's root).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Absolute: the pool's processes load the kit's libraries wherever they run.
kit=$(realpath -m "${1:-${root}/device-kit}")
out=$(realpath -m "${2:-${OUT:-${root}/device-out}}")
mkdir -p "${out}"
export LD_LIBRARY_PATH="${kit}/lib"
bench="${kit}/bin/kvpool-bench"
{
  date -u
  echo "cores: $(nproc)"
  lscpu | grep -E "^(Model name|Thread|Socket|NUMA node\(s\))"
  free -g | head -2
  uname -r
} >"${out}/machine.txt" 2>&1
cat "${out}/machine.txt"
rc=0
run() {  # NAME SECONDS BENCH_FLAGS...
  local name=$1 limit=$2
  shift 2
  timeout -k 5 "${limit}" "${bench}" bench --no_progress --peers none \
    --json "${out}/${name}.json" "$@" >"${out}/${name}.txt" 2>&1
  local st=$?
  echo "=== ${name} (exit ${st}) ==="
  cat "${out}/${name}.txt"  # the limits, the rows and any error, as the bench printed them
  [[ ${st} -eq 0 ]] || rc=1
}
run remote-256k 120 --mode remote --workload put,get --page_size 256KB --batch 4,32,128 \
  --threads 8 --duration_s 3
run remote-1m 75 --mode remote --workload put,get --page_size 1MB --batch 128 --duration_s 3
run hicache 75 --workload hicache --duration_s 20
exit "${rc}"
