# SPDX-License-Identifier: GPL-2.0
"""Tests of the host runner's log reading (run by `make test` on the host).

A runner that misreads a log can turn a crashed guest into a green run, so
each way a guest run can go wrong has a case here.
"""

import manifest
import tapparse as tp

KSELFTEST_OK = """\
TAP version 13
1..1
# timeout set to 600
# selftests: htmm: topology
# TAP version 13
# 1..3
# # Starting 3 tests from 1 test cases.
# #  RUN           global.a ...
# #            OK  global.a
# ok 1 global.a
# ok 2 global.b
# ok 3 global.c # SKIP no sizes
# # Totals: pass:2 fail:0 xfail:0 xpass:0 skip:1 error:0
ok 1 selftests: htmm: topology
"""

KUNIT = """\
[    0.500000] KTAP version 1
[    0.500001] 1..2
[    0.500002]     KTAP version 1
[    0.500003]     # Subtest: htmm_ring
[    0.500004]     # module: htmm
[    0.500005]     1..2
[    0.500006]     ok 1 wraps
[    0.500007] some unrelated kernel message
[    0.500008]         KTAP version 1
[    0.500009]         # Subtest: straddles
[    0.500010]         ok 1 page 0
[    0.500011]         not ok 2 page 1
[    0.500012]     not ok 2 straddles
[    0.500013] # htmm_ring: pass:1 fail:1 skip:0 total:2
[    0.500014] not ok 1 htmm_ring
[    0.500015]     KTAP version 1
[    0.500016]     # Subtest: htmm_hot
[    0.500017]     1..1
[    0.500018]     ok 1 bins # SKIP no data
[    0.500019] ok 2 htmm_hot
"""


def names(results, status=None):
    return [r.name for r in results if status is None or r.status == status]


def test_kselftest_leaves_named_by_binary():
    r = tp.parse_kselftest(KSELFTEST_OK)
    assert names(r) == ["htmm:topology.a", "htmm:topology.b", "htmm:topology.c"]
    assert names(r, tp.SKIP) == ["htmm:topology.c"]
    assert not names(r, tp.FAIL)


def test_kselftest_failed_case_fails():
    r = tp.parse_kselftest(KSELFTEST_OK.replace("# ok 2 global.b", "# not ok 2 global.b")
                           .replace("ok 1 selftests", "not ok 1 selftests"))
    assert names(r, tp.FAIL) == ["htmm:topology.b"]


def test_kselftest_binary_crash_after_subtests_fails():
    # Every case passed, then the binary died: the binary's own "not ok".
    r = tp.parse_kselftest(KSELFTEST_OK.replace("ok 1 selftests: htmm: topology",
                                                "not ok 1 selftests: htmm: topology # exit=139"))
    assert names(r, tp.FAIL) == ["htmm:topology"]


def test_kselftest_missing_cases_fail():
    # The binary promised 3 cases, two came, then it was killed.
    log = KSELFTEST_OK.replace("# ok 3 global.c # SKIP no sizes\n", "")
    log = log.replace("ok 1 selftests: htmm: topology", "not ok 1 selftests: htmm: topology # TIMEOUT")
    r = tp.parse_kselftest(log)
    assert len(names(r, tp.FAIL)) == 1
    assert "missing" in [x for x in r if x.status == tp.FAIL][0].note


def test_kselftest_stream_cut_short_fails():
    # The guest died inside the binary: no closing line for it at all.
    log = KSELFTEST_OK.split("# ok 2 global.b")[0]
    r = tp.parse_kselftest(log)
    assert names(r, tp.PASS) == ["(unfinished).a"]
    # Two cases of the binary and the binary itself never reported.
    assert names(r, tp.FAIL) == ["(unfinished).#2", "(unfinished).#3", "#1"]


def test_kselftest_binary_without_cases():
    log = "TAP version 13\n1..2\n# selftests: htmm: x\nnot ok 1 selftests: htmm: x # exit=1\n" \
          "ok 2 selftests: htmm: y # SKIP\n"
    r = tp.parse_kselftest(log)
    assert names(r, tp.FAIL) == ["htmm:x"]
    assert names(r, tp.SKIP) == ["htmm:y"]


def test_kunit_nested_params_and_timestamps():
    r = tp.parse_kunit(KUNIT)
    assert names(r, tp.PASS) == ["htmm_ring.wraps", "htmm_ring.straddles.page 0"]
    assert names(r, tp.FAIL) == ["htmm_ring.straddles.page 1"]
    assert names(r, tp.SKIP) == ["htmm_hot.bins"]


