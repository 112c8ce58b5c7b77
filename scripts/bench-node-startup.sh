#!/bin/bash
# What a node's start-up costs with its segment faulted in before it mounts (--prefault, the
# default): a master on 127.0.0.1, then one node of each size in turn, each stopped once it
# logged its "faulted in before serving" line, which is printed.
# Usage: scripts/bench-node-startup.sh [SIZE...]   (default: 1GB 4GB 8GB; KVPOOL_BINARY overrides
# build/src/tools/kvpool)
set -euo pipefail
B=${KVPOOL_BINARY:-$(dirname "$0")/../build/src/tools/kvpool}
LOG=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$LOG"' EXIT
MPORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
NPORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$B" master --rpc_port "$MPORT" --rpc_host 127.0.0.1 --metrics_port 0 --log_level warn >"$LOG/master" 2>&1 &
sleep 0.5
for size in "${@:-1GB 4GB 8GB}"; do
  for s in $size; do
    "$B" node --host 127.0.0.1 --port "$NPORT" --master_server_address "127.0.0.1:$MPORT" \
      --global_segment_size "$s" --log_level info >"$LOG/node" 2>&1 &
    node=$!
    for _ in $(seq 1 3000); do grep -q "faulted in before" "$LOG/node" && break; sleep 0.02; done
    grep -o "segment of .*" "$LOG/node" || { echo "node of $s: no prefault line"; cat "$LOG/node"; }
    kill "$node"
    wait "$node" 2>/dev/null || true
  done
done
