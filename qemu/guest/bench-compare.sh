#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The tiering benchmark, run inside the guest by `make bench`: every
# workload of htmm-workload (hotset, zipf, phase), and Redis (redis), under
# every tiering system the kernel has, one after the other in this boot:
#
#   none                no tiering: where the first touch put the pages
#   allfast             the same, with the emulated slow tier's added
#                       latency off (every access as fast as node 0's): the
#                       bound that placement can approach
#   numa-tiering        NUMA balancing in memory-tiering mode (numa_balancing
#                       = 2) with demotion enabled, as a user gets it
#   numa-tiering-tuned  the same with the promotion rate limit its
#                       documentation recommends: a tenth of the slow node's
#                       write bandwidth (from HMAT)
#   damon               DAMON on physical memory, with its default monitoring
#                       intervals: migrate_hot of node 1's accessed regions
#                       to node 0, migrate_cold of node 0's unaccessed ones
#                       to node 1, nothing else set
#   damon-tuned         the same schemes with the safeguards DAMOS's
#                       documentation offers for them: 'young' page filters
#                       (promote only pages accessed since the last check,
#                       demote only those not) and a size quota of 200 MiB/s
#                       per scheme
#   htmm                htmm-launch, htmm's defaults
#   htmm-tuned          the same with cpu_quota, the least budget of
#                       ksamplingd, at 20% of a cpu instead of 3%: the
#                       hand-raised quota of the series before the budget
#                       grew with the managed process's cpu time
#                       (cpu_share); kept as a reference, since for a
#                       process that keeps one cpu busy the defaults now
#                       give about as much (the kselftests use this quota)
#   htmm+NAME=VALUE     htmm with one of its settings in /sys/kernel/mm/htmm
#                       changed for the run (not in the default list): an
#                       experiment on a default, as in
#                       SYSTEMS=htmm,htmm+hot_threshold=2
#
# The buffer is first touched on node 1 (the slow tier); node 0 is smaller
# than it, so placement matters.
#
# redis: redis-server holds SIZE of 64,000-byte values (keys key:000000000000
# on, 16 pages each), loaded once and moved to node 1 with migratepages(8)
# before each system's run.  redis-benchmark sends GETs for SECONDS over
# eight connections, in passes that take turns: 360 requests to the keys of
# the first HOTSIZE, 40 to any key, so that nine in ten requests go to a
# twelfth of the data (the client has no skewed key distribution of its
# own).  The values are large so that a GET costs memory accesses more
# than system calls, which the emulator makes slow.  The throughput is
# Redis's own count of commands; the client's reports are kept in the log.
#
# Under the emulated slow tier (qemu/plugin/slowtier.c, which `make bench`
# loads), each run is one of the plugin's counting windows, numbered in
# runs.tsv: the plugin counts the run's memory accesses per node.
#
# The raw figures go to the second serial port (or stdout) as files between
# "@@ BEGIN name" and "@@ END name" lines; qemu/host/bench-report.py turns them
# into bench-results/.
#
#   bench-compare.sh [SIZE] [HOTSIZE] [SECONDS] [WORKLOADS] [SYSTEMS]
#
# WORKLOADS and SYSTEMS are comma-separated subsets of the lists above.

size=${1:-768M}
hot=${2:-64M}
secs=${3:-40}
workloads=$(echo "${4:-hotset,zipf,phase,redis}" | tr , ' ')
systems=$(echo "${5:-none,allfast,numa-tiering,numa-tiering-tuned,damon,damon-tuned,htmm,htmm-tuned}" | tr , ' ')
DAMON=/sys/kernel/mm/damon/admin
HTMM=/sys/kernel/mm/htmm
# The results go to the second serial port when the host gave one.
out=/dev/stdout
[ -n "$HTMM_BENCH_OUT" ] && out=/dev/ttyS1

log() { echo "bench: $*"; }
die() { echo "bench: error: $*"; exit 1; }
# A system that cannot be set up: its runs fail, the others go on.
fail() { echo "bench: error: $*"; return 1; }
vmstat() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' /proc/vmstat; }

# The physical range of a node's memory, "start end" in bytes, from the
# spans of its populated zones.
node_range() {
	awk -v n="$1" '
		/^Node/ { node = $2 + 0; sub(",", "", node) }
		node == n && $1 == "spanned" { spanned = $2 }
		node == n && $1 == "start_pfn:" && spanned > 0 {
			if (lo == "" || $2 < lo) lo = $2
			if ($2 + spanned > hi) hi = $2 + spanned
		}
		END { if (lo != "") printf "%.0f %.0f\n", lo * 4096, hi * 4096 }
	' /proc/zoneinfo
}