def test_kunit_absent_is_empty():
    assert tp.parse_kunit("[    0.1] Linux version 6.12\n") == []


def test_kunit_missing_suite_fails():
    cut = KUNIT.split("[    0.500015]")[0]
    r = tp.parse_kunit(cut)
    assert "#2" in " ".join(names(r, tp.FAIL))


def test_reports_found():
    console = """\
[    1.0] Linux version 6.12
[    2.0] ------------[ cut here ]------------
[    2.1] WARNING: CPU: 0 PID: 1 at mm/htmm/x.c:10 f+0x1/0x2
[    3.0] BUG: KASAN: slab-use-after-free in f+0x1/0x2
[    4.0] Oops: general protection fault, probably for non-canonical address
[    5.0] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)
[    6.0] WARNING: possible circular locking dependency detected
[    7.0] Kernel panic - not syncing: Fatal exception
[    8.0] INFO: task kmigraterd:42 blocked for more than 120 seconds.
[    9.0] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [ksamplingd:40]
[   10.0] htmm-touch invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE)
[   10.1] Out of memory: Killed process 77 (htmm-touch) total-vm:1048576kB
"""
    kinds = [k for k, _ in tp.kernel_reports(console)]
    assert kinds == ["WARNING", "WARNING", "BUG", "oops", "kmemleak", "WARNING", "panic",
                     "hang", "BUG", "OOM kill", "OOM kill"], kinds


def test_clean_boot_has_no_reports():
    console = """\
[    0.0] Linux version 6.12.117 (htmm@htmm)
[    0.1] ACPI: HMAT: Memory Flags:0001 Processor Domain:0 Memory Domain:1
[    0.2] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
[    0.3] kmemleak: Kernel memory leak detector initialized (mem pool available: 15767)
[    0.4] Run /init as init process
"""
    assert tp.kernel_reports(console) == []


def test_kselftest_repeated_numbers_fail():
    # Two "ok 1" lines and a plan of 2: the count matches, the numbers not.
    text = KSELFTEST_OK.replace("# 1..3", "# 1..2").replace(
        "# ok 2 global.b", "# ok 1 global.b").replace("# ok 3 global.c # SKIP no sizes\n", "")
    failed = names(tp.parse_kselftest(text), tp.FAIL)
    assert failed == ["htmm:topology.b (numbering)"], failed


def test_kselftest_empty_plan_is_a_skip():
    # "1..0" runs nothing: it must not vanish, but show as a skip that the
    # manifest can refuse.
    text = ("TAP version 13\n1..1\n# selftests: htmm: sysfs\n# TAP version 13\n"
            "# 1..0 # SKIP no htmm\nok 1 selftests: htmm: sysfs # SKIP\n")
    res = tp.parse_kselftest(text)
    assert [(r.name, r.status) for r in res] == [("htmm:sysfs", tp.SKIP)], res


MANIFEST = """\
# kind     unit            results  skips
kselftest  htmm:topology   3        plain=c debug=c
kselftest  htmm:stress     1
kunit      htmm_ring       3
kunit      htmm_hot        1        plain=bins
"""


def _run(text=KSELFTEST_OK, kunit=KUNIT):
    return ([("kselftest", r) for r in tp.parse_kselftest(text)] +
            [("kunit", r) for r in tp.parse_kunit(kunit)])


def _fails(results, kernel="plain", kinds=None):
    return sorted(r.name for r in manifest.check(manifest.parse(MANIFEST), results,
                                                 kernel, kinds))


def test_manifest_missing_unit_fails():
    # htmm:stress never ran (dropped from the build): named as missing.
    assert _fails(_run()) == ["kselftest htmm:stress"], _fails(_run())


def test_manifest_complete_run_passes():
    stress = ("TAP version 13\n1..1\n# selftests: htmm: stress\n# 1..1\n# ok 1 global.x\n"
              "ok 1 selftests: htmm: stress\n")
    run = _run() + [("kselftest", r) for r in tp.parse_kselftest(stress)]
    assert _fails(run) == [], _fails(run)
    # htmm_hot's skip is allowed on the plain kernel only.
    assert _fails(run, "debug") == ["kunit htmm_hot.bins"], _fails(run, "debug")


