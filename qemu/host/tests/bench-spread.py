#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""qemu/host/bench-spread.py, the spread of `make bench` over boots, in TAP.

Each test writes the summary.tsv of a few boots, as bench-report.py
writes it, into a temporary directory, runs the script on them, and reads
back what it wrote.
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SPREAD = os.path.join(HERE, "..", "bench-spread.py")

HEADER = ["system", "workload", "time_to_90pct_s", "final_hot_in_fast_pct",
          "fast_hit_ratio_pct", "pages_migrated", "kthread_cpu_pct",
          "throughput_ops_s", "star_pct", "speedup_vs_none", "attainable_pct"]


def boot(top, n, rows):
    """Write boot @n's summary.tsv under @top: @rows, lists of HEADER's."""
    d = os.path.join(top, f"boot-{n}")
    os.makedirs(d)
    with open(os.path.join(d, "summary.tsv"), "w") as f:
        f.write("\t".join(HEADER) + "\n")
        for r in rows:
            assert len(r) == len(HEADER)
            f.write("\t".join(r) + "\n")
    return d


def run(*args):
    p = subprocess.run([sys.executable, SPREAD, *args], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def read_spread(out):
    """{(system, workload, figure): (boots, median, min, max)} of spread.tsv."""
    with open(os.path.join(out, "spread.tsv")) as f:
        lines = f.read().splitlines()
    assert lines[0] == "system\tworkload\tfigure\tboots\tmedian\tmin\tmax", lines[0]
    got = {}
    for line in lines[1:]:
        s, w, fig, n, med, lo, hi = line.split("\t")
        got[(s, w, fig)] = (int(n), med, lo, hi)
    return got


def row(system, workload, t90, star, ops, migrated="100", speedup="-"):
    return [system, workload, t90, "90.0", "50.0", migrated, "40.0", ops, star,
            speedup, "-"]


def test_median_min_max():
    with tempfile.TemporaryDirectory() as top:
        dirs = [boot(top, 1, [row("htmm", "hotset", "30", "26.9", "978022")]),
                boot(top, 2, [row("htmm", "hotset", "37", "35.8", "722534")]),
                boot(top, 3, [row("htmm", "hotset", "inf", "31.0", "800000")])]
        out = os.path.join(top, "out")
        rc, stdout, err = run(out, *dirs)
        assert rc == 0, err
        got = read_spread(out)
        assert got[("htmm", "hotset", "star_pct")] == (3, "31", "26.9", "35.8"), got
        assert got[("htmm", "hotset", "throughput_ops_s")] == (3, "800000", "722534", "978022")
        # Never reached is the largest time, not a missing one.
        assert got[("htmm", "hotset", "time_to_90pct_s")] == (3, "37", "30", "inf")
        # The same in every boot.
        assert got[("htmm", "hotset", "pages_migrated")] == (3, "100", "100", "100")


def test_no_value_is_not_counted():
    with tempfile.TemporaryDirectory() as top:
        dirs = [boot(top, 1, [row("htmm", "redis", "-", "39.1", "59", speedup="0.73")]),
                boot(top, 2, [row("htmm", "redis", "-", "41.0", "61", speedup="-")])]
        out = os.path.join(top, "out")
        rc, _, err = run(out, *dirs)
        assert rc == 0, err
        got = read_spread(out)
        assert got[("htmm", "redis", "time_to_90pct_s")] == (0, "-", "-", "-"), got
        # As precise as the summary: two decimals of a speed-up.
        assert got[("htmm", "redis", "speedup_vs_none")] == (1, "0.73", "0.73", "0.73"), got
        assert got[("htmm", "redis", "star_pct")] == (2, "40.05", "39.1", "41"), got


def test_markdown_cells():
    with tempfile.TemporaryDirectory() as top:
        dirs = [boot(top, 1, [row("none", "zipf", "inf", "80.0", "300000"),
                              row("htmm", "zipf", "inf", "53.1", "438579")]),
                boot(top, 2, [row("none", "zipf", "inf", "80.0", "310000"),
                              row("htmm", "zipf", "inf", "59.5", "308634")])]
        out = os.path.join(top, "out")
        rc, stdout, err = run(out, *dirs)
        assert rc == 0, err
        with open(os.path.join(out, "spread.md")) as f:
            md = f.read()
        assert stdout == md
        assert md.startswith("2 boots: median (min-max)\n"), md
        lines = md.splitlines()
        # In the order of the first boot's summary.
        none = next(i for i, l in enumerate(lines) if l.startswith("| none | zipf |"))
        htmm = next(i for i, l in enumerate(lines) if l.startswith("| htmm | zipf |"))
        assert none < htmm, md
        assert "| 80 | - | 305000 (300000-310000) |" in lines[none], lines[none]
        assert "| 56.3 (53.1-59.5) | - | 373606 (308634-438579) | inf |" in lines[htmm], lines[htmm]


def test_boots_must_match():
    with tempfile.TemporaryDirectory() as top:
        dirs = [boot(top, 1, [row("htmm", "hotset", "30", "26.9", "978022"),
                              row("htmm", "zipf", "inf", "53.1", "438579")]),
                boot(top, 2, [row("htmm", "hotset", "37", "35.8", "722534")])]
        out = os.path.join(top, "out")
        rc, stdout, err = run(out, *dirs)
        assert rc == 1, (rc, err)
        assert "boot 2" in err and "htmm on zipf" in err, err
        assert not os.path.exists(os.path.join(out, "spread.tsv"))


def test_bad_input_is_refused():
    with tempfile.TemporaryDirectory() as top:
        bad = boot(top, 1, [row("htmm", "hotset", "30", "fast", "978022")])
        rc, _, err = run(os.path.join(top, "out"), bad)
        assert rc == 1 and "not a figure: 'fast'" in err, (rc, err)
        rc, _, err = run(os.path.join(top, "out"), os.path.join(top, "nowhere"))
        assert rc == 1 and "nowhere/summary.tsv" in err, (rc, err)
        rc, _, err = run(os.path.join(top, "out"))
        assert rc == 2 and "BOOTDIR" in err, (rc, err)


TESTS = [
    ("median, min and max of each figure; inf is the largest", test_median_min_max),
    ("a figure without a value is not counted", test_no_value_is_not_counted),
    ("spread.md: a row per system and workload, median (min-max)", test_markdown_cells),
    ("boots that ran other rows are an error", test_boots_must_match),
    ("a bad figure, a missing summary, no boot: refused", test_bad_input_is_refused),
]


def main():
    print(f"1..{len(TESTS)}", flush=True)
    failed = 0
    for i, (name, fn) in enumerate(TESTS, 1):
        try:
            fn()
            print(f"ok {i} {name}")
        except Exception as e:  # an assertion or a crash: both fail
            failed += 1
            for line in f"{type(e).__name__}: {e}".splitlines():
                print(f"# {line}")
            print(f"not ok {i} {name}")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
