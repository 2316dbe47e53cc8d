#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""htmm-sample on the host, in TAP.

The workload is tests/toucher (userspace/tests/toucher.c): it touches each
page of fresh anonymous memory once in touch_pages(), so that each page
faults once, or spins in burn_cpu(), or maps and unmaps a page over and
over in remap_pages().  With -w it waits for a byte on its stdin, which
lets the -p test start the sampler first; the sampler says on stderr when
it samples, and a command says on stdout when it runs.  No sleep stands
for a synchronisation.

HTMM_USERSPACE is the directory of the built tools (default:
build/userspace of this tree).
"""

import json
import os
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
USERSPACE = os.environ.get("HTMM_USERSPACE", os.path.join(HERE, "..", "..", "..", "build", "userspace"))
SAMPLER = os.path.join(USERSPACE, "htmm-sample")
TOUCHER = os.path.join(USERSPACE, "tests", "toucher")

MIB = 256
PAGE = os.sysconf("SC_PAGE_SIZE")
PAGES = MIB * 1024 * 1024 // PAGE
# Ring pages per CPU for the page-fault runs: 8 MiB holds more than all
# of their samples, so that none can be lost even if the sampler does not
# get a CPU while the toucher runs; the tests then require none lost.
# A user without CAP_IPC_LOCK may not lock that much (perf_event_mlock_kb,
# RLIMIT_MEMLOCK): those tests are skipped, with the reason.
RING_PAGES = "2048"
# Each page of the buffer faults exactly once.  A fault the kernel has to
# take again (a retry after a race) would count twice: a few are allowed.
FAULT_SLACK = 16
TIMEOUT = 60


class Skip(Exception):
    pass


def run(args, timeout=TIMEOUT, preexec_fn=None, env=None):
    return subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout,
                          preexec_fn=preexec_fn, env=env)


def sample_json(args, timeout=TIMEOUT, preexec_fn=None, stderr=None):
    """Run htmm-sample -j with args; its report (its stderr into the list
    stderr, if given)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        p = run([SAMPLER, "-j", "-o", out.name] + args, timeout, preexec_fn)
        check_can_sample(p)
        with open(out.name) as f:
            text = f.read()
    assert p.returncode == 0, f"exit status {p.returncode}: {p.stderr.strip()}"
    if stderr is not None:
        stderr.append(p.stderr)
    try:
        return json.loads(text)
    except ValueError as e:
        raise AssertionError(f"not JSON ({e}): {text[:200]!r}")


def check_can_sample(p):
    """Skip where perf events are not allowed at all, or where the ring
    buffers asked for are more than this user may lock (not bugs of ours)."""
    if p.returncode != 1:
        return
    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    if "perf_event_open" in p.stderr and (
            "Permission denied" in p.stderr or "Operation not permitted" in p.stderr
            or "Function not implemented" in p.stderr):
        raise Skip("perf events not allowed here: " + last)
    if "mmap of a" in p.stderr and "more locked memory than this user may have" in p.stderr:
        raise Skip("the ring buffers of these tests are more than this user may lock: " + last)


def table_sum(table):
    return sum(row["samples"] for row in table["top"]) + table["rest_samples"]


def check_accounting(r):
    """Every sample is counted once in each table, and none was lost."""
    assert r["lost"] == 0, f"{r['lost']} records lost"
    assert r["malformed"] == 0, f"{r['malformed']} malformed records"
    for name in ("pages", "mappings", "code_sites"):
        if r[name] is not None:
            assert table_sum(r[name]) == r["samples"], \
                f"{name}: {table_sum(r[name])} samples in the table, {r['samples']} in all"


def check_toucher(r):
    check_accounting(r)
    assert r["samples"] >= PAGES, f"{r['samples']} samples, < {PAGES} pages touched"
    top = r["mappings"]["top"][0]
    assert top["name"] == "[anon]" and top["anonymous"], f"top mapping: {top}"
    assert PAGES <= top["samples"] <= PAGES + FAULT_SLACK, \
        f"{top['samples']} samples in the buffer's mapping, {PAGES} pages"
    # The buffer is a mapping of its own, between guard pages.
    size = int(top["end"], 16) - int(top["start"], 16)
    assert size == MIB << 20, f"top mapping is {size} bytes, the buffer {MIB} MiB"
    site = r["code_sites"]["top"][0]
    assert (site["function"], site["module"]) == ("touch_pages", "toucher"), \
        f"top code site: {site}"
    assert site["samples"] >= PAGES, f"touch_pages: {site['samples']} samples"


