"""`fleet.py plot`: plots of scale and hicache results (python3-matplotlib)."""
import json
import os
import sys


def cmd_plot(args):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("fleet plot: needs python3-matplotlib (apt-get install python3-matplotlib)",
              file=sys.stderr)
        return 1
    if not args.results:
        print("fleet plot: pass the JSON file of a scale run (or hicache runs)", file=sys.stderr)
        return 2
    loaded = []
    for path in args.results:
        with open(path) as fh:
            loaded.append(json.load(fh))
    if "per_host" in loaded[0]:
        return plot_hicache(plt, loaded, args.out or os.path.splitext(args.results[0])[0] + ".png")
    if "lookups_per_s" in loaded[0]:
        return plot_master(plt, loaded, args.out or os.path.splitext(args.results[0])[0] + ".png")
    res = loaded[0]
    runs = res["runs"]
    n = [r["nodes"] for r in runs]
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for ph, mark in (("put", "o-"), ("get", "s-")):
        ax[0].plot(n, [r[f"{ph}_GBps"] for r in runs], mark, label=f"{ph}")
        one = runs[0][f"{ph}_GBps"] / runs[0]["nodes"]
        ax[0].plot(n, [one * x for x in n], ":", label=f"{ph}: nodes x one node")
        ax[1].plot(n, [r.get(f"{ph}_node_cpu_s_per_GB") for r in runs], mark, label=f"{ph}")
    ax[0].set_xlabel("nodes")
    ax[0].set_ylabel("aggregate GB/s")
    ax[0].set_xscale("log", base=2)
    ax[0].set_title(f"links {res['link']} per node host")
    ax[0].legend()
    ax[1].set_xlabel("nodes")
    ax[1].set_ylabel("node CPU-seconds per GB")
    ax[1].set_xscale("log", base=2)
    ax[1].legend()
    fig.tight_layout()
    out = args.out or os.path.splitext(args.results[0])[0] + ".png"
    fig.savefig(out, dpi=100)
    print(f"fleet plot: {out}")
    return 0


def plot_master(plt, runs, out):
    """scripts/fleet_master.py runs: exists latency and lookups/s, and the master's memory,
    per (objects, engine processes), in the order given."""
    labels = [f"{r['objects'] / 1e6:g} M obj.\n{r['engines']} eng. / {r['hosts']} h."
              for r in runs]
    xs = list(range(len(runs)))
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(xs, [r["exists_p50_ms"] for r in runs], "o-", label="exists(128) p50")
    ax[0].plot(xs, [r["exists_p99_ms"] for r in runs], "s-", label="exists(128) p99")
    ax[0].set_yscale("log")
    ax[0].set_ylabel("ms per call")
    ax[0].set_xticks(xs)
    ax[0].set_xticklabels(labels, fontsize=8)
    ax[0].legend(loc="upper left")
    tw = ax[0].twinx()
    tw.bar(xs, [r["lookups_per_s"] / 1e6 for r in runs], alpha=0.25, color="grey")
    tw.set_ylabel("million lookups/s (bars)")
    ax[1].bar(xs, [r["master_rss_bytes_filled"] / 1e9 for r in runs], color="#4a7")
    for x, r in zip(xs, runs):
        ax[1].text(x, r["master_rss_bytes_filled"] / 1e9,
                   f"{r['master_cores_during_exists']:.2f} cores", ha="center", va="bottom")
    ax[1].set_ylabel("master RSS after the fill, GB")
    ax[1].set_xticks(xs)
    ax[1].set_xticklabels(labels, fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"fleet plot: {out}")
    return 0


def plot_hicache(plt, runs, out):
    """Turns/s of `hicache` runs: the single-host figure, then the fleet per link rate
    (medians over the runs given), the L3 hit rate written on each bar."""
    def median(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
    r0 = runs[0]
    bars = [(f"1 host, loopback\n({2 * r0['engine_hosts']} engines, {r0['nodes']} nodes)",
             median([r["single_host_turns_per_s"] for r in runs]),
             median([r["single_host"]["l3"][0] for r in runs]))]
    for link in sorted({r["link"] for r in runs}, key=lambda x: (x != "none", x)):
        group = [r for r in runs if r["link"] == link]
        bars.append((f"{r0['engine_hosts']} engine hosts + {r0['nodes']} node hosts\nlinks {link}",
                     median([r["turns_per_s"] for r in group]),
                     median([r["l3_hit_rate_pct"] for r in group])))
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = range(len(bars))
    ax.bar(xs, [b[1] for b in bars], color=["#888"] + ["#4a7"] * (len(bars) - 1))
    for x, (_, v, l3) in zip(xs, bars):
        ax.text(x, v, f"{v:.0f} turns/s\nL3 hits {l3:.1f}%", ha="center", va="bottom")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([b[0] for b in bars])
    ax.set_ylabel("turns/s (median of runs)")
    ax.set_ylim(0, max(b[1] for b in bars) * 1.3)
    ax.set_title(f"HiCache workload, {len(runs)} runs, {r0['seconds']:.0f} s each")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    print(f"fleet plot: {out}")
    return 0
