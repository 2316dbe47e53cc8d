# SPDX-License-Identifier: GPL-2.0
"""The expected results of a test run, and the check of a run against them.

A runner that only counts what arrived cannot see what never ran: a test
binary dropped from the build, a KUnit suite dropped from the config, a
skip that a regression caused.  qemu/host/expected-results lists every unit of
the suite (a kselftest binary or script, a KUnit suite, a host test
script, the slow-tier test), how many results it reports, and which of
them may be skipped on which kernel:

    # kind      unit             results  allowed skips
    kselftest   htmm:stress      12       plain=inject_*,fault_*
    kunit       htmm_ring        9
    host        perf-rb          15

The unit of a result is the longest listed unit that its name equals or
begins with, followed by a dot; a unit named "*" takes every result of its
kind (the slow-tier test's results have no common prefix).  The skip patterns (fnmatch, comma
separated, no spaces) match the part of the name after the unit's; plain=
applies to the plain kernel, debug= to the debug kernel.

check() returns one failed result for each way a run departs from the
list: a unit with fewer or more results than listed, a result of no listed
unit, a result reported twice, a skip that is not allowed.
"""

import fnmatch
import os
from dataclasses import dataclass, field

import tapparse as tp

KINDS = ("kselftest", "kunit", "host", "slowtier")


class ManifestError(Exception):
    pass


@dataclass
class Unit:
    kind: str
    name: str
    count: int
    skips: dict = field(default_factory=dict)   # kernel -> [patterns]


def parse(text, path="expected-results"):
    units = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        f = line.split()
        if len(f) < 3 or f[0] not in KINDS or not f[2].isdigit():
            raise ManifestError(f"{path}:{n}: want 'KIND UNIT COUNT [plain=..] [debug=..]'"
                                f", KIND one of {', '.join(KINDS)}: {raw.strip()!r}")
        u = Unit(f[0], f[1], int(f[2]))
        for opt in f[3:]:
            kernel, _, pats = opt.partition("=")
            if kernel not in ("plain", "debug") or not pats:
                raise ManifestError(f"{path}:{n}: bad skip list {opt!r}")
            u.skips[kernel] = pats.split(",")
        if u.name in units:
            raise ManifestError(f"{path}:{n}: {u.name} listed twice")
        units[u.name] = u
    if not units:
        raise ManifestError(f"{path}: no unit listed")
    return units


def load(path):
    with open(path) as f:
        return parse(f.read(), os.path.basename(path))


def unit_of(units, kind, name):
    """The listed unit of a result, or None."""
    best = None
    for u in units.values():
        if u.kind != kind:
            continue
        if u.name == "*" and best is None:
            best = u
        elif (name == u.name or name.startswith(u.name + ".")) and \
                (best is None or best.name == "*" or len(u.name) > len(best.name)):
            best = u
    return best


def check(units, results, kernel, kinds=None):
    """Failed results for each departure of @results from @units.

    @results: (kind, Result) pairs as the runner tallied them; only kinds
    that the manifest knows are judged.  @kernel: "plain" or "debug".
    @kinds: the kinds this run was meant to produce (default: all), so that
    a host-only run is not failed for the guest's missing units.
    """
    kinds = set(kinds or KINDS)
    out = []
    seen, count = set(), {name: 0 for name in units}
    for kind, r in results:
        if kind not in KINDS:
            continue
        u = unit_of(units, kind, r.name)
        if u is None:
            out.append(tp.Result(f"{kind} {r.name}", tp.FAIL,
                                 "not in qemu/host/expected-results: list it there"))
            continue
        count[u.name] += 1
        if (kind, r.name) in seen:
            out.append(tp.Result(f"{kind} {r.name}", tp.FAIL, "reported twice"))
        seen.add((kind, r.name))
        if r.status == tp.SKIP:
            case = r.name if u.name == "*" else \
                r.name[len(u.name) + 1:] if r.name != u.name else ""
            allowed = u.skips.get(kernel, [])
            if not any(fnmatch.fnmatchcase(case, p) for p in allowed):
                out.append(tp.Result(f"{kind} {r.name}", tp.FAIL,
                                     f"skipped, which qemu/host/expected-results does not "
                                     f"allow on the {kernel} kernel ({r.note or 'no reason given'})"))
    for name, u in units.items():
        if u.kind not in kinds or count[name] == u.count:
            continue
        what = "no result at all" if not count[name] else f"{count[name]} results"
        out.append(tp.Result(f"{u.kind} {name}", tp.FAIL,
                             f"{what}, {u.count} expected (qemu/host/expected-results)"))
    return out