# The kernel threads whose cpu time counts as tiering cost.
kthreads() {
	for p in /proc/[0-9]*; do
		case "$(cat "$p/comm" 2>/dev/null)" in
		ksamplingd|kmigraterd|kswapd*|kdamond.*) echo "${p#/proc/}" ;;
		esac
	done | paste -sd, -
}

# One DAMOS scheme: damon_scheme DIR ACTION TARGET_NID MIN_ACC MAX_ACC TUNED
damon_scheme() {
	s=$1
	echo "$2" > "$s/action"
	echo "$3" > "$s/target_nid"
	# Every region size and age: the sysfs defaults are 0 to 0, which no
	# region matches.
	echo 0 > "$s/access_pattern/sz/min"
	echo 18446744073709551615 > "$s/access_pattern/sz/max"
	echo 0 > "$s/access_pattern/age/min"
	echo 4294967295 > "$s/access_pattern/age/max"
	echo "$4" > "$s/access_pattern/nr_accesses/min"
	echo "$5" > "$s/access_pattern/nr_accesses/max"
	if [ "$6" = tuned ]; then
		echo 1000 > "$s/quotas/reset_interval_ms"
		echo $((200 << 20)) > "$s/quotas/bytes"
		echo 1 > "$s/filters/nr_filters"
		echo young > "$s/filters/0/type"
		# Filter out (skip) the pages that do (cold) or do not (hot)
		# match 'young'.
		if [ "$2" = migrate_hot ]; then
			echo N > "$s/filters/0/matching"
		else
			echo Y > "$s/filters/0/matching"
		fi
	fi
}