def test_manifest_unlisted_and_duplicate_results_fail():
    extra = _run() + [("kselftest", tp.Result("htmm:new.case", tp.PASS)),
                      ("kselftest", tp.Result("htmm:stress.x", tp.PASS)),
                      ("kselftest", tp.Result("htmm:stress.x", tp.PASS))]
    f = _fails(extra)
    assert f == ["kselftest htmm:new.case", "kselftest htmm:stress",
                 "kselftest htmm:stress.x"], f


def test_manifest_unexpected_skip_fails():
    # b is skipped where only c may be: a regression's skip is a failure.
    text = KSELFTEST_OK.replace("# ok 2 global.b", "# ok 2 global.b # SKIP no htmm")
    f = _fails(_run(text), kinds=["kselftest"])
    assert f == ["kselftest htmm:stress", "kselftest htmm:topology.b"], f


def test_manifest_empty_plan_fails():
    text = ("TAP version 13\n1..1\n# selftests: htmm: topology\n# 1..0 # SKIP gone\n"
            "ok 1 selftests: htmm: topology # SKIP\n")
    f = _fails(_run(text), kinds=["kselftest"])
    assert "kselftest htmm:topology" in f, f


def test_manifest_bad_lines_are_refused():
    for bad in ("kselftest htmm:x\n", "bogus htmm:x 1\n", "kunit a 1 sometimes=x\n",
                "kunit a 1\nkunit a 2\n", "# nothing\n"):
        try:
            manifest.parse(bad)
        except manifest.ManifestError:
            continue
        raise AssertionError(f"accepted {bad!r}")


KSELFTEST_FAILED_CASE = """\
TAP version 13
1..1
# selftests: htmm: tiering
# TAP version 13
# 1..2
# #  RUN           tiering.a ...
# #            OK  tiering.a
# ok 1 tiering.a
# #  RUN           tiering.b ...
# # tiering.c:10:b:after 2.0 s: period 4
# # tiering.c:12:b:Expected 100 (100) == total (150)
# # b: Test failed
# #          FAIL  tiering.b
# not ok 2 tiering.b
not ok 1 selftests: htmm: tiering
"""


def test_kselftest_log_of_a_failed_case():
    r = tp.parse_kselftest(KSELFTEST_FAILED_CASE)
    assert names(r, tp.FAIL) == ["htmm:tiering.tiering.b"]
    log = tp.kselftest_log(KSELFTEST_FAILED_CASE, "htmm:tiering.tiering.b")
    assert log[0] == "RUN           tiering.b ...", log
    assert "tiering.c:12:b:Expected 100 (100) == total (150)" in log, log
    assert log[-1] == "FAIL  tiering.b", log
    assert not tp.kselftest_log(KSELFTEST_FAILED_CASE, "htmm:tiering.tiering.c")
    # Cut short, it keeps the RUN line, the failed assertion and the verdict.
    assert tp.kselftest_log(KSELFTEST_FAILED_CASE, "htmm:tiering.tiering.b", 2) == [
        "RUN           tiering.b ...", "... (1 left out)",
        "tiering.c:12:b:Expected 100 (100) == total (150)", "... (1 left out)",
        "FAIL  tiering.b"]


def test_kselftest_log_keeps_the_assertion_of_a_long_case():
    """A case that logged more than the excerpt holds before it failed:
    the excerpt still shows what it expected, with its message."""
    lines = ["# selftests: htmm: tiering", "# 1..1", "# #  RUN           tiering.b ..."]
    lines += [f"# # tiering.c:10:b:{t} s: period 4" for t in range(40)]
    lines += ["# # tiering.c:12:b:Expected 0 (0) <= t90 (-1)",
              "# # tiering.c:12:b:90% of the hot set never reached node 0"]
    lines += [f"# # tiering.c:14:b:cleanup {t}" for t in range(30)]
    lines += ["# # b: Test failed", "# #          FAIL  tiering.b", "# not ok 1 tiering.b",
              "not ok 1 selftests: htmm: tiering"]
    log = tp.kselftest_log("\n".join(lines) + "\n", "htmm:tiering.tiering.b")
    assert log[0] == "RUN           tiering.b ...", log
    i = log.index("tiering.c:12:b:Expected 0 (0) <= t90 (-1)")
    assert log[i + 1] == "tiering.c:12:b:90% of the hot set never reached node 0", log
    assert log[-1] == "FAIL  tiering.b", log
    assert "... (40 left out)" in log, log
    assert len(log) <= 20 + 2, log


def test_kselftest_log_of_a_global_case():
    log = tp.kselftest_log(KSELFTEST_OK, "htmm:topology.a")
    assert log == ["RUN           global.a ...", "OK  global.a"], log


ALL = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
