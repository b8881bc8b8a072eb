"""Plots hit ratio against cache size, one panel per trace, from `HanekeBenchmarks --hit-ratio`'s
JSON lines: LRU, the adaptive policy as the real MemoryStore runs it, and Bélády's optimal.

    plot_hit_ratio.py RESULTS.jsonl OUT.png [TITLE]

Needs matplotlib (in the benchmarks' peer virtual environment: `.build/peer-venv/bin/pip install
matplotlib`).
"""
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

SERIES = [
    # (label, store, policy, style)
    ("Bélády (optimal)", "simulator", "belady", dict(color="black", linestyle=":", marker="s")),
    ("adaptive (MemoryStore)", None, "adaptive", dict(color="tab:green", marker="o")),
    ("LRU (MemoryStore)", None, "lru", dict(color="tab:red", marker="v")),
]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    results = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
    traces = list(dict.fromkeys(r["trace"] for r in results))
    columns = 3 if len(traces) in (5, 6) else min(5, len(traces))
    rows = math.ceil(len(traces) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.8 * rows), squeeze=False)
    for index, trace in enumerate(traces):
        axis = axes[index // columns][index % columns]
        for label, store, policy, style in SERIES:
            points = sorted(
                (r["size"], 100 * r["hit_ratio"])
                for r in results
                if r["trace"] == trace
                and r["policy"] == policy
                and (r["store"] == store if store else r["store"] != "simulator")
            )
            if points:
                axis.plot([p[0] * 100 for p in points], [p[1] for p in points], label=label, **style)
        axis.set_xscale("log")
        axis.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_title(trace, fontsize=10)
        axis.set_xlabel("cache size, % of distinct keys", fontsize=8)
        axis.set_ylabel("hit ratio, %", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.grid(True, alpha=0.3)
    for index in range(len(traces), rows * columns):
        axes[index // columns][index % columns].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=9)
    if len(sys.argv) > 3:
        figure.suptitle(sys.argv[3], fontsize=11)
    figure.tight_layout(rect=(0, 0.05, 1, 0.97))
    figure.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
