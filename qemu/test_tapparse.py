# SPDX-License-Identifier: GPL-2.0
"""Tests of the host runner's log reading (run by `make test` on the host).

A runner that misreads a log can turn a crashed guest into a green run, so
each way a guest run can go wrong has a case here.
"""

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
"""
    kinds = [k for k, _ in tp.kernel_reports(console)]
    assert kinds == ["WARNING", "WARNING", "BUG", "oops", "kmemleak", "WARNING", "panic"]


def test_clean_boot_has_no_reports():
    console = """\
[    0.0] Linux version 6.12.117 (htmm@htmm)
[    0.1] ACPI: HMAT: Memory Flags:0001 Processor Domain:0 Memory Domain:1
[    0.2] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
[    0.3] kmemleak: Kernel memory leak detector initialized (mem pool available: 15767)
[    0.4] Run /init as init process
"""
    assert tp.kernel_reports(console) == []


ALL = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