def readline(f, timeout):
    """A line from pipe f within timeout seconds, or an AssertionError."""
    line = b""
    end = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        left = end - time.monotonic()
        if left <= 0 or not select.select([f], [], [], left)[0]:
            raise AssertionError(f"no line within {timeout} s (got {line!r})")
        c = os.read(f.fileno(), 1)
        if not c:
            raise AssertionError(f"end of file (got {line!r})")
        line += c
    return line.decode()


# ---- the tests ----

def test_help():
    p = run([SAMPLER, "--help"])
    assert p.returncode == 0, f"exit status {p.returncode}"
    for word in ("Usage: htmm-sample", "page-faults", "cpu-clock", "mem-loads", "ibs-op", "--json"):
        assert word in p.stdout, f"no {word!r} in --help"


def test_version():
    p = run([SAMPLER, "--version"])
    assert p.returncode == 0 and p.stdout == "htmm-sample 0.1\n", f"{p.returncode} {p.stdout!r}"


def test_bad_event():
    p = run([SAMPLER, "-e", "no-such-event", "--", "true"])
    assert p.returncode == 2, f"exit status {p.returncode}"
    assert "htmm-sample: --event: no event 'no-such-event'" in p.stderr, p.stderr


def test_bad_pid():
    # A pid above pid_max cannot exist.
    with open("/proc/sys/kernel/pid_max") as f:
        pid = int(f.read()) + 1
    p = run([SAMPLER, "-p", str(pid)])
    assert p.returncode == 1, f"exit status {p.returncode}"
    assert f"htmm-sample: pid {pid}: no such process" in p.stderr, p.stderr


def test_no_command():
    p = run([SAMPLER])
    assert p.returncode == 2, f"exit status {p.returncode}"
    assert "htmm-sample: no command given" in p.stderr, p.stderr


def test_command_not_found():
    # A name is looked for in PATH; a path is not, and its error is said.
    # (A directory of PATH that cannot be searched would make it EACCES.)
    p = run([SAMPLER, "--", "htmm-no-such-command"],
            env=dict(os.environ, PATH="/usr/bin:/bin"))
    assert p.returncode == 127, f"exit status {p.returncode}"
    assert "htmm-sample: htmm-no-such-command: command not found" in p.stderr, p.stderr
    p = run([SAMPLER, "--", "/nonexistent/command"])
    assert p.returncode == 127, f"exit status {p.returncode}"
    assert "htmm-sample: /nonexistent/command: No such file or directory" in p.stderr, p.stderr


def test_missing_pmu():
    """mem-loads and ibs-op say what is missing where the CPU lacks them."""
    checked = 0
    for ev, path in (("mem-loads", "/sys/bus/event_source/devices/cpu/events/mem-loads"),
                     ("ibs-op", "/sys/bus/event_source/devices/ibs_op")):
        if os.path.exists(path) or (ev == "mem-loads" and os.path.exists(
                "/sys/bus/event_source/devices/cpu_core/events/mem-loads")):
            continue
        p = run([SAMPLER, "-e", ev, "--", "true"])
        assert p.returncode == 1, f"{ev}: exit status {p.returncode}"
        assert f"htmm-sample: {ev}: this CPU has no" in p.stderr, p.stderr
        checked += 1
    if not checked:
        raise Skip("this CPU has both PEBS and IBS?")


def test_exit_status():
    p = run([SAMPLER, "--", "sh", "-c", "exit 3"])
    check_can_sample(p)
    assert p.returncode == 3, f"exit status {p.returncode}: {p.stderr}"
    assert "exit status 3" in p.stdout, p.stdout


