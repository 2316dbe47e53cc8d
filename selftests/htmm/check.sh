#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# htmm-check, the hardware check users run: it refuses to claim anything
# on a machine without a PMU source, and with --hint-faults it runs the
# whole check and reports figures read from the session.

. "$(dirname "$0")/tap.sh"

HTMM=/sys/kernel/mm/htmm

tap_need htmm-check
tap_plan 3

out=/tmp/check.out
if grep -Eq 'pebs|ibs' $HTMM/source; then
	skip refuses_without_a_pmu_source "this machine has one"
else
	htmm-check -t 10 >$out 2>&1
	rc=$?
	[ "$rc" = 2 ] && grep -q "no PMU source" $out &&
		grep -q "nothing checked" $out && ! grep -Eq '^(PASS|FAIL)' $out
	result $? "refuses_without_a_pmu_source # got $rc: $(tr '\n' ' ' <$out)"
fi

htmm-check -t 5 >$out 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q "at least 10" $out
result $? "refuses_a_run_too_short_to_judge # got $rc: $(tr '\n' ' ' <$out)"

# A whole run: the figures are the session's, and the verdict says what
# it is worth.  Its source setting is put back.  On the debug kernel first
# touches and hint faults are ten times slower, and a 15-second run could
# end before the scan had armed a page the workload had touched: there the
# run is three times longer.
t=15
[ -n "${HTMM_DEBUG_KERNEL:-}" ] && t=45
before=$(cat $HTMM/source)
htmm-check --hint-faults -s 64M -k 8M -t $t >$out 2>&1
rc=$?
after=$(cat $HTMM/source)
samples=$(sed -n 's/^samples  *\([0-9]*\) .*/\1/p' $out)
hot=$(sed -n 's/^hot set on node 0  *\([0-9.]*\)% .*/\1/p' $out)
verdict=$(tail -n 1 $out)
{ [ "$rc" = 0 ] || [ "$rc" = 1 ]; } &&
	grep -q '^source  *hint-fault$' $out &&
	[ -n "$samples" ] && [ "$samples" -gt 0 ] && [ -n "$hot" ] &&
	case "$verdict" in
	PASS*"not the PMU"*) [ "$rc" = 0 ] ;;
	FAIL*"not the PMU"*) [ "$rc" = 1 ] ;;
	*) false ;;
	esac && [ "$before" = "$after" ]
result $? "reports_a_run_from_the_session # got $rc, source '$before' then '$after': $(tr '\n' '|' <$out)"

rm -f $out
exit $failed
