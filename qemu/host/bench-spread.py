#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""The spread of the tiering benchmark over several boots.

    bench-spread.py OUTDIR BOOTDIR...

Each BOOTDIR is the output of one boot of `make bench` (its summary.tsv,
written by qemu/host/bench-report.py); `make bench BENCH_BOOTS=N` makes N
of them, bench-results/boot-1 to boot-N.  The figures of one boot vary
from the next by as much as some of the effects the benchmark is run to
see (docs/benchmarks.md), so a comparison made on one boot can be noise.
OUTDIR receives:

  spread.tsv  one row per system, workload and figure of summary.tsv:
              system workload figure boots median min max
              where boots is how many boots gave the figure a value
              ("-" is no value; "inf", never reached, is a value, the
              largest); median, min and max are "-" if none did
  spread.md   the same for the figures that judge placement and its cost
              (FIGURES below), a row per system and workload, each cell
              "median (min-max)", for docs/benchmarks.md

and spread.md goes to stdout as well.  A boot whose summary lacks a row
that another has is an error: the boots must run the same systems and
workloads.
"""

import csv
import math
import os
import statistics
import sys

# The figures of spread.md, as summary.tsv names them, and their titles.
FIGURES = [
    ("star_pct", "star_pct"),
    ("user_star_pct", "user star_pct"),
    ("throughput_ops_s", "ops/s"),
    ("time_to_90pct_s", "time to 90% (s)"),
    ("final_hot_in_fast_pct", "hot set up (%)"),
    ("pages_migrated", "pages migrated"),
    ("kthread_cpu_pct", "tiering cpu (%)"),
]


class SpreadError(Exception):
    pass


def value(text):
    """A figure of summary.tsv as a float, or None for "-"."""
    text = text.strip()
    if text in ("", "-"):
        return None
    if text == "inf":
        return math.inf
    try:
        return float(text)
    except ValueError:
        raise SpreadError(f"not a figure: {text!r}") from None


def read_summary(path):
    """The rows of a summary.tsv: ([(system, workload)], {key: {figure: value}})."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f, delimiter="\t"))
    except OSError as e:
        raise SpreadError(f"{path}: {e.strerror}") from None
    if not rows:
        raise SpreadError(f"{path}: no row")
    order, figures = [], {}
    for row in rows:
        key = (row.get("system"), row.get("workload"))
        if None in key:
            raise SpreadError(f"{path}: no system or workload column")
        if key in figures:
            raise SpreadError(f"{path}: {key[0]} on {key[1]} twice")
        order.append(key)
        figures[key] = {name: value(text) for name, text in row.items()
                        if name not in ("system", "workload")}
    return order, figures


def fmt(v):
    """A figure of spread.tsv: as precise as summary.tsv gave it."""
    if v is None:
        return "-"
    if math.isinf(v):
        return "inf"
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.0f}"


def fmt_md(v):
    """A figure of spread.md: from 100 up as a whole number, under it to 0.01."""
    if v is None or math.isinf(v):
        return fmt(v)
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.2f}".rstrip("0").rstrip(".")


def spread(boots):
    """[(system, workload, figure, n, median, min, max)] over @boots."""
    order, first = boots[0]
    names = list(next(iter(first.values())).keys())
    for i, (o, figs) in enumerate(boots[1:], 2):
        if set(o) != set(order):
            missing = sorted(set(order) ^ set(o))
            raise SpreadError(f"boot {i} ran other systems or workloads than boot 1: "
                              + ", ".join(f"{s} on {w}" for s, w in missing))
    out = []
    for key in order:
        for name in names:
            vals = [figs[key].get(name) for _, figs in boots]
            vals = sorted(v for v in vals if v is not None)
            if vals:
                out.append((*key, name, len(vals), statistics.median(vals),
                            vals[0], vals[-1]))
            else:
                out.append((*key, name, 0, None, None, None))
    return out


def markdown(rows, nboots):
    by = {}
    keys = []
    for system, workload, name, n, med, lo, hi in rows:
        if (system, workload) not in by:
            by[(system, workload)] = {}
            keys.append((system, workload))
        cell = "-" if not n else (fmt_md(med) if lo == hi else
                                  f"{fmt_md(med)} ({fmt_md(lo)}-{fmt_md(hi)})")
        by[(system, workload)][name] = cell
    head = ["system", "workload"] + [title for _, title in FIGURES]
    lines = [f"{nboots} boots: median (min-max)", "",
             "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    for key in keys:
        cells = [by[key].get(name, "-") for name, _ in FIGURES]
        lines.append("| " + " | ".join([*key, *cells]) + " |")
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) < 3:
        print("usage: bench-spread.py OUTDIR BOOTDIR...", file=sys.stderr)
        return 2
    outdir, bootdirs = argv[1], argv[2:]
    try:
        boots = [read_summary(os.path.join(d, "summary.tsv")) for d in bootdirs]
        rows = spread(boots)
    except SpreadError as e:
        print(f"bench-spread: {e}", file=sys.stderr)
        return 1
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "spread.tsv"), "w") as f:
        f.write("system\tworkload\tfigure\tboots\tmedian\tmin\tmax\n")
        for system, workload, name, n, med, lo, hi in rows:
            f.write(f"{system}\t{workload}\t{name}\t{n}\t{fmt(med)}\t{fmt(lo)}\t{fmt(hi)}\n")
    md = markdown(rows, len(boots))
    with open(os.path.join(outdir, "spread.md"), "w") as f:
        f.write(md)
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
