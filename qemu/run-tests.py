#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run the htmm test suite: host-side tests, then the guest.

    run-tests.py --kernel BZIMAGE --initrd CPIO --log FILE [--timeout S]
                 [--fast-mem 1G --slow-mem 1G --cpus 2]

Boots the guest in test mode (qemu/boot.sh), reads the KUnit KTAP from the
kernel console and the kselftest TAP from the second serial port, prints one
line per test and ends with "N passed, N failed, N skipped".  Exits non-zero
on any failed or missing result, a guest that did not finish, and any kernel
report (oops, BUG, WARNING, panic, KASAN, lockdep, kmemleak, hang) in the
console log, which is kept in --log (the test output beside it, .tap).
"""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import tapparse as tp  # noqa: E402
import test_tapparse  # noqa: E402


class Tally:
    def __init__(self):
        self.counts = {tp.PASS: 0, tp.FAIL: 0, tp.SKIP: 0}

    def add(self, kind, result):
        self.counts[result.status] += 1
        label = {tp.PASS: "ok  ", tp.FAIL: "FAIL", tp.SKIP: "skip"}[result.status]
        note = f"  ({result.note})" if result.note and result.status != tp.PASS else ""
        print(f"{label} {kind}: {result.name}{note}", flush=True)

    def summary(self):
        c = self.counts
        return f"{c[tp.PASS]} passed, {c[tp.FAIL]} failed, {c[tp.SKIP]} skipped"


HOST_TESTS = os.path.join(HERE, "host-tests")


def host_tests(tally, userspace):
    """The runner's own log reading, then the scripts in qemu/host-tests/.

    Each executable there runs on the host with HTMM_USERSPACE set to the
    directory of the built tools and prints TAP (a plan, then one line per
    test); a script that fails to report a test it planned, or exits
    non-zero, fails.
    """
    for fn in test_tapparse.ALL:
        name = fn.__name__[len("test_"):]
        try:
            fn()
            tally.add("host", tp.Result(f"runner.{name}", tp.PASS))
        except Exception as e:  # an assertion or a crash: both fail
            tally.add("host", tp.Result(f"runner.{name}", tp.FAIL, f"{type(e).__name__}: {e}"))

    if not os.path.isdir(HOST_TESTS):
        return
    env = dict(os.environ, HTMM_USERSPACE=os.path.abspath(userspace))
    for script in sorted(os.listdir(HOST_TESTS)):
        path = os.path.join(HOST_TESTS, script)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            continue
        suite = os.path.splitext(script)[0]
        try:
            p = subprocess.run([path], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               timeout=600, text=True, errors="replace")
            out, rc = p.stdout, p.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            out = out if isinstance(out, str) else out.decode(errors="replace")
            rc = 124
        sys.stdout.write("".join(f"# {line}\n" for line in out.splitlines()
                                 if line.startswith("#")))
        results = tp.parse_kselftest(f"TAP version 13\n1..1\n{_as_subtests(out)}"
                                     f"ok 1 selftests: host: {suite}\n")
        leaves = [r for r in results if r.name != f"host:{suite}"]
        for r in leaves:
            tally.add("host", tp.Result(r.name[len("host:"):], r.status, r.note))
        if not leaves:
            tally.add("host", tp.Result(suite, tp.FAIL, "reported no test"))
        if rc != 0:
            tally.add("host", tp.Result(f"{suite} exit status", tp.FAIL,
                                        f"exited {rc}" + (" (timed out)" if rc == 124 else "")))


def _as_subtests(out):
    """Indent a script's TAP as the subtests of one kselftest binary."""
    return "".join(f"# {line}\n" for line in out.splitlines()
                   if not line.startswith("TAP version"))


