#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# libhtmm and the tools on a kernel without htmm, the host's: the calls
# fail with ENOSYS (userspace/tests/nosys_test.c), and htmm-launch and
# htmmstat say why and exit 1 without running anything.  HTMM_USERSPACE
# is the directory of the built tools (default: build/userspace of this
# tree).  On a kernel with htmm every case is skipped.

here=$(cd "$(dirname "$0")" && pwd)
userspace=${HTMM_USERSPACE:-$here/../../../build/userspace}
test=$userspace/tests/nosys_test

if [ ! -x "$test" ]; then
	echo "1..1"
	echo "not ok 1 nosys_test is built # $test is missing: make userspace"
	exit 1
fi
out=$(mktemp)
trap 'rm -f "$out" "$out.ran"' EXIT
# nosys_test prints the plan and its 5 cases; ours follow, numbered on.
"$test" >"$out"
failed=$?
sed '1s/^1\.\.5$/1..8/' "$out"
n=5

result() { # ok name detail
	n=$((n + 1))
	if [ -d /sys/kernel/mm/htmm ]; then
		echo "ok $n $2 # SKIP this kernel has htmm"
	elif [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2 # $3"
		failed=1
	fi
}

"$userspace/htmm-launch" -- touch "$out.ran" >"$out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "htmm_start: this kernel has no htmm.*(ENOSYS)" "$out" &&
	[ ! -e "$out.ran" ]
result $? launch_refuses_and_runs_nothing "exit $rc, ran: $([ -e "$out.ran" ] && echo yes || echo no): $(cat "$out")"

"$userspace/htmm-launch" -p $$ >"$out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "htmm_start: this kernel has no htmm.*(ENOSYS)" "$out"
result $? launch_attach_says_enosys "exit $rc: $(cat "$out")"

"$userspace/htmmstat" 1 1 >"$out" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q "htmm is not in the running kernel" "$out"
result $? htmmstat_says_htmm_is_not_there "exit $rc: $(cat "$out")"

exit $failed
