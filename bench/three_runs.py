"""Combines several `make bench` runs into one table: ExZarr's ratio to the best peer per row.

    python bench/three_runs.py OUT.md RUN_DIR [RUN_DIR ...]

Each RUN_DIR holds a `latest.json` written by `make bench BENCH_ARGS="--out RUN_DIR"`, in the
order they ran. Only rows that compare ExZarr with peers are kept (tables whose `compare` is
"ratio" and that have a best peer, outside workloads 11 to 14, which compare ExZarr with
itself or with the machine). A ratio is the one `make bench` printed (rate rows already
inverted: below 1.00, ExZarr is ahead). Prints how many rows have a median above 1.00.
"""

import json
import statistics
import sys

# Workloads that compare ExZarr with itself or with the machine, not with peers.
SELF_COMPARED = range(11, 15)


def fmt(x):
    """Three significant figures, as the bench tables print them."""
    return "%.3g" % x if x < 1000 else "%.0f" % x


def rows_of(run_dir):
    """{(workload id, table title, row label): (ExZarr value, best peer value, ratio)}."""
    with open("%s/latest.json" % run_dir) as f:
        doc = json.load(f)
    rows = {}
    for w in doc["workloads"]:
        if w.get("status") != "ok" or int(w["id"]) in SELF_COMPARED:
            continue
        for t in w["tables"]:
            if t.get("compare") != "ratio":
                continue
            for r in t["rows"]:
                ratio = r.get("relative", {}).get("ExZarr")
                best = r.get("best_peer")
                value = r.get("values", {}).get("ExZarr")
                if ratio is None or best is None or value is None:
                    continue
                rows[(w["id"], t["title"], r["label"])] = (value, best, ratio)
    return rows, doc["meta"]


def main(out, run_dirs):
    runs = [rows_of(d) for d in run_dirs]
    keys = [k for k in runs[0][0] if all(k in rows for rows, _ in runs)]
    lines = [
        "# %d consecutive full `make bench` runs (%s)" % (len(runs), runs[0][1]["date"][:10]),
        "",
        "ExZarr's time over the best peer's per row (rate rows inverted), for each run, with the",
        "median and the spread of the ratio. Peer rows only (workloads 11 to 14 compare ExZarr",
        "with itself or with the machine, see `latest.md`). Machine: %s." % runs[0][1]["machine"],
        "Load average (1 min) of each run:",
        "",
    ]
    lines += ["- run %d: %s" % (i + 1, meta["load"]) for i, (_, meta) in enumerate(runs)]
    lines += [
        "",
        "| workload | table | row | ExZarr (runs) | best peer (runs) | ratio median | ratio min-max |",
        "|---|---|---|---|---|---:|---|",
    ]
    behind = 0
    for key in keys:
        cells = [rows[key] for rows, _ in runs]
        ratios = [c[2] for c in cells]
        median = statistics.median(ratios)
        behind += median > 1.0
        lines.append(
            "| %s | %s | %s | %s | %s | **%.2f** | %.2f-%.2f |"
            % (
                key[0],
                key[1],
                key[2],
                " / ".join(fmt(c[0]) for c in cells),
                " / ".join(fmt(c[1]) for c in cells),
                median,
                min(ratios),
                max(ratios),
            )
        )
    lines += ["", "%d of %d rows have a median ratio above 1.00." % (behind, len(keys))]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(lines[-1])


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
