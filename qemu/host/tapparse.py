# SPDX-License-Identifier: GPL-2.0
"""Read test results out of the guest's logs.

Two nested-TAP dialects arrive from the guest:

* KUnit's KTAP in the kernel console log, nested by four spaces of indent,
  interleaved with other kernel messages and prefixed by printk timestamps;
* kselftest's TAP from run_kselftest.sh, nested by a "# " prefix per level.

Both are reduced to a flat list of leaf results.  A parent whose children
all passed but which itself reports "not ok" (a test binary that crashed
after its last subtest, say) is a failure of its own, and a plan that
promised more results than arrived yields one "missing" failure per result
that never came.  The console log is also searched for kernel reports
(oops, BUG, WARNING, panic, KASAN, lockdep, kmemleak, ...).
"""

import re
from dataclasses import dataclass, field

PASS, FAIL, SKIP = "ok", "FAIL", "skip"

_RESULT = re.compile(r"^(not ok|ok)\s+(\d+)\s*(?:-\s*)?([^#]*?)\s*(?:#\s*(.*))?$")
_PLAN = re.compile(r"^1\.\.(\d+)")
_STAMP = re.compile(r"^\[\s*\d+\.\d+\] ?")


@dataclass
class Result:
    name: str
    status: str
    note: str = ""


@dataclass
class _Node:
    name: str = ""
    plan: int = -1
    children: list = field(default_factory=list)  # (name, ok, directive, node)
    leaves: list = field(default_factory=list)     # flattened results


def _status(ok, directive):
    d = (directive or "").strip().upper()
    if d.startswith("SKIP"):
        return SKIP
    if d.startswith("XFAIL"):
        return PASS
    if d.startswith("TODO"):
        return SKIP
    return PASS if ok else FAIL


def _close(node, parent_ok, parent_directive, name, prefix):
    """Turn a finished node's children into flat results named prefix.name."""
    out = []
    for r in node.leaves:
        out.append(Result(f"{name}.{r.name}" if name else r.name, r.status, r.note))
    if node.plan >= 0 and len(node.children) < node.plan:
        for i in range(len(node.children) + 1, node.plan + 1):
            out.append(Result(f"{name}.#{i}" if name else f"#{i}", FAIL,
                              "missing: the plan promised it, no result came"))
    st = _status(parent_ok, parent_directive)
    if st == FAIL and all(r.status != FAIL for r in out):
        out.append(Result(name or prefix, FAIL, f"reported not ok {parent_directive or ''}".strip()))
    if st == SKIP and not out:
        out.append(Result(name or prefix, SKIP, parent_directive or ""))
    return out


class _NestedTap:
    """A nested TAP stream fed line by line as (depth, text)."""

    def __init__(self):
        self.stack = [_Node()]   # stack[d] collects results at depth d

    def feed(self, depth, text):
        m = _PLAN.match(text)
        if m:
            while len(self.stack) <= depth:
                self.stack.append(_Node())
            if self.stack[depth].plan < 0:
                self.stack[depth].plan = int(m.group(1))
            return
        m = _RESULT.match(text)
        if not m:
            return
        ok = m.group(1) == "ok"
        name = m.group(3).strip() or f"#{m.group(2)}"
        directive = m.group(4) or ""
        while len(self.stack) <= depth:
            self.stack.append(_Node())
        # Everything deeper than this line belongs to it.
        child = _Node()
        if len(self.stack) > depth + 1:
            child = self.stack[depth + 1]
            # Fold anything still deeper into child (unclosed levels).
            for deeper in self.stack[depth + 2:]:
                child.leaves.extend(deeper.leaves)
            del self.stack[depth + 1:]
        node = self.stack[depth]
        if child.children or child.leaves or child.plan >= 0:
            flat = _close(child, ok, directive, name, name)
        else:
            flat = [Result(name, _status(ok, directive), directive.strip())]
        # Results are numbered 1, 2, ... in order: a repeated or skipped
        # number would otherwise let a stream satisfy its plan twice over.
        expect = len(node.children) + 1
        if int(m.group(2)) != expect:
            flat.append(Result(f"{name} (numbering)", FAIL,
                               f"numbered {m.group(2)} where {expect} was due"))
        node.children.append(name)
        node.leaves.extend(flat)

    def results(self):
        # Levels still open when the stream stopped (the guest died inside
        # a test): what arrived counts, their plans' missing entries fail,
        # and so does the parent's own missing result.
        while len(self.stack) > 1:
            inner = self.stack.pop()
            self.stack[-1].leaves.extend(_close(inner, True, "", "(unfinished)", ""))
        return _close(self.stack[0], True, "", "", "")


