"""Draws bench/results/latest.png from latest.json: for every table that compares times, each
library's time relative to the best peer (1.0 = best peer; below 1.0 = faster than it).

    python chart.py latest.json latest.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

COLORS = {"ExZarr": "#6e2c91", "zarr-python": "#8c8c8c", "zarrs": "#d9822b", "tensorstore": "#2b7bd9"}


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        results = json.load(f)
    tables = [t for w in results["workloads"] for t in w["tables"] if t["compare"] == "ratio"]
    libs = [c for c in COLORS if any(c in t["columns"] for t in tables)]
    heights = [max(1.2, 0.38 * len(t["rows"]) * max(1, len(libs)) / 2 + 0.9) for t in tables] or [1]
    fig, axes = plt.subplots(len(heights), 1, figsize=(9, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, table in zip(axes[:, 0], tables):
        rows = table["rows"]
        bar = 0.8 / max(1, len(libs))
        for i, lib in enumerate(libs):
            ys = [r + i * bar for r in range(len(rows))]
            xs = [row["relative"].get(lib) for row in rows]
            # Bars grow from the best peer's line: to the left is faster than the best peer.
            widths = [(x - 1.0) if x else 0 for x in xs]
            ax.barh(ys, widths, left=1.0, height=bar, color=COLORS[lib], label=lib)
            for y, x in zip(ys, xs):
                if x:
                    ax.text(x, y, " %.2f " % x, va="center", ha="right" if x < 1 else "left", fontsize=6)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_yticks([r + 0.4 - bar / 2 for r in range(len(rows))])
        ax.set_yticklabels([row["label"] for row in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(table["title"], fontsize=9, loc="left")
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        lo, hi = ax.get_xlim()
        lo, hi = min(lo, 0.5) / 1.3, max(hi, 2.0) * 1.3
        ax.set_xlim(lo, hi)
        ax.set_xticks([t for t in (0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50) if lo <= t <= hi])
        ax.tick_params(axis="x", labelsize=8)
    if tables:
        axes[0, 0].legend(fontsize=8, ncol=len(libs), loc="lower right", bbox_to_anchor=(1.0, 1.12))
        axes[-1, 0].set_xlabel("time relative to the best peer (log scale; left of 1 = faster than every peer)", fontsize=8)
    else:
        axes[0, 0].text(0.5, 0.5, "no timed tables in this run", ha="center")
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main()
