#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the raw output of the tiering benchmark into tables and plots.

    bench-report.py RAW OUTDIR [SLOWTIER]

RAW is what qemu/guest/bench-compare.sh wrote in the guest: files between
"@@ BEGIN name" and "@@ END name" lines (runs.tsv, and series/W-S.csv for
each workload W and system S), ending with "@@ DONE".  SLOWTIER is the
output file of the emulated slow tier (qemu/plugin/slowtier.c), whose
"# window" lines count each run's memory accesses per node.  OUTDIR
receives those files, and:

  summary.tsv  one row per system and workload, the hot-set workload first:
               system workload time_to_90pct_s final_hot_in_fast_pct
               fast_hit_ratio_pct pages_migrated kthread_cpu_pct
               throughput_ops_s star_pct speedup_vs_none attainable_pct
               user_star_pct
  detail.tsv   what the summary derives from, and the first phase of the
               phase-change workload
  plots/W.png  the hot set's share on the fast node over time, one line per
               system (gnuplot), and plots/W.gp, the script that drew it
               (not for redis, whose hot set is not read back)
  plots/W-throughput.png  the workload's operations per second over time

Definitions (docs/benchmarks.md says more):
  time_to_90pct_s     seconds until 90% of the hot set was on the fast node
                      (for phase: of the moved hot set, from the move); inf
                      if never
  fast_hit_ratio_pct  the access-weighted share of accesses to pages on the
                      fast node, averaged over the run's seconds
  pages_migrated      pgmigrate_success over the run: every page moved, both
                      ways
  kthread_cpu_pct     cpu of the tiering threads (ksamplingd, kmigraterd,
                      kdamond.*, kswapd*) plus the workload's system time
                      beyond what it had with no tiering (NUMA balancing's
                      scanning and hint faults, htmm's hint faults), as a
                      share of one cpu over the run
  throughput_ops_s    the workload's operations per second over the run
                      (redis: the GETs Redis served)
  star_pct            the slow-tier access ratio: of the run's memory
                      accesses (misses of the plugin's cache model), the
                      share served by node 1, as the plugin counted them
                      over the run's window; "-" without the plugin
  speedup_vs_none     throughput over that of no tiering (none)
  attainable_pct      the share of the attainable speedup reached:
                      (ops - ops_none) / (ops_allfast - ops_none), where
                      allfast is no tiering with the slow tier's added
                      latency off
  user_star_pct       star_pct of the misses at user addresses only: the
                      programs' own accesses, without the kernel's (the
                      tiering threads', the page tables', the migrations'
                      copies), which dilute star_pct the more cpu a
                      system's kernel threads take on node 0
Figures that a workload does not give (placement for redis) are "-".
"""

import csv
import math
import os
import shutil
import subprocess
import sys

WORKLOAD_ORDER = ["hotset", "zipf", "phase", "redis"]
SYSTEM_ORDER = ["none", "allfast", "numa-tiering", "numa-tiering-tuned", "damon", "damon-tuned",
                "htmm", "htmm-tuned"]
SUMMARY_HEADER = ["system", "workload", "time_to_90pct_s", "final_hot_in_fast_pct",
                  "fast_hit_ratio_pct", "pages_migrated", "kthread_cpu_pct",
                  "throughput_ops_s", "star_pct", "speedup_vs_none", "attainable_pct",
                  "user_star_pct"]


class BenchError(Exception):
    pass


def split_files(text):
    """{name: content} of the files in the raw stream; fails if it is cut."""
    files, name, lines = {}, None, []
    done = False
    for line in text.splitlines():
        line = line.rstrip("\r")
        if line.startswith("@@ BEGIN "):
            name, lines = line[len("@@ BEGIN "):].strip(), []
        elif line.startswith("@@ END ") and name:
            files[name] = "\n".join(lines) + "\n"
            name = None
        elif line.startswith("@@ DONE"):
            done = True
        elif name is not None:
            lines.append(line)
    if not done:
        raise BenchError("the guest's output stops before its end (@@ DONE)")
    if "runs.tsv" not in files:
        raise BenchError("no runs.tsv in the guest's output")
    return files


def order(workload, system):
    def idx(lst, x):
        return lst.index(x) if x in lst else len(lst)
    return (idx(WORKLOAD_ORDER, workload), workload, idx(SYSTEM_ORDER, system), system)


def first_at(rows, start, pred):
    """Seconds from @start to the first row at or after it where pred holds."""
    for r in rows:
        if r["t_s"] >= start and pred(r):
            return r["t_s"] - start
    return math.inf


def read_windows(path):
    """{window id: {key: number}} from the plugin's "# window" lines."""
    windows = {}
    with open(path, errors="replace") as f:
        for line in f:
            if not line.startswith("# window "):
                continue
            fields = dict(kv.split("=", 1) for kv in line[len("# window "):].split()
                          if "=" in kv)
            try:
                windows[int(fields.pop("id"))] = {k: float(v) for k, v in fields.items()}
            except (KeyError, ValueError):
                raise BenchError(f"bad window line in {path}: {line.strip()!r}")
    return windows


def star_pct(win, prefix):
    """The share of a window's memory misses, those named @prefix, that
    node 1 served; None without the plugin's figures."""
    if not win:
        return None
    fast, slow = win.get(prefix + "fast", 0), win.get(prefix + "slow", 0)
    return 100.0 * slow / (fast + slow) if fast + slow > 0 else None


def analyse(run, rows, none_sys_ms):
    """The summary and detail figures of one run."""
    if len(rows) < 2:
        raise BenchError(f"{run['workload']} under {run['system']}: "
                         f"{len(rows)} rows of figures (status {run['status']})")
    first, last = rows[0], rows[-1]
    secs = last["t_s"] - first["t_s"]
    hot90 = lambda r: r["hot_fast_pct"] >= 90  # noqa: E731
    placed = last["hot_fast_pct"] is not None
    if not placed:
        t90 = t90_first = None
    elif run["workload"] == "phase":
        moved = min((r["t_s"] for r in rows if r["phase"] == 2), default=None)
        # The move happens right after the last row of the first phase.
        switch = max(r["t_s"] for r in rows if r["phase"] == 1)
        t90 = first_at(rows, switch, lambda r: r["phase"] == 2 and hot90(r)) \
            if moved is not None else math.inf
        t90_first = first_at([r for r in rows if r["phase"] == 1], 0, hot90)
    else:
        t90 = first_at(rows, 0, hot90)
        t90_first = t90
    sys_ms = last["task_sys_ms"] - first["task_sys_ms"]
    kth_ms = last["kthread_ms"] - first["kthread_ms"]
    extra_sys = max(0.0, sys_ms - none_sys_ms) if none_sys_ms is not None else 0.0
    measured = rows[1:]
    return {
        "time_to_90pct_s": t90,
        "first_phase_time_to_90pct_s": t90_first,
        "final_hot_in_fast_pct": last["hot_fast_pct"],
        "final_cold_in_fast_pct": last["cold_fast_pct"],
        "fast_hit_ratio_pct": (sum(r["hit_pct"] for r in measured) / len(measured)
                               if placed else None),
        "pages_migrated": run["pgmigrate_success"],
        "kthread_ms": kth_ms,
        "task_sys_ms": sys_ms,
        "extra_task_sys_ms": extra_sys,
        "kthread_cpu_pct": 100.0 * (kth_ms + extra_sys) / (secs * 1000.0),
        "throughput_ops_s": last["ops"] / secs,
    }


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:.{digits}f}"
    return str(v)


def read_series(text):
    rows = []
    for r in csv.DictReader(text.splitlines()):
        # An empty field: a figure the workload does not give.
        rows.append({k: float(v) if v != "" else None for k, v in r.items()})
    return rows


def plot(outdir, workload, systems, series_dir, what="placement"):
    """plots/W.png: the hot set's share on the fast node, per system; or
    with @what "throughput", plots/W-throughput.png: operations per second."""
    plots = os.path.join(outdir, "plots")
    os.makedirs(plots, exist_ok=True)
    name = workload if what == "placement" else f"{workload}-throughput"
    gp = os.path.join(plots, f"{name}.gp")
    png = os.path.join(plots, f"{name}.png")
    title = {"hotset": "hot set", "zipf": "Zipf (the most probable pages)",
             "phase": "phase change (the hot set moves halfway)",
             "redis": "Redis GETs, 9 in 10 to a tenth of the keys"}.get(workload, workload)
    lines = [
        "set terminal pngcairo size 900,540 font 'sans,10'",
        f"set output '{png}'",
        "set xlabel 'seconds'",
        "set key bottom right",
        "set grid",
        "set datafile separator ','",
    ]
    if what == "placement":
        lines += [f"set title 'Share of the hot set on the fast node: {title}'",
                  "set ylabel 'hot set on node 0 (%)'", "set yrange [0:105]"]
        col = 4
    else:
        lines += [f"set title 'Throughput: {title}'", "set ylabel 'operations per second'",
                  "set yrange [0:*]", "set offsets 0, 0, graph 0.08, 0"]
        col = 3
    # The first row is the start, before any operation.
    parts = [f"'{os.path.join(series_dir, f'{workload}-{s}.csv')}' every ::2 using 1:{col} "
             f"with linespoints pointsize 0.5 title '{s}'" for s in systems]
    lines.append("plot " + ", \\\n     ".join(parts))
    with open(gp, "w") as f:
        f.write("\n".join(lines) + "\n")
    if not shutil.which("gnuplot"):
        raise BenchError("gnuplot is missing: run 'make deps' (installs gnuplot-nox)")
    subprocess.run(["gnuplot", gp], check=True)
    return png


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    raw, outdir = sys.argv[1], sys.argv[2]
    windows = read_windows(sys.argv[3]) if len(sys.argv) == 4 else {}
    with open(raw, errors="replace") as f:
        files = split_files(f.read())

    os.makedirs(os.path.join(outdir, "series"), exist_ok=True)
    for name, content in files.items():
        if name != "runs.tsv" and not name.startswith("series/"):
            continue
        if ".." in name.split("/"):
            raise BenchError(f"bad file name {name!r} in the guest's output")
        with open(os.path.join(outdir, name), "w") as f:
            f.write(content)

    runs = []
    for r in csv.DictReader(files["runs.tsv"].splitlines(), delimiter="\t"):
        runs.append({k: (v if k in ("workload", "system") else int(v)) for k, v in r.items()})
    if not runs:
        raise BenchError("runs.tsv has no run")
    runs.sort(key=lambda r: order(r["workload"], r["system"]))

    series = {}
    for r in runs:
        name = f"series/{r['workload']}-{r['system']}.csv"
        if name not in files:
            raise BenchError(f"no {name} in the guest's output")
        series[(r["workload"], r["system"])] = read_series(files[name])

    summary, detail = [], []
    throughput = {}
    for r in runs:
        rows = series[(r["workload"], r["system"])]
        if len(rows) >= 2 and rows[-1]["t_s"] > rows[0]["t_s"]:
            throughput[(r["workload"], r["system"])] = \
                rows[-1]["ops"] / (rows[-1]["t_s"] - rows[0]["t_s"])
    for r in runs:
        rows = series[(r["workload"], r["system"])]
        none = series.get((r["workload"], "none"))
        none_ms = none[-1]["task_sys_ms"] - none[0]["task_sys_ms"] if none else None
        if r["status"] != 0 and len(rows) < 2:
            # The system could not be set up, or the workload failed early.
            summary.append([r["system"], r["workload"]] +
                           ["failed"] * (len(SUMMARY_HEADER) - 2))
            detail.append({"system": r["system"], "workload": r["workload"],
                           "status": r["status"]})
            continue
        a = analyse(r, rows, none_ms)
        win = windows.get(r.get("window", -1))
        star = star_pct(win, "miss_")
        user_star = star_pct(win, "user_miss_")
        ops = a["throughput_ops_s"]
        ops_none = throughput.get((r["workload"], "none"))
        ops_fast = throughput.get((r["workload"], "allfast"))
        speedup = ops / ops_none if ops_none else None
        attain = None
        if ops_none is not None and ops_fast is not None and ops_fast > ops_none:
            attain = 100.0 * (ops - ops_none) / (ops_fast - ops_none)
        summary.append([r["system"], r["workload"], fmt(a["time_to_90pct_s"], 0),
                        fmt(a["final_hot_in_fast_pct"]), fmt(a["fast_hit_ratio_pct"]),
                        str(a["pages_migrated"]), fmt(a["kthread_cpu_pct"], 2),
                        fmt(ops, 0), fmt(star), fmt(speedup, 2), fmt(attain),
                        fmt(user_star)])
        detail.append({
            "system": r["system"], "workload": r["workload"], "status": r["status"],
            "seconds": r["seconds"], "fast_free_mb_at_start": r["fast_free_mb"],
            "first_phase_time_to_90pct_s": fmt(a["first_phase_time_to_90pct_s"], 0),
            "final_cold_in_fast_pct": fmt(a["final_cold_in_fast_pct"]),
            "kthread_ms": fmt(a["kthread_ms"], 0), "task_sys_ms": fmt(a["task_sys_ms"], 0),
            "extra_task_sys_ms": fmt(a["extra_task_sys_ms"], 0),
            "pgpromote_success": r["pgpromote_success"],
            "pgdemote_kswapd": r["pgdemote_kswapd"], "pgdemote_direct": r["pgdemote_direct"],
            "htmm_promoted": r["htmm_promoted"], "htmm_demoted": r["htmm_demoted"],
            "damon_applied_mb": fmt(r["damon_applied_bytes"] / 2**20, 0),
            "window": r.get("window", ""),
            "window_s": fmt(win.get("seconds") if win else None),
            "accesses": fmt(int(win["accesses"]) if win and "accesses" in win else None),
            "miss_fast": fmt(int(win["miss_fast"]) if win and "miss_fast" in win else None),
            "miss_slow": fmt(int(win["miss_slow"]) if win and "miss_slow" in win else None),
            "user_miss_fast": fmt(int(win["user_miss_fast"])
                                  if win and "user_miss_fast" in win else None),
            "user_miss_slow": fmt(int(win["user_miss_slow"])
                                  if win and "user_miss_slow" in win else None),
            "added_delay_s": fmt(win.get("delay_s") if win else None, 2),
            "latency_ns": fmt(int(win["latency_ns"]) if win and "latency_ns" in win else None),
        })

    with open(os.path.join(outdir, "summary.tsv"), "w") as f:
        f.write("\t".join(SUMMARY_HEADER) + "\n")
        for row in summary:
            f.write("\t".join(row) + "\n")
    with open(os.path.join(outdir, "detail.tsv"), "w") as f:
        fields = max((list(d) for d in detail), key=len)
        w = csv.DictWriter(f, fieldnames=fields, delimiter="\t", lineterminator="\n",
                           restval="")
        w.writeheader()
        w.writerows(detail)

    pngs = []
    series_dir = os.path.join(os.path.abspath(outdir), "series")
    for wl in sorted({r["workload"] for r in runs}, key=lambda w: order(w, "")):
        systems = [r["system"] for r in runs if r["workload"] == wl
                   and len(series[(wl, r["system"])]) > 1]
        if not systems:
            continue
        if any(series[(wl, s)][-1]["hot_fast_pct"] is not None for s in systems):
            pngs.append(plot(outdir, wl, systems, series_dir))
        pngs.append(plot(outdir, wl, systems, series_dir, "throughput"))

    widths = [max(len(SUMMARY_HEADER[i]), *(len(row[i]) for row in summary))
              for i in range(len(SUMMARY_HEADER))]
    for row in [SUMMARY_HEADER] + summary:
        print("  ".join(c.ljust(widths[i]) if i < 2 else c.rjust(widths[i])
                        for i, c in enumerate(row)))
    failed = [d for d in detail if d["status"] != 0]
    print(f"\nwritten: {outdir}/summary.tsv, detail.tsv, series/*.csv, "
          + ", ".join(os.path.relpath(p, outdir) for p in pngs))
    if failed:
        print("runs that failed: " + ", ".join(f"{d['workload']}/{d['system']}" for d in failed))
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, OSError, ValueError, KeyError, subprocess.CalledProcessError) as e:
        print(f"bench-report: error: {e}", file=sys.stderr)
        sys.exit(1)
