#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# htmm-launch, as a user runs it: the command is managed from its first
# instruction, its exit status and signals come through, errors are clear,
# and --pid attaches to a running process until interrupted.

. "$(dirname "$0")/tap.sh"

SESSIONS=/sys/kernel/mm/htmm/sessions

tap_need htmm-launch
tap_plan 7

# The command sees its own session: it was managed before it ran.
htmm-launch -q -- sh -c "test -d $SESSIONS/\$\$"
result $? "command_is_managed_from_its_start"

htmm-launch -q -- sh -c 'exit 7'
rc=$?
[ "$rc" = 7 ]
result $? "exit_status_comes_through # got $rc"

htmm-launch -q -- sh -c 'kill -TERM $$'
rc=$?
[ "$rc" = 143 ]
result $? "death_by_signal_is_128_plus_signal # got $rc"

htmm-launch -q -- /nonexistent/command 2>/tmp/launch.err
rc=$?
[ "$rc" = 127 ] && grep -q /nonexistent/command /tmp/launch.err
result $? "missing_command_is_127 # got $rc"

# Node 1 is the guest's slow tier: htmm refuses it, and says why.
htmm-launch -q --node 1 -- true 2>/tmp/launch.err
rc=$?
[ "$rc" = 1 ] && grep -q EINVAL /tmp/launch.err
result $? "slow_node_is_refused_with_a_message # got $rc: $(cat /tmp/launch.err)"

# The summary reports the samples of the run.
htmm-launch -- htmm-touch -s 8M -t 1 -n 1 2>/tmp/launch.err >/dev/null
rc=$?
[ "$rc" = 0 ] && grep -Eq 'htmm_sampled +\+[1-9]' /tmp/launch.err
result $? "summary_reports_samples # got $rc: $(tr '\n' ' ' </tmp/launch.err)"

# --pid: attach to a running process until told to stop, then end.
sleep 30 &
victim=$!
htmm-launch -q --pid $victim &
launcher=$!
# Up to 5 s, 20 s on the debug kernel.
tries=50
[ -n "${HTMM_DEBUG_KERNEL:-}" ] && tries=200
i=0
while [ ! -d "$SESSIONS/$victim" ] && [ $i -lt $tries ]; do
	sleep 0.1
	i=$((i + 1))
done
attached=$([ -d "$SESSIONS/$victim" ] && echo yes)
# SIGTERM: a background job of a script ignores SIGINT.
kill -TERM $launcher
wait $launcher
rc=$?
ended=$([ ! -d "$SESSIONS/$victim" ] && echo yes)
alive=$(kill -0 $victim 2>/dev/null && echo yes)
[ "$attached" = yes ] && [ "$rc" = 0 ] && [ "$ended" = yes ] && [ "$alive" = yes ]
result $? "pid_mode_attaches_and_ends_on_sigterm # attached=$attached rc=$rc ended=$ended alive=$alive"
kill $victim 2>/dev/null
wait $victim 2>/dev/null

exit $failed
