"""The modules of scripts/fleet.py (docs/fleet.md): the fleet (base: constants, commands and
network-namespace plumbing; cluster: Fleet, its hosts, processes and engines; results: JSON,
logs and the analysis of worker logs) and its scenarios (smoke and up, chaos and stale-write,
scale, hicache, plot). Stdlib only; run through scripts/fleet.py with /usr/bin/python3."""
