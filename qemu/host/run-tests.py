#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run the htmm test suite: host-side tests, then the guest.

    run-tests.py --kernel BZIMAGE --initrd CPIO --log FILE [--timeout S]
                 [--fast-mem 1G --slow-mem 1G --cpus 2] [--no-slowtier]

Boots the guest in test mode (qemu/host/boot.sh), reads the KUnit KTAP from the
kernel console and the kselftest TAP from the second serial port, prints one
line per test and ends with "N passed, N failed, N skipped".  Exits non-zero
on any failed or missing result, a guest that did not finish, and any kernel
report (oops, BUG, WARNING, panic, KASAN, lockdep, kmemleak, hang) in the
console log, which is kept in --log (the test output beside it, .tap).

Then, except with --debug, it boots the guest once more with the emulated
slow tier (the QEMU plugin qemu/plugin/slowtier.c) to test the plugin
itself: pointer chases on each node, timed in the guest and counted by the
plugin (--no-slowtier skips it; its logs are beside --log, NAME-slowtier.*).
"""

import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import manifest  # noqa: E402
import tapparse as tp  # noqa: E402
import test_tapparse  # noqa: E402

MANIFEST = os.path.join(HERE, "expected-results")


class Tally:
    def __init__(self):
        self.counts = {tp.PASS: 0, tp.FAIL: 0, tp.SKIP: 0}
        self.results = []   # (kind, Result), for the manifest

    def add(self, kind, result):
        self.results.append((kind, result))
        self.counts[result.status] += 1
        label = {tp.PASS: "ok  ", tp.FAIL: "FAIL", tp.SKIP: "skip"}[result.status]
        note = f"  ({result.note})" if result.note and result.status != tp.PASS else ""
        print(f"{label} {kind}: {result.name}{note}", flush=True)

    def summary(self):
        c = self.counts
        return f"{c[tp.PASS]} passed, {c[tp.FAIL]} failed, {c[tp.SKIP]} skipped"


HOST_TESTS = os.path.join(HERE, "tests")


def host_tests(tally, userspace):
    """The runner's own log reading, then the scripts in qemu/host/tests/.

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
        if not os.path.isfile(path):
            continue
        suite = os.path.splitext(script)[0]
        if not os.access(path, os.X_OK):
            # Not run is not passed: a test that lost its run bit fails.
            tally.add("host", tp.Result(suite, tp.FAIL,
                                        f"{path} is not executable (chmod +x, git add)"))
            continue
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


def boot_cmd(args, mode, timeout, log, tap):
    """The qemu/host/boot.sh command of a test boot: the guest of @args."""
    return ["bash", os.path.join(HERE, "boot.sh"), "--mode", mode,
            "--kernel", args.kernel, "--initrd", args.initrd,
            "--fast-mem", args.fast_mem, "--slow-mem", args.slow_mem,
            "--cpus", str(args.cpus), "--timeout", str(timeout),
            "--log", log, "--tap", tap]


def guest_output(tap):
    """(begin, end, body): the guest's markers' offsets (-1 if absent) in
    its test output, and what it wrote between them."""
    begin, end = tap.find("HTMM-GUEST-BEGIN"), tap.find("HTMM-GUEST-END")
    body = tap[begin:end if end >= 0 else len(tap)] if begin >= 0 else ""
    return begin, end, body


def guest_tests(args, tally):
    tap_path = args.log + ".tap"
    cmd = boot_cmd(args, "test", args.timeout, args.log, tap_path)
    if args.slow_tier:
        cmd += ["--slow-tier", args.slow_tier]
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

    begin, end, body = guest_output(tap)
    results = tp.parse_kselftest(body)
    for r in results:
        tally.add("kselftest", r)
        # Why it failed, in the run's own output (CI keeps no guest log).
        if r.status == tp.FAIL:
            for line in tp.kselftest_log(body, r.name):
                print(f"    | {line}", flush=True)
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