def parse_kselftest(text):
    """Results of run_kselftest.sh output, one per harness test case."""
    tap = _NestedTap()
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        depth = 0
        while line.startswith("# ") or line == "#":
            line = line[2:]
            depth += 1
        if _RESULT.match(line) or _PLAN.match(line):
            tap.feed(depth, line)
    out = tap.results()
    for r in out:
        # "selftests: htmm: topology.global.two_nodes" -> "htmm:topology.two_nodes"
        r.name = re.sub(r"^selftests:\s*(\S+):\s*", r"\1:", r.name).replace(".global.", ".")
    return out


# The harness's line for an assertion that failed, "tiering.c:12:b:Expected
# 100 (100) == total (150)", and its place, which its TH_LOG() lines share.
_EXPECTED = re.compile(r"^(\S+?:\d+:[^:\s]+:)Expected ")


def _log_excerpt(block, limit):
    """At most @limit lines of @block: its first line (the "RUN" line), the
    assertions that failed, each with the lines of its place that follow
    it (its TH_LOG() message), then as many of the last lines as fit, with
    a line saying how many were left out.  A case that logged more than
    @limit lines before it failed must not lose the line that says why."""
    if len(block) <= limit:
        return block
    keep, place = set(), None
    for i, line in enumerate(block):
        m = _EXPECTED.match(line)
        if m:
            place = m.group(1)
            keep.add(i)
        elif place and line.startswith(place):
            keep.add(i)
        else:
            place = None
    keys = sorted(keep - {0})[:max(limit // 2 - 1, 1)]
    room = max(limit - 2 - len(keys), 1)
    picked = {0, *keys, *range(max(len(block) - room, 1), len(block))}
    out, last = [], 0
    for i in sorted(picked):
        if i > last + 1:
            out.append(f"... ({i - last - 1} left out)")
        out.append(block[i])
        last = i
    return out


def kselftest_log(text, name, limit=20):
    """The harness's lines for the kselftest case @name (as parse_kselftest()
    names it, "htmm:tiering.fixture.case"): from its "RUN" line to its
    verdict, without the TAP nesting, at most @limit of them (about; see
    _log_excerpt()).  What a failed case printed (its measurements, the
    assertion that failed), so that a run's output says why, not only
    what."""
    prog, _, case = name.partition(":")[2].partition(".")
    if not case:
        return []
    if "." not in case:
        case = "global." + case
    block, inside, ours = [], False, False
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        while line.startswith("# "):
            line = line[2:]
        words = line.split()
        # "selftests: htmm: tiering": the program whose output follows.
        if words[:1] == ["selftests:"] and len(words) == 3:
            ours = words[2] == prog
        if not ours:
            continue
        if words[:2] == ["RUN", case]:
            block, inside = [line.strip()], True
        elif inside:
            block.append(line.strip())
            if len(words) == 2 and words[1] == case and \
                    words[0] in ("OK", "FAIL", "SKIP", "XFAIL"):
                inside = False
    return _log_excerpt(block, limit)


def parse_kunit(console):
    """KUnit results from the console log, one per test case (or param)."""
    tap = _NestedTap()
    in_ktap = False
    for raw in console.splitlines():
        line = _STAMP.sub("", raw.rstrip("\r"))
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if not in_ktap:
            if stripped.startswith("KTAP version") and indent == 0:
                in_ktap = True
            continue
        if indent % 4:
            continue
        depth = indent // 4
        if _RESULT.match(stripped) or _PLAN.match(stripped):
            tap.feed(depth, stripped)
    if not in_ktap:
        return []
    return tap.results()


# Kernel reports that fail a run wherever they appear in the console.
REPORTS = [
    (re.compile(r"\bOops\b|general protection fault"), "oops"),
    (re.compile(r"\bBUG:|kernel BUG at"), "BUG"),
    (re.compile(r"^WARNING:|\] WARNING:|------------\[ cut here \]"), "WARNING"),
    (re.compile(r"Kernel panic"), "panic"),
    (re.compile(r"KASAN:"), "KASAN"),
    (re.compile(r"UBSAN:"), "UBSAN"),
    (re.compile(r"possible circular locking|possible recursive locking|"
                r"inconsistent lock state|lock inversion|suspicious RCU usage|"
                r"DEBUG_LOCKS_WARN_ON|turning off the locking correctness"), "lockdep"),
    (re.compile(r"kmemleak: \d+ new suspected memory leaks|unreferenced object 0x"), "kmemleak"),
    (re.compile(r"soft lockup|hard LOCKUP|rcu_\w+ detected stalls|"
                r"blocked for more than \d+ seconds"), "hang"),
    # No test expects the OOM killer: one that runs means a test (or the
    # kernel) lost track of memory, and its victim's results are suspect.
    (re.compile(r"invoked oom-killer|Out of memory: Killed process"), "OOM kill"),
]


def kernel_reports(console):
    """(kind, line) for each kernel report in the console log."""
    found = []
    for raw in console.splitlines():
        line = raw.rstrip("\r")
        for rx, kind in REPORTS:
            if rx.search(line):
                found.append((kind, _STAMP.sub("", line).strip()))
                break
    return found