# DAMON on physical memory: one kdamond per node (a kdamond has one
# context in 6.12), each with one scheme.  $1: "tuned" or "".
damon_on() {
	tuned=$1
	[ -d $DAMON ] || fail "DAMON's sysfs interface is not in this kernel" || return
	echo 2 > $DAMON/kdamonds/nr_kdamonds
	for k in 0 1; do
		# kdamond 0 watches node 1 and promotes; kdamond 1 watches
		# node 0 and demotes.
		node=$((1 - k))
		set -- $(node_range $node)
		[ $# -eq 2 ] || fail "no memory on node $node in /proc/zoneinfo" || return
		c=$DAMON/kdamonds/$k/contexts
		echo 1 > $c/nr_contexts
		echo paddr > $c/0/operations
		echo 1 > $c/0/targets/nr_targets
		echo 1 > $c/0/targets/0/regions/nr_regions
		echo "$1" > $c/0/targets/0/regions/0/start
		echo "$2" > $c/0/targets/0/regions/0/end
		echo 1 > $c/0/schemes/nr_schemes
		if [ $k -eq 0 ]; then
			damon_scheme $c/0/schemes/0 migrate_hot 0 1 4294967295 "$tuned"
		else
			damon_scheme $c/0/schemes/0 migrate_cold 1 0 0 "$tuned"
		fi
		echo on > $DAMON/kdamonds/$k/state || fail "kdamond $k did not start" || return
	done
}

damon_off() {
	[ -d $DAMON ] || return 0
	for k in 0 1; do
		[ -e $DAMON/kdamonds/$k/state ] && echo off > $DAMON/kdamonds/$k/state
	done
	echo 0 > $DAMON/kdamonds/nr_kdamonds
}

# Bytes DAMOS applied its action to, over both schemes (the files show
# the figures of the last update_schemes_stats).
damon_applied() {
	for k in 0 1; do
		[ -e $DAMON/kdamonds/$k/state ] &&
			echo update_schemes_stats > $DAMON/kdamonds/$k/state
	done
	cat $DAMON/kdamonds/[01]/contexts/0/schemes/0/stats/sz_applied 2>/dev/null |
		awk '{ s += $1 } END { printf "%.0f\n", s }'
}

system_on() {
	case "$1" in
	none) ;;
	allfast) slowtier-ctl fast || fail "slowtier-ctl failed" ;;
	numa-tiering|numa-tiering-tuned)
		echo 2 > /proc/sys/kernel/numa_balancing || fail "no NUMA balancing" || return
		echo true > /sys/kernel/mm/numa/demotion_enabled
		if [ "$1" = numa-tiering-tuned ]; then
			bw=$(cat /sys/devices/system/node/node1/access0/initiators/write_bandwidth)
			echo $((bw / 10)) > /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps
		fi
		;;
	damon) damon_on "" ;;
	damon-tuned) damon_on tuned ;;
	htmm|htmm-tuned|htmm+*=*)
		[ -d $HTMM ] || fail "htmm is not in this kernel" || return
		case "$1" in
		htmm-tuned) echo 200 > $HTMM/cpu_quota ;;
		htmm+*)
			# htmm with one setting of /sys/kernel/mm/htmm changed
			setting=${1#htmm+}
			name=${setting%%=*}
			case "$name" in */*|.*|'') fail "'$name' is not a setting of htmm" || return ;; esac
			[ -f "$HTMM/$name" ] || fail "htmm has no setting '$name'" || return
			saved_setting="$name=$(cat "$HTMM/$name")"
			echo "${setting#*=}" > "$HTMM/$name" ||
				fail "htmm's $name does not take '${setting#*=}'"
			;;
		esac
		;;
	*) fail "unknown system '$1'" ;;
	esac
}

system_off() {
	[ "$1" = allfast ] && slowtier-ctl slow
	echo 0 > /proc/sys/kernel/numa_balancing
	echo false > /sys/kernel/mm/numa/demotion_enabled
	echo "$rate0" > /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps
	case "$1" in damon*) damon_off ;; esac
	[ -d $HTMM ] && echo "$quota0" > $HTMM/cpu_quota
	if [ -n "$saved_setting" ]; then
		echo "${saved_setting#*=}" > "$HTMM/${saved_setting%%=*}"
		saved_setting=
	fi
}

# Bytes of a size such as 768M.
bytes() {
	case "$1" in
	*[Gg]) echo $(( ${1%[Gg]} << 30 )) ;;
	*[Mm]) echo $(( ${1%[Mm]} << 20 )) ;;
	*[Kk]) echo $(( ${1%[Kk]} << 10 )) ;;
	*) echo "$1" ;;
	esac
}

# Hundredths of a second since boot.
uptime_cs() { awk '{ printf "%.0f\n", $1 * 100 }' /proc/uptime; }

# The guest has no network: server and clients meet on a Unix socket.
REDIS_SOCK=/tmp/redis.sock
REDIS_VALUE=64000
REDIS_SLOT=65536
redis_pid="" launcher=""
rcli() { redis-cli -s $REDIS_SOCK "$@"; }
# Loads KEYS values of SIZE bytes in one server-side script.
REDIS_LOAD="local v = string.rep('x', tonumber(ARGV[2]))
for i = 0, tonumber(ARGV[1]) - 1 do
  redis.call('SET', string.format('key:%012d', i), v)
end
return redis.call('DBSIZE')"

# Start redis-server and load SIZE worth of values: redis_keys keys.
redis_up() {
	for t in redis-server redis-cli redis-benchmark migratepages; do
		command -v $t >/dev/null || fail "$t is not in the guest" || return
	done
	redis_keys=$(( $(bytes "$size") / REDIS_SLOT ))
	redis_hot=$(( $(bytes "$hot") / REDIS_SLOT ))
	redis-server --port 0 --unixsocket $REDIS_SOCK --save "" \
		--appendonly no --logfile /tmp/redis.log &
	redis_pid=$!
	i=0
	until rcli ping >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 300 ] && kill -0 $redis_pid 2>/dev/null ||
			fail "redis-server did not start: $(tail -n 3 /tmp/redis.log)" || return
		sleep 0.2
	done
	t=$(uptime_cs)
	n=$(rcli EVAL "$REDIS_LOAD" 0 $redis_keys $REDIS_VALUE)
	[ "$n" = "$redis_keys" ] || fail "redis holds $n keys, not $redis_keys" || return
	log "redis-server $redis_pid holds $n keys of $REDIS_VALUE bytes" \
		"(loaded in $(( ($(uptime_cs) - t) / 100 )) s):" \
		"$(rcli info memory | grep '^used_memory_human' | tr -d '\r')"
}

redis_down() {
	[ -n "$redis_pid" ] || return 0
	rcli shutdown nosave >/dev/null 2>&1
	wait $redis_pid 2>/dev/null
	redis_pid=""
}

# Redis's count of the commands it processed.
redis_ops() {
	rcli info stats | awk -F: '/^total_commands_processed:/ { print $2 + 0 }'
}

# Cpu time of a task in ms: user or system (/proc/PID/stat, 100 ticks/s).
task_ms() {
	awk -v f="$2" '{ sub(/^.*\) /, ""); print (f == "sys" ? $13 : $12) * 10 }' \
		/proc/$1/stat 2>/dev/null || echo 0
}

kthread_ms() {
	for k in $(echo "$1" | tr , ' '); do
		awk '{ print $1 }' /proc/$k/schedstat 2>/dev/null
	done | awk '{ s += $1 } END { printf "%.0f\n", s / 1e6 }'
}

# The redis workload under the system that is on: the series CSV of
# htmm-workload's format (placement columns empty) on stdout.  $1: the
# system, $2: the plugin's window.
run_redis() {
	kth=$(kthreads)
	if [ "${1#htmm}" != "$1" ]; then
		htmm-launch -q --node 0 --pid $redis_pid &
		launcher=$!
		i=0
		until [ -d $HTMM/sessions/$redis_pid ]; do
			i=$((i + 1))
			[ $i -lt 300 ] && kill -0 $launcher 2>/dev/null ||
				fail "htmm-launch did not attach to redis-server" || return
			sleep 0.1
		done
	fi
	rm -f /tmp/redis-hot.csv /tmp/redis-all.csv
	slowtier-ctl begin "$2"
	t0=$(uptime_cs)
	# A pass's report is written when it ends; the pass still going at the
	# end of the run is cut short.
	while :; do
		redis-benchmark -s $REDIS_SOCK -t get -r $redis_hot -c 8 -n 360 --csv \
			>> /tmp/redis-hot.csv
		redis-benchmark -s $REDIS_SOCK -t get -r $redis_keys -c 8 -n 40 --csv \
			>> /tmp/redis-all.csv
	done 2>/dev/null &
	clients=$!
	echo "t_s,ops,ops_per_s,hot_fast_pct,cold_fast_pct,hit_pct,phase,task_sys_ms,kthread_ms"
	ops0=$(redis_ops)
	sys0=$(task_ms $redis_pid sys)
	last=$ops0
	echo "0,0,0,,,,1,$sys0,$(kthread_ms "$kth")"
	s=1
	while [ $s -le "$secs" ]; do
		# Sleep to the next whole second of the run.
		now=$(uptime_cs)
		left=$(( t0 + s * 100 - now ))
		[ $left -gt 0 ] && sleep "$(( left / 100 )).$(printf %02d $(( left % 100 )))"
		ops=$(redis_ops)
		echo "$s,$(( ops - ops0 )),$(( ops - last )),,,,1,$(task_ms $redis_pid sys),$(kthread_ms "$kth")"
		last=$ops
		s=$((s + 1))
	done
	slowtier-ctl end "$2"
	kill $clients 2>/dev/null
	wait $clients 2>/dev/null
	killall redis-benchmark 2>/dev/null
	if [ -n "$launcher" ]; then
		# SIGTERM: a background job of a non-interactive shell starts
		# with SIGINT ignored, and would never see it.
		kill -TERM $launcher
		wait $launcher
		launcher=""
	fi
	# What the clients measured, per pass of their requests.
	for c in hot all; do
		touch /tmp/redis-$c.csv
		awk -F'"' -v c=$c '$2 == "GET" { n++; s += $4 }
			END { printf "redis-benchmark (%s keys): %d passes, mean %.0f requests/s\n",
			      c, n, n ? s / n : 0 }' /tmp/redis-$c.csv >&2
	done
}

rate0=$(cat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps)
quota0=$(cat $HTMM/cpu_quota 2>/dev/null)
# The baseline: no tiering at all.  NUMA balancing's normal mode (on at boot
# by default) would move pages to the cpus' node as well.
system_off none
COUNTERS="pgmigrate_success pgpromote_success pgdemote_kswapd pgdemote_direct htmm_promoted htmm_demoted"

log "$(uname -r), node 0 $HTMM_FAST_MEM_MB MiB (fast), node 1 $HTMM_SLOW_MEM_MB MiB (slow)," \
	"$(nproc) cpus; workloads: $workloads; systems: $systems;" \
	"buffer $size, hot set $hot, $secs s each"
runs=/tmp/runs.tsv
{
	printf 'workload\tsystem\tseconds\tstatus\tfast_free_mb'
	for k in $COUNTERS; do printf '\t%s' "$k"; done
	printf '\tdamon_applied_bytes\twindow\n'
} > $runs

names=""
window=0
for wl in $workloads; do
	redis_ok=1
	if [ "$wl" = redis ] && ! redis_up; then
		redis_ok=""
		redis_down
	fi
	for sys in $systems; do
		window=$((window + 1))
		system_off "$sys"
		if [ -z "$redis_ok" ] || ! system_on "$sys"; then
			system_off "$sys"
			printf '%s\t%s\t%s\t125\t0' "$wl" "$sys" "$secs" >> $runs
			for k in $COUNTERS; do printf '\t0' >> $runs; done
			printf '\t0\t%s\n' $window >> $runs
			echo "t_s,ops,ops_per_s,hot_fast_pct,cold_fast_pct,hit_pct,phase,task_sys_ms,kthread_ms" \
				> "/tmp/series-$wl-$sys.csv"
			names="$names $wl-$sys"
			continue
		fi
		if [ "$wl" = redis ]; then
			# Every page of the server back on the slow node.
			migratepages $redis_pid 0 1 ||
				log "migratepages of redis-server failed"
		fi
		sync
		free_mb=$(awk '/MemFree/ { print int($4 / 1024) }' /sys/devices/system/node/node0/meminfo)
		for k in $COUNTERS; do eval "c0_$k=\$(vmstat $k)"; done
		if [ "$wl" = redis ]; then
			cmd="run_redis $sys $window"
		else
			cmd="htmm-workload -w $wl -s $size -k $hot -t $secs -n 1 -f 0 -K $(kthreads) -W $window"
			case "$sys" in htmm*) cmd="htmm-launch -q -- $cmd" ;; esac
		fi
		log "$wl under $sys: $cmd"
		# htmm's view of the session: its last second kept for the log,
		# and every 4 s a line of how promotion goes.
		if [ -d $HTMM ]; then
			rm -f /tmp/session.trace
			wt0=$(uptime_cs) n=0
			while :; do
				for d in /sys/kernel/mm/htmm/sessions/[0-9]*; do
					[ -d "$d" ] && (cd "$d" && grep -s . * > /tmp/session.new) &&
						mv /tmp/session.new /tmp/session.txt
				done
				n=$((n + 1))
				[ -f /tmp/session.txt ] && [ $((n % 4)) -eq 0 ] &&
					echo "t=$(( ($(uptime_cs) - wt0) / 100 )) $(grep -E '^(promoted|demoted|pages_hot|pages_warm|hot_threshold|dropped|requeued|fault|unarmed|scan_armed|scan_light|scan_backoff|hinted|histogram):' \
						/tmp/session.txt | tr '\n' ' ') $(cd $HTMM && grep -s . sample_period cpu_budget ksamplingd_cpu kmigraterd_cpu | tr '\n' ' ')" >> /tmp/session.trace
				sleep 1
			done &
			watcher=$!
		fi
		$cmd > "/tmp/series-$wl-$sys.csv" 2>/tmp/run.err
		rc=$?
		if [ -d $HTMM ]; then
			kill $watcher
			wait $watcher 2>/dev/null
			[ -f /tmp/session.trace ] &&
				sed 's/^/bench: session at /' /tmp/session.trace
			[ -f /tmp/session.txt ] &&
				echo "bench: the session's last figures: $(tr '\n' ' ' < /tmp/session.txt)"
			rm -f /tmp/session.txt
		fi
		applied=$(damon_applied)
		system_off "$sys"
		sed 's/^/bench: /' /tmp/run.err
		[ $rc -eq 0 ] || log "$wl under $sys failed with status $rc"
		tail -n 1 "/tmp/series-$wl-$sys.csv" | sed "s/^/bench: last row: /"
		row=$(printf '%s\t%s\t%s\t%s\t%s' "$wl" "$sys" "$secs" "$rc" "$free_mb")
		for k in $COUNTERS; do
			eval "v=\$(( \$(vmstat $k) - c0_$k ))"
			row=$(printf '%s\t%s' "$row" "$v")
		done
		printf '%s\t%s\t%s\n' "$row" "${applied:-0}" $window >> $runs
		names="$names $wl-$sys"
		# Let the freed memory settle before the next run.
		sleep 2
	done
	[ "$wl" = redis ] && redis_down
done

emit() { echo "@@ BEGIN $2"; cat "$1"; echo "@@ END $2"; }
{
	emit $runs runs.tsv
	for r in $names; do emit "/tmp/series-$r.csv" "series/$r.csv"; done
	echo "@@ DONE"
} > $out
log "done"