# The emulated slow tier's test (qemu/guest/slowtier-test.sh in the guest): what
# the guest and the plugin must agree on.
SLOWTIER_LOADS_COUNTED = 0.95   # of a chase's loads, counted as misses of its node
SLOWTIER_OTHER_NODE = 0.05      # of its loads, at most, counted on the other node
# Times measured in the guest move with the host's other work, and only
# ever up: they are judged one-sided, against bounds a loaded host keeps.
# The plugin's own accounting is exact, and judged tightly.
SLOWTIER_ADDED = 0.70           # of the latency, at least, added per load
SLOWTIER_ACCOUNTED = 0.05       # the plugin's delay against misses x latency
SLOWTIER_LOST = 0.80            # of the plugin's delay, at least, lost by the guest
SLOWTIER_SMALL_MISSES = 0.01    # of the small chase's loads, at most, missing
SLOWTIER_TIMEOUT = 600          # seconds; the run takes about 45


def _key_values(text):
    return dict(re.findall(r"(\w+)=(\S+)", text))


def slowtier_tests(args, tally):
    """Boot with the slowtier plugin at its default latency, judge its counts.

    The guest (qemu/guest/slowtier-test.sh) chases pointers over 64 MiB on node 0,
    on node 1, on node 1 with the added latency off (three rounds of these),
    and over 64 KiB on node 1, each run a window of the plugin; it prints
    each run's time per load.  The plugin writes each window's counts to its
    output file.  Every run's counts are judged; the times, of each kind's
    fastest run, the one the host's other work disturbed least.
    """
    base = os.path.splitext(args.log)[0] + "-slowtier"
    timeout = min(args.timeout, SLOWTIER_TIMEOUT)
    log, tap_path, out = base + ".log", base + ".log.tap", base + ".csv"
    cmd = boot_cmd(args, "slowtier-test", timeout, log, tap_path) + \
        ["--slow-tier", "default", "--slow-tier-out", out]
    if args.append.strip():
        cmd += ["--append", args.append.strip()]
    print(f"booting the guest with the emulated slow tier; console log {log}", flush=True)
    if os.path.exists(out):
        os.remove(out)
    start = time.time()
    rc = subprocess.call(cmd, stdin=subprocess.DEVNULL)
    elapsed = time.time() - start

    def read(path):
        try:
            with open(path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""
    console, tap, csv = read(log), read(tap_path), read(out)

    def add(name, ok, note=""):
        tally.add("slowtier", tp.Result(name, tp.PASS if ok else tp.FAIL, note))

    begin, end, body = guest_output(tap)
    results = tp.parse_kselftest(body)
    for r in results:
        tally.add("slowtier", r)
    if not results:
        add("the guest ran its chases", False,
            "no result from qemu/guest/slowtier-test.sh" if begin >= 0 else
            "no HTMM-GUEST-BEGIN: the guest never reached its init")
    if rc == 124:
        add("exited in time", False, f"timed out after {timeout} s")
    elif rc != 0:
        add("exited cleanly", False, f"QEMU exit status {rc}")
    for kind, line in tp.kernel_reports(console):
        add(f"{kind} report", False, line[:160])

    # The guest's runs by name (a list each), the plugin's windows by id.
    runs = {}
    for m in re.finditer(r"^# chase (.*)$", body, re.M):
        kv = _key_values(m.group(1))
        runs.setdefault(kv.get("name"), []).append(kv)
    config = re.search(r"^# slowtier (.*)$", csv, re.M)
    latency = float(_key_values(config.group(1)).get("latency_ns", 0)) if config else 0
    add("the plugin was loaded and wrote its configuration", bool(config and latency > 0),
        "" if config else f"no '# slowtier' line in {out}")
    windows = {kv["id"]: kv for kv in (_key_values(m.group(1)) for m in
               re.finditer(r"^# window (.*)$", csv, re.M)) if "id" in kv}

    def fastest(name):
        """The fastest run of a kind, and the plugin's counts of its window."""
        if not runs.get(name):
            raise LookupError(f"no figures of the run {name} from the guest")
        run = min(runs[name], key=lambda r: float(r["ns_per_load"]))
        if run["id"] not in windows:
            raise LookupError(f"no window {run['id']} ({name}) in {out}")
        return run, windows[run["id"]]

    def judge(title, check):
        """check() returns (ok, note); figures missing or malformed fail it."""
        try:
            ok, note = check()
        except LookupError as e:    # KeyError too: a figure missing
            ok, note = False, f"missing: {e}"
        except ValueError as e:
            ok, note = False, f"malformed figure: {e}"
        add(title, ok, note)

    def counted(name, node):
        """Every run's loads are counted as misses on its node, and not the other."""
        if not runs.get(name):
            raise LookupError(f"no figures of the run {name} from the guest")
        notes, ok = [], True
        for run in runs[name]:
            if run["id"] not in windows:
                raise LookupError(f"no window {run['id']} ({name}) in {out}")
            win = windows[run["id"]]
            loads = int(run["loads"])
            mine = int(win[f"miss_{'fast' if node == 0 else 'slow'}"])
            other = int(win[f"miss_{'slow' if node == 0 else 'fast'}"])
            ok &= (float(run["on_node_pct"]) >= 99 and int(win["accesses"]) >= loads and
                   mine >= SLOWTIER_LOADS_COUNTED * loads and
                   other <= SLOWTIER_OTHER_NODE * loads)
            notes.append(f"window {run['id']}: {loads} loads ({run['on_node_pct']}% of the "
                         f"buffer on node {node}), {win['accesses']} accesses, {mine} "
                         f"misses on node {node}, {other} on node {1 - node}")
        return ok, "; ".join(notes)

    for name, node in (("node0", 0), ("node1", 1), ("node1-fast", 1)):
        judge(f"{name}: its loads counted as node-{node} misses",
              lambda name=name, node=node: counted(name, node))

    def users():
        """The chase's misses on node 1 are counted as a program's (at user
        addresses) as well, and no more of them than there were misses."""
        if not runs.get("node1"):
            raise LookupError("no figures of the run node1 from the guest")
        notes, ok = [], True
        for run in runs["node1"]:
            if run["id"] not in windows:
                raise LookupError(f"no window {run['id']} (node1) in {out}")
            win = windows[run["id"]]
            loads, user = int(run["loads"]), int(win["user_miss_slow"])
            ok &= SLOWTIER_LOADS_COUNTED * loads <= user <= int(win["miss_slow"])
            notes.append(f"window {run['id']}: {loads} loads, {user} node-1 misses at "
                         f"user addresses of {win['miss_slow']} ({win['user_star_pct']}% "
                         f"against {win['star_pct']}%)")
        return ok, "; ".join(notes)

    judge("node1: its misses counted as the program's", users)

    def baseline():
        """A miss without added latency: the fastest run on node 0, or on
        node 1 with the latency off, which the plugin charged nothing
        (uncharged() checks)."""
        return min(float(fastest(name)[0]["ns_per_load"]) for name in ("node0", "node1-fast"))

    def slower():
        """The node-1 chase is slower than node 0's by (at least most of)
        the latency; the figures, ratio included, are printed."""
        ns0, ns1 = baseline(), float(fastest("node1")[0]["ns_per_load"])
        print(f"# slowtier: {ns0:.0f} ns per load without added latency, {ns1:.0f} on "
              f"node 1 (x{ns1 / ns0:.2f}): {ns1 - ns0:.0f} ns added, the latency is "
              f"{latency:.0f} ns", flush=True)
        return (ns1 - ns0 >= SLOWTIER_ADDED * latency,
                f"{ns0:.1f} ns per load without added latency, {ns1:.1f} on node 1: "
                f"{ns1 - ns0:.1f} ns added, the latency is {latency:.0f} ns")

    def accounted():
        """Every node-1 miss of the window was charged the latency, once."""
        notes, ok = [], True
        for run in runs.get("node1", []):
            win = windows[run["id"]]
            want = int(win["miss_slow"]) * float(win["latency_ns"]) / 1e9
            delay = float(win["delay_s"])
            ok &= want > 0 and abs(delay - want) <= SLOWTIER_ACCOUNTED * want
            notes.append(f"window {run['id']}: {delay:.3f} s added for {win['miss_slow']} "
                         f"misses at {win['latency_ns']} ns ({want:.3f} s)")
        if not notes:
            raise LookupError("no figures of the run node1 from the guest")
        return ok, "; ".join(notes)

    def delay_reaches_guest():
        """The guest lost the time the plugin held it for."""
        run1, win1 = fastest("node1")
        lost = (float(run1["ns_per_load"]) - baseline()) * int(run1["loads"]) / 1e9
        delay = float(win1["delay_s"])
        print(f"# slowtier: the plugin added {delay:.3f} s to window {run1['id']}, "
              f"the guest lost {lost:.3f} s", flush=True)
        return (lost >= SLOWTIER_LOST * delay,
                f"the plugin added {delay:.3f} s in window {run1['id']}, "
                f"the guest lost {lost:.3f} s against no added latency")

    def uncharged():
        """With the latency off, node 1 is charged nothing: the plugin
        held the guest for no time in any of the chase's windows.  How
        fast the chase ran is printed, not judged: on a busy host every
        window can run far slower, whichever node it reads (a run beside
        a kernel build saw 886 ns per load against node 0's 524, with
        nothing charged)."""
        (run0, _), (runf, _) = fastest("node0"), fastest("node1-fast")
        ns0, nsf = float(run0["ns_per_load"]), float(runf["ns_per_load"])
        runs_f = runs.get("node1-fast", [])
        if not runs_f:
            raise LookupError("no figures of the run node1-fast from the guest")
        delays = [float(windows[r["id"]]["delay_s"]) for r in runs_f]
        return (all(d < 0.01 for d in delays),
                f"{nsf:.1f} ns per load, node 0 {ns0:.1f}; plugin delay "
                f"{', '.join(f'{d:.3f}' for d in delays)} s")

    def cached():
        """A buffer that fits the cache model does not reach the slow tier."""
        run, win = fastest("node1-small")
        loads, misses = int(run["loads"]), int(win["miss_slow"])
        return (misses <= SLOWTIER_SMALL_MISSES * loads,
                f"{misses} node-1 misses of {loads} loads over {run['size']} bytes")

    judge("node1: slower than node 0 by the added latency", slower)
    judge("node1: every miss charged the latency once", accounted)
    judge("node1: the guest lost the time the plugin added", delay_reaches_guest)
    judge("node1-fast: charged nothing with the latency off", uncharged)
    judge("node1-small: a buffer in the cache model misses (almost) never", cached)
    print(f"slow-tier guest ran {elapsed:.0f} s; console log: {log}, plugin output: {out}",
          flush=True)


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
    ap.add_argument("--userspace", default=os.path.join(HERE, "..", "..", "build", "userspace"),
                    help="the directory of the built tools, for the host tests")
    ap.add_argument("--host-only", action="store_true",
                    help="run only the host-side tests")
    ap.add_argument("--no-slowtier", action="store_true",
                    help="skip the test of the emulated slow tier (its own boot)")
    ap.add_argument("--slow-tier", default="",
                    help="run the main guest with the emulated slow tier: NS or default")
    args = ap.parse_args()

    try:
        units = manifest.load(MANIFEST)
    except (OSError, manifest.ManifestError) as e:
        print(f"run-tests: error: {e}", file=sys.stderr)
        return 2
    tally = Tally()
    kinds = ["host"]
    host_tests(tally, args.userspace)
    if not args.host_only:
        guest_tests(args, tally)
        kinds += ["kunit", "kselftest"]
        # The plugin runs in QEMU, whatever the guest kernel: the debug
        # kernel would only make the run longer (3.5 min, booting under it).
        if args.debug:
            print("# slowtier: the emulated slow tier is tested in plain runs only", flush=True)
        elif not args.no_slowtier:
            slowtier_tests(args, tally)
            kinds.append("slowtier")
    # What should have run and did not, or ran and should not have.
    for r in manifest.check(units, tally.results, "debug" if args.debug else "plain", kinds):
        tally.add("manifest", r)
    print(tally.summary(), flush=True)
    return 1 if tally.counts[tp.FAIL] else 0


if __name__ == "__main__":
    sys.exit(main())
