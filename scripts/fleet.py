#!/usr/bin/python3
"""kvpool fleet: a pool across hosts on one Linux machine (docs/fleet.md).

Hosts are network namespaces on one Linux bridge, each with its own address (10.213.0.0/24) and
a link capped with tbf in both directions. In them run etcd, masters, nodes and engine processes
(scripts/fleet_worker.py), all with a shared secret (and optionally TLS). Faults: a host's link
taken down (partition), silent one-way routes to a sink (partial and asymmetric partitions),
kill -9 and restarts. Everything a run creates carries its run id (kvpf-<id>-*, kvpf<id>*,
/tmp/kvpf-<id>) and is removed on exit, on Ctrl-C / SIGTERM, and after the tool itself is killed
(a guard process cleans up when its pipe to the tool closes). `fleet.py clean` removes the
leftovers of every run.

  fleet.py smoke                      CI check: 3 hosts, 1 master, 2 nodes, a partition + heal
  fleet.py chaos --seed S --minutes M seeded faults under load, HA masters; a report
  fleet.py scale [--nodes 1,2,4,8,16] aggregate put/get against nodes, JSON results
  fleet.py plot RESULTS.json          plots of scale results (needs python3-matplotlib)
  fleet.py hicache --nodes 8 --engines 4  HiCache workload across hosts vs one host
  fleet.py up --nodes 2               start a fleet and hold it until Ctrl-C (exploration)
  fleet.py clean                      remove every leftover of any run

Root and network namespaces are required; without them it exits 2 saying so in one line.
Stdlib only; run with /usr/bin/python3.
"""
import argparse
import os
import signal
import sys

# The fleet itself and each scenario are modules of scripts/fleetlib/; this file is the command
# line. scripts/fleet_master.py imports this module for the names below (fleet.Fleet, fleet.log...).
from fleetlib.base import (EXIT_NOT_PERMITTED, MASTER_HTTP, MASTER_PORT, PY, ROOT, Interrupted,
                           check_permitted, clean_runs, log)
from fleetlib.cluster import Fleet
from fleetlib.smoke import scenario_smoke, scenario_up
from fleetlib.chaos import scenario_chaos, scenario_stale_write
from fleetlib.scale import scenario_scale
from fleetlib.hicache import scenario_hicache
from fleetlib.plot import cmd_plot

__all__ = ["EXIT_NOT_PERMITTED", "MASTER_HTTP", "MASTER_PORT", "PY", "ROOT", "Fleet",
           "check_permitted", "log", "main"]


def cmd_clean(args):
    removed = clean_runs(None)
    print(f"fleet clean: removed {len(removed)} leftovers" +
          ("".join(f"\n  {x}" for x in removed) if removed else ""))
    return 0


def _on_signal(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["smoke", "chaos", "scale", "plot", "up", "clean", "check",
                                        "stale-write", "hicache"])
    p.add_argument("--rounds", type=int, default=3, help="stale-write: rounds")
    p.add_argument("results", nargs="*",
                   help="plot: the JSON file of a scale run, or those of hicache runs")
    p.add_argument("--build", default=os.path.join(ROOT, "build"),
                   help="build tree with src/tools/kvpool and python/ (default: build/)")
    p.add_argument("--link", default="1gbit", help="per-host link rate (tbf), or none")
    p.add_argument("--node_host_flag", action="store_true",
                   help="start nodes with --host <their address> (default: without, the README way)")
    p.add_argument("--tls", action="store_true", help="TLS on every connection (openssl certs)")
    p.add_argument("--keep_logs", default="", help="copy the run's logs into this directory")
    p.add_argument("--rpc_timeout_ms", type=int, default=2000)
    p.add_argument("--transfer_timeout_ms", type=int, default=None,
                   help="engines' data deadline (default 5000; scale: 30000, the client default)")
    p.add_argument("--page_size", type=int, default=None,
                   help="bytes per page (smoke 256 KiB, chaos 64 KiB, scale 1 MiB)")
    p.add_argument("--batch", type=int, default=None,
                   help="pages per batch call (smoke 32, chaos 8, scale 16)")
    p.add_argument("--pages", type=int, default=120, help="smoke: pages put before the partition")
    p.add_argument("--partition_s", type=float, default=5.0)
    p.add_argument("--read_budget_s", type=float, default=2.0)
    p.add_argument("--top", action="store_true", help="smoke: print kvpool top at the end")
    p.add_argument("--nodes", default=None,
                   help="up: nodes (2); chaos: nodes (4); scale: node counts (1,2,4,8,16)")
    p.add_argument("--segment", default=None,
                   help="each node's --global_segment_size (chaos 1GB, else 512MB)")
    p.add_argument("--disk", default="",
                   help="give every node a disk tier of this size (e.g. 1GB) under the run's "
                        "directory, kept across its restarts (default: DRAM only)")
    p.add_argument("--hold_s", type=float, default=3600)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--minutes", type=float, default=2.0)
    p.add_argument("--engines", type=int, default=None,
                   help="chaos: engines (2); scale: engine hosts per run (default: the node "
                        "count clamped to 2..8)")
    p.add_argument("--out", default="", help="write the JSON report/results (plot: the PNG) here")
    p.add_argument("--masters", type=int, default=3, help="chaos: 1 or 3 (3: with 3 etcd)")
    p.add_argument("--rate", type=float, default=3.0, help="chaos: batches per second per engine")
    p.add_argument("--replicas", type=int, default=2, help="chaos: replicas per put (2)")
    p.add_argument("--settle_s", type=float, default=8.0, help="chaos: pause after each heal")
    p.add_argument("--seconds", type=float, default=20.0, help="scale: seconds per run")
    p.add_argument("--engine_link", default="none", help="scale: engine hosts' link rate")
    args = p.parse_args()

    if args.command == "clean":
        if os.geteuid() != 0:
            print("fleet: clean needs root", file=sys.stderr)
            return EXIT_NOT_PERMITTED
        return cmd_clean(args)
    if args.command == "plot":
        return cmd_plot(args)
    why = check_permitted()
    if why:
        print(f"fleet: network namespaces are not permitted here: {why}", file=sys.stderr)
        return EXIT_NOT_PERMITTED
    if args.command == "check":
        print("fleet: network namespaces work here")
        return 0
    d = {"smoke": (256 << 10, 32), "chaos": (64 << 10, 8), "scale": (1 << 20, 16),
         "stale-write": (1 << 20, 8)}
    page, batch = d.get(args.command, (256 << 10, 32))
    args.page_size = args.page_size or page
    args.segment = args.segment or ("1GB" if args.command == "chaos" else "512MB")
    if args.transfer_timeout_ms is None:
        args.transfer_timeout_ms = 30000 if args.command == "scale" else 5000
    args.batch = args.batch or batch
    if not os.access(os.path.join(args.build, "src", "tools", "kvpool"), os.X_OK):
        print(f"fleet: no kvpool binary in {args.build}/src/tools (build first)", file=sys.stderr)
        return 1
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _on_signal)
    try:
        if args.command == "smoke":
            return scenario_smoke(args)
        if args.command == "up":
            args.nodes = int(args.nodes or 2)
            return scenario_up(args)
        if args.command == "chaos":
            return scenario_chaos(args)
        if args.command == "scale":
            return scenario_scale(args)
        if args.command == "stale-write":
            return scenario_stale_write(args)
        if args.command == "hicache":
            return scenario_hicache(args)
    except Interrupted as e:
        print(f"fleet: interrupted by {e}; everything of this run removed", file=sys.stderr)
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
