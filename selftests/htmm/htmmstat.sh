#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# htmmstat, as a user runs it: one line per interval, of one session or of
# the system, JSON for scripts, the histogram, and clear errors.

. "$(dirname "$0")/tap.sh"

tap_need htmmstat htmm-touch
tap_plan 7

# A managed workload: 32 MiB on node 1, 8 MiB of it hot.  It runs until
# this script ends it (SIGTERM, passed on by htmm-launch), so that no check
# depends on how fast the guest runs; -t only bounds it should the script
# die first.
htmm-launch -q -- htmm-touch -s 32M -w 8M -t 900 -n 1 -H >/dev/null &
launcher=$!
pid=""
i=0
# The session appears once the launcher has started it: within 60 s even
# on a loaded debug kernel.
while [ -z "$pid" ] && [ $i -lt 600 ] && kill -0 $launcher 2>/dev/null; do
	pid=$(ls /sys/kernel/mm/htmm/sessions 2>/dev/null | head -n 1)
	[ -n "$pid" ] || sleep 0.1
	i=$((i + 1))
done
if [ -z "$pid" ]; then
	echo "# no htmm session appeared for the managed workload"
	kill $launcher 2>/dev/null
	pid=0
fi

# Wait until the workload is placed, sampled and counted: its session has
# samples and kmigraterd has counted its pages.  How long that takes
# depends on the kernel (a debug kernel's first touches and census are
# slow, and ksamplingd stretches its scan under its quota), so wait for
# it, up to 2 minutes, rather than for a fixed time.
sess=/sys/kernel/mm/htmm/sessions/$pid
i=0
while [ $i -lt 1200 ] && kill -0 $launcher 2>/dev/null; do
	s=$(cat $sess/sampled 2>/dev/null || echo 0)
	f=$(cat $sess/pages_fast 2>/dev/null || echo 0)
	l=$(cat $sess/pages_slow 2>/dev/null || echo 0)
	[ "${s:-0}" -gt 0 ] && [ $(( ${f:-0} + ${l:-0} )) -gt 0 ] && break
	sleep 0.1
	i=$((i + 1))
done

# Three JSON lines for the session, each with its figures.
htmmstat -p "$pid" --json 1 3 >/tmp/htmmstat.json 2>/tmp/htmmstat.err
rc=$?
lines=$(grep -c '^{"pid":'"$pid"',' /tmp/htmmstat.json)
keys=$(grep -c '"sampled_per_s":[0-9.]*,.*"promoted_per_s":[0-9.]*,.*"pages_fast":[0-9]*,"pages_slow":[0-9]*,"fast_pct":[0-9.]*,"pages_hot":[0-9]*,"hot_threshold":[0-9]*,"ksamplingd_cpu_pct":[0-9.]*,"kmigraterd_cpu_pct":[0-9.]*}$' /tmp/htmmstat.json)
[ "$rc" = 0 ] && [ "$lines" = 3 ] && [ "$keys" = 3 ]
result $? "json_has_a_line_per_interval # rc $rc, $lines lines, $keys whole"

# The workload is sampled: a line shows samples, and pages were counted.
# Samples come in bursts, a scan window at a time, and a window may be
# seconds apart: read a line a second until one shows some, up to 2
# minutes.
i=0
until grep -q '"sampled_per_s":[1-9]' /tmp/htmmstat.json || [ $i -ge 120 ] ||
	! kill -0 $launcher 2>/dev/null; do
	htmmstat -p "$pid" --json 1 1 >>/tmp/htmmstat.json 2>/dev/null
	i=$((i + 1))
done
grep -q '"sampled_per_s":[1-9]' /tmp/htmmstat.json &&
	grep -q '"pages_slow":[1-9]\|"pages_fast":[1-9]' /tmp/htmmstat.json
result $? "json_shows_the_samples_and_pages # $(grep -c . /tmp/htmmstat.json) lines read; $(tail -n 1 /tmp/htmmstat.json)"

# The text view: a header, then a line per interval, the histogram after.
htmmstat -p "$pid" --histogram -n 2 1 >/tmp/htmmstat.txt 2>&1
rc=$?
[ "$rc" = 0 ] && [ "$(grep -c '^ *samples ' /tmp/htmmstat.txt)" = 2 ] &&
	grep -q 'access counts' /tmp/htmmstat.txt && grep -Eq '^ +(1|2-3|4-7) +[0-9]+' /tmp/htmmstat.txt
result $? "text_view_with_histogram # rc $rc: $(tr '\n' '|' </tmp/htmmstat.txt | cut -c1-300)"

# System-wide: at least this session.
htmmstat --json 1 1 >/tmp/htmmstat.sys 2>&1
grep -q '"pid":0,"sessions":[1-9]' /tmp/htmmstat.sys
result $? "system_view_counts_the_sessions # $(cat /tmp/htmmstat.sys)"

# Not root: the session's figures are root's, and it says so, exit 1.
su -s /bin/sh -c "htmmstat -p $pid 1 1" nobody >/dev/null 2>/tmp/htmmstat.err
rc=$?
[ "$rc" = 1 ] && grep -q "readable by root only" /tmp/htmmstat.err
result $? "not_root_is_told_the_figures_are_roots # rc $rc: $(cat /tmp/htmmstat.err)"

# End the workload, and wait until its session is gone.
kill -TERM $launcher
wait $launcher
i=0
while [ -d "/sys/kernel/mm/htmm/sessions/$pid" ] && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done

# No session for the pid: an error that says so, exit 1.
htmmstat -p "$pid" 1 1 >/dev/null 2>/tmp/htmmstat.err
rc=$?
[ "$rc" = 1 ] && grep -q "no htmm session for pid $pid" /tmp/htmmstat.err
result $? "missing_session_is_an_error # rc $rc: $(cat /tmp/htmmstat.err)"

# Bad arguments: exit 2, with the usage.
htmmstat -p abc >/dev/null 2>/tmp/htmmstat.err
rc=$?
[ "$rc" = 2 ] && grep -q "bad pid" /tmp/htmmstat.err
result $? "bad_arguments_are_refused # rc $rc"

exit $failed