def test_toucher_text():
    p = run([SAMPLER, "-m", RING_PAGES, "--", TOUCHER, "touch", str(MIB)])
    check_can_sample(p)
    assert p.returncode == 0, f"exit status {p.returncode}: {p.stderr}"
    out = p.stdout
    fields = {}
    for line in out.splitlines():
        if line.startswith("samples:"):
            fields["samples"] = int(line.split()[1])
        if line.startswith("lost:"):
            fields["lost"] = int(line.split()[1])
    assert fields.get("samples", 0) >= PAGES, f"samples: {fields}"
    assert fields.get("lost") == 0, f"lost: {fields}"
    maps = out[out.index("hottest mappings"):].splitlines()
    assert maps[2].split()[-1] == "[anon]", f"top mapping: {maps[2]}"
    assert PAGES <= int(maps[2].split()[0]) <= PAGES + FAULT_SLACK, maps[2]
    sites = out[out.index("code sites"):].splitlines()
    assert sites[2].split()[2:4] == ["touch_pages", "[toucher]"], f"top site: {sites[2]}"


def test_toucher_json():
    r = sample_json(["-m", RING_PAGES, "--", TOUCHER, "touch", str(MIB)])
    assert r["event"] == "page-faults" and r["period"] == 1, r
    assert r["target"]["command"][1:] == ["touch", str(MIB)], r["target"]
    assert r["target"]["exit_status"] == 0 and r["ended_by"] == "exit", r
    check_toucher(r)