def guest_tests(args, tally):
    tap_path = args.log + ".tap"
    cmd = ["bash", os.path.join(HERE, "boot.sh"), "--mode", "test",
           "--kernel", args.kernel, "--initrd", args.initrd,
           "--fast-mem", args.fast_mem, "--slow-mem", args.slow_mem,
           "--cpus", str(args.cpus), "--timeout", str(args.timeout),
           "--log", args.log, "--tap", tap_path]
    append = args.append + (" htmm_debug=1" if args.debug else "")
    if append.strip():
        cmd += ["--append", append.strip()]
    print(f"booting the guest: {args.fast_mem} fast (node 0), {args.slow_mem} slow (node 1), "
          f"{args.cpus} CPUs; console log {args.log}", flush=True)
    start = time.time()
    rc = subprocess.call(cmd, stdin=subprocess.DEVNULL)
    elapsed = time.time() - start

    with open(args.log, errors="replace") as f:
        console = f.read()
    with open(tap_path, errors="replace") as f:
        tap = f.read()

    for r in tp.parse_kunit(console):
        tally.add("kunit", r)

    begin = tap.find("HTMM-GUEST-BEGIN")
    end = tap.find("HTMM-GUEST-END")
    body = tap[begin:end if end >= 0 else len(tap)] if begin >= 0 else ""
    results = tp.parse_kselftest(body)
    for r in results:
        tally.add("kselftest", r)
    if begin < 0:
        tally.add("guest", tp.Result("started the tests", tp.FAIL,
                                     "no HTMM-GUEST-BEGIN: the guest never reached its init"))
    elif not results:
        tally.add("guest", tp.Result("ran kselftests", tp.FAIL, "no kselftest result at all"))
    if begin >= 0 and end < 0:
        tally.add("guest", tp.Result("finished the tests", tp.FAIL,
                                     "no HTMM-GUEST-END: the guest stopped mid-run"))
    if rc == 124:
        tally.add("guest", tp.Result("exited in time", tp.FAIL,
                                     f"timed out after {args.timeout} s"))
    elif rc != 0:
        tally.add("guest", tp.Result("exited cleanly", tp.FAIL, f"QEMU exit status {rc}"))

    if args.debug:
        debug_checks(console, tap, tally)

    reports = tp.kernel_reports(console)
    for kind, line in reports:
        tally.add("kernel", tp.Result(f"{kind} report", tp.FAIL, line[:160]))
    if not reports:
        tally.add("kernel", tp.Result("console log free of oops/BUG/WARNING/panic reports",
                                      tp.PASS))
    print(f"guest ran {elapsed:.0f} s; full console log: {args.log}, test output: {tap_path}",
          flush=True)


# What a debug kernel prints when each checker comes up.
DEBUG_FACILITIES = [
    ("KASAN", "KernelAddressSanitizer initialized"),
    ("lockdep", "Lock dependency validator"),
    ("kmemleak", "Kernel memory leak detector initialized"),
]


def debug_checks(console, tap, tally):
    """The checkers of a debug kernel came up, and kmemleak found nothing."""
    for name, banner in DEBUG_FACILITIES:
        up = banner in console
        tally.add("debug", tp.Result(f"{name} is active", tp.PASS if up else tp.FAIL,
                                     "" if up else f"no '{banner}' in the console log"))
    begin = tap.find("HTMM-KMEMLEAK-BEGIN")
    end = tap.find("HTMM-KMEMLEAK-END")
    if begin < 0 or end < 0:
        tally.add("debug", tp.Result("kmemleak scanned at the end", tp.FAIL,
                                     "no kmemleak report section in the test output"))
        return
    report = tap[begin:end]
    leaks = report.count("unreferenced object")
    first = next((l for l in report.splitlines() if "unreferenced object" in l), "")
    tally.add("debug", tp.Result("kmemleak found no leak", tp.FAIL if leaks else tp.PASS,
                                 f"{leaks} suspected leaks, first: {first.strip()}" if leaks else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--initrd", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--fast-mem", default="1G")
    ap.add_argument("--slow-mem", default="1G")
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--append", default="")
    ap.add_argument("--debug", action="store_true",
                    help="a debug kernel: require KASAN, lockdep and kmemleak, and a clean scan")
    ap.add_argument("--userspace", default=os.path.join(HERE, "..", "build", "userspace"),
                    help="the directory of the built tools, for the host tests")
    ap.add_argument("--host-only", action="store_true",
                    help="run only the host-side tests")
    args = ap.parse_args()

    tally = Tally()
    host_tests(tally, args.userspace)
    if not args.host_only:
        guest_tests(args, tally)
    print(tally.summary(), flush=True)
    return 1 if tally.counts[tp.FAIL] else 0


if __name__ == "__main__":
    sys.exit(main())