def test_toucher_pid():
    toucher = subprocess.Popen([TOUCHER, "-w", "touch", str(MIB)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE)
    sampler = None
    try:
        word, pid = readline(toucher.stdout, TIMEOUT).split()
        assert word == "ready", f"toucher said {word}"
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            sampler = subprocess.Popen([SAMPLER, "-p", pid, "-m", RING_PAGES, "-j",
                                        "-o", out.name], stdin=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE)
            line = readline(sampler.stderr, TIMEOUT)
            if "sampling pid" not in line:
                sampler.wait(TIMEOUT)
                line += sampler.stderr.read().decode()
                check_can_sample(subprocess.CompletedProcess([], sampler.returncode, "", line))
                raise AssertionError(f"htmm-sample said: {line.strip()}")
            toucher.stdin.write(b"g")
            toucher.stdin.close()
            assert toucher.wait(TIMEOUT) == 0, f"toucher: exit status {toucher.returncode}"
            # The sampler ends when its target does.
            assert sampler.wait(TIMEOUT) == 0, f"exit status {sampler.returncode}"
            with open(out.name) as f:
                r = json.load(f)
        assert r["target"] == {"pid": int(pid)} and r["ended_by"] == "exit", r["target"]
        check_toucher(r)
    finally:
        for proc in (toucher, sampler):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()


def test_cpu_clock_callchain():
    r = sample_json(["-e", "cpu-clock", "-g", "--", TOUCHER, "burn", "300"])
    check_accounting(r)
    assert r["callchains"] and r["pages"] is None, r
    # 3000 at 10 kHz; far fewer if the host is busy, but not none.
    assert r["samples"] >= 100, f"{r['samples']} samples"
    site = r["code_sites"]["top"][0]
    assert (site["function"], site["module"]) == ("burn_cpu", "toucher"), f"top site: {site}"
    assert site["percent"] >= 50, f"burn_cpu: {site['percent']}%"
    caller = site["caller"] or {}
    assert caller.get("function") == "main", f"burn_cpu's caller: {caller}"


def test_children_followed():
    """Processes the command forks and execs are sampled and named too."""
    r = sample_json(["-m", RING_PAGES, "--", "sh", "-c",
                     f"{TOUCHER} touch 16 & {TOUCHER} touch 8; wait"])
    check_accounting(r)
    top = r["mappings"]["top"]
    want = [(16 << 20) // PAGE, (8 << 20) // PAGE]
    got = [m["samples"] for m in top[:2]]
    assert [m["name"] for m in top[:2]] == ["[anon]", "[anon]"], top[:2]
    assert want[0] <= got[0] <= want[0] + FAULT_SLACK and \
        want[1] <= got[1] <= want[1] + FAULT_SLACK, f"{got}, want {want}"
    assert len({top[0]["pid"], top[1]["pid"], r["target"]["pid"]}) == 3, \
        f"not two children's: {top[:2]}"
    assert r["code_sites"]["top"][0]["function"] == "touch_pages", r["code_sites"]["top"][0]


def test_duration():
    start = time.monotonic()
    r = sample_json(["-d", "0.5", "--", "sleep", "30"])
    took = time.monotonic() - start
    assert r["ended_by"] == "duration" and r["target"].get("signal") == 15, r["target"]
    assert took < 10, f"took {took:.1f} s"


def sigint_default():
    """SIGINT as a terminal's job has it: a test run from a background job
    of a non-interactive shell (make ... &) inherits SIGINT ignored, which
    htmm-sample and its command keep, as nohup's SIGHUP."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_sampler(args, out, stdout=subprocess.PIPE, stderr=None):
    """htmm-sample -j -o out with args, in a session of its own (its own
    process group, as a shell's job), with SIGINT's default action."""
    return subprocess.Popen([SAMPLER, "-j", "-o", out] + args, stdin=subprocess.DEVNULL,
                            stdout=stdout, stderr=stderr or subprocess.PIPE,
                            start_new_session=True, preexec_fn=sigint_default)


def end_session(p):
    """Kill what is left of p's session (a command's orphans), and p."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if p.poll() is None:
        p.wait()


def test_sigint():
    """Ctrl-C (SIGINT to the process group: the command dies of it too) or
    SIGINT to htmm-sample alone, while the command runs: exit status 0 and
    ended_by signal, every time.  The command's SIGCHLD and the SIGINT come
    in either order: repeated, to catch that race."""
    for i in range(13):
        group = i < 10
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            p = start_sampler(["--", "sh", "-c", "echo ready; exec sleep 30"], out.name)
            try:
                try:
                    line = readline(p.stdout, TIMEOUT)
                except AssertionError:
                    p.wait(TIMEOUT)
                    check_can_sample(subprocess.CompletedProcess(
                        [], p.returncode, "", p.stderr.read().decode()))
                    raise
                assert line == "ready\n", f"the command said {line!r}"
                if group:
                    os.killpg(p.pid, signal.SIGINT)
                else:
                    os.kill(p.pid, signal.SIGINT)
                rc = p.wait(TIMEOUT)
                with open(out.name) as f:
                    r = json.load(f)
            finally:
                end_session(p)
        how = "to the group" if group else "to htmm-sample"
        assert (rc, r["ended_by"]) == (0, "signal"), \
            f"run {i + 1}, SIGINT {how}: exit status {rc}, ended_by {r['ended_by']}, " \
            f"target {r['target']}"


def test_duration_kill():
    """-d bounds the run: at the time the events stop, and a command that
    ignores SIGTERM is killed a second later."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out, \
            tempfile.TemporaryFile() as err:
        start = time.monotonic()
        # Its stdout and stderr are not pipes: an orphan may hold them.
        p = start_sampler(["-d", "0.3", "--", "sh", "-c", 'trap "" TERM; sleep 5'],
                          out.name, stdout=subprocess.DEVNULL, stderr=err)
        try:
            rc = p.wait(TIMEOUT)
            took = time.monotonic() - start
        finally:
            end_session(p)
        err.seek(0)
        check_can_sample(subprocess.CompletedProcess([], rc, "", err.read().decode()))
        with open(out.name) as f:
            r = json.load(f)
    assert rc == 0, f"exit status {rc}"
    assert r["ended_by"] == "duration" and r["target"].get("signal") == 9, \
        f"ended by {r['ended_by']}, target {r['target']}"
    assert 0.3 <= r["duration_s"] < 0.8, f"duration {r['duration_s']} s, -d 0.3"
    assert took < 2.5, f"took {took:.1f} s"


def test_newline_in_name():
    """A file name with a newline (as MMAP2 gives it, unescaped) names its
    module and functions."""
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "tou\ncher")
        shutil.copy(TOUCHER, prog)
        r = sample_json(["-e", "cpu-clock", "--", prog, "burn", "300"])
    check_accounting(r)
    site = r["code_sites"]["top"][0]
    assert (site["function"], site["module"]) == ("burn_cpu", "tou\ncher"), f"top site: {site}"


def test_many_processes():
    """Each process is named with its files open, then closed: 40 of them
    under a limit of 64 open files are all named (but for a sample in a
    PLT stub, which has no symbol)."""
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    err = []
    r = sample_json(["-e", "cpu-clock", "-n", "1000", "--", "sh", "-c",
                     f"for i in $(seq 40); do {TOUCHER} burn 20; done"],
                    preexec_fn=limit, stderr=err)
    check_accounting(r)
    unnamed = [s for s in r["code_sites"]["top"]
               if s["module"] == "toucher" and s["function"] == "[unknown]"]
    assert sum(s["samples"] for s in unnamed) <= r["samples"] // 100, \
        f"toucher's code unnamed: {unnamed}; stderr: {err[0].strip()}"
    site = r["code_sites"]["top"][0]
    assert (site["function"], site["module"]) == ("burn_cpu", "toucher"), f"top site: {site}"
    assert "Too many open files" not in err[0], err[0]


def max_rss_kib(args):
    """Run htmm-sample with args; its peak RSS, in KiB.  (In a build with
    AddressSanitizer, what it frees is held in quarantine: not here.)"""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0").lstrip(":")
    p = subprocess.Popen([SAMPLER] + args, stdin=subprocess.DEVNULL, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        err = p.stderr.read().decode()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if p.returncode is None:
            p.kill()
            p.wait()
    check_can_sample(subprocess.CompletedProcess([], p.returncode, "", err))
    assert p.returncode == 0, f"exit status {p.returncode}: {err.strip()}"
    return usage.ru_maxrss


def test_side_band_memory():
    """The mapping records are replayed and freed as sampling goes: 200000
    of them take no more memory than 100."""
    small = max_rss_kib(["-o", os.devnull, "--", TOUCHER, "remap", "100"])
    big = max_rss_kib(["-o", os.devnull, "--", TOUCHER, "remap", "200000"])
    # Kept whole, they would take 88 bytes each: 17 MiB.
    assert big - small < 6 << 10, f"{big} KiB for 200000 mappings, {small} KiB for 100"


TESTS = [
    ("htmm-sample --help", test_help),
    ("htmm-sample --version", test_version),
    ("a bad event name is an error", test_bad_event),
    ("a bad pid is an error", test_bad_pid),
    ("no command is an error", test_no_command),
    ("a command not found exits 127", test_command_not_found),
    ("PEBS or IBS missing is said", test_missing_pmu),
    ("the command's exit status is passed on", test_exit_status),
    (f"toucher {MIB} MiB, text: every page fault, touch_pages, [anon]", test_toucher_text),
    (f"toucher {MIB} MiB, JSON: every page fault, touch_pages, [anon]", test_toucher_json),
    (f"with -p PID: toucher {MIB} MiB started before", test_toucher_pid),
    ("cpu-clock with callchains: burn_cpu called by main", test_cpu_clock_callchain),
    ("children and their exec are followed", test_children_followed),
    ("with -d: the sampling and the command end in time", test_duration),
    ("SIGINT, to the group or alone: exit 0, ended by signal, every time", test_sigint),
    ("with -d: a command ignoring SIGTERM is killed, the time is -d's", test_duration_kill),
    ("a file name with a newline is named", test_newline_in_name),
    ("40 processes under a 64-file limit: all named", test_many_processes),
    ("200000 mappings: the side band's memory stays bounded", test_side_band_memory),
]


def main():
    print(f"1..{len(TESTS)}", flush=True)
    begin = time.monotonic()
    failed = 0
    for i, (name, fn) in enumerate(TESTS, 1):
        try:
            fn()
            print(f"ok {i} {name}")
        except Skip as e:
            print(f"ok {i} {name} # SKIP {e}")
        except Exception as e:  # an assertion, a timeout, a crash: all fail
            failed += 1
            for line in f"{type(e).__name__}: {e}".splitlines():
                print(f"# {line}")
            print(f"not ok {i} {name}")
        sys.stdout.flush()
    print(f"# htmm-sample: {len(TESTS)} tests in {time.monotonic() - begin:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
