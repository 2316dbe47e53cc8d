#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Figures of promotion and demotion, run inside the guest by
# `make bench-tiering`: a buffer first touched on node 1 (the slow tier), of
# which a hot set is touched over and over and the rest every 8 s, runs
# under htmm-launch.  htmm-touch reports each second the share of the hot
# set and of the rest on node 0 (read with move_pages(2)); printed are the
# seconds until 90% of the hot set was on node 0, the share of the rest that
# ended there, kmigraterd's and ksamplingd's cpu shares, the pages moved,
# and the promotion throughput over the busiest second.
#
#   bench-tiering.sh [SIZE] [HOTSIZE] [SECONDS]

size=${1:-128M}
hot=${2:-16M}
secs=${3:-30}
HTMM=/sys/kernel/mm/htmm

vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
# A kernel thread's cpu time in ns (schedstat), or from its tick counts.
cpu_ns() {
	if [ -r "/proc/$1/schedstat" ]; then
		cut -d' ' -f1 "/proc/$1/schedstat"
	else
		awk -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)" \
			'{ print ($14 + $15) * 1000000000 / hz }' "/proc/$1/stat"
	fi
}
now_ns() { awk '{ printf "%.0f\n", $1 * 1000000000 }' /proc/uptime; }

kmd=$(pidof kmigraterd)
ksd=$(pidof ksamplingd)
if [ -z "$kmd" ] || [ -z "$ksd" ] || [ ! -d $HTMM ]; then
	echo "bench-tiering: htmm (with kmigraterd) is not in this kernel"
	exit 1
fi

echo "== htmm-launch -- htmm-touch -H -s $size -w $hot -t $secs -n 1 -v"
echo "   (source: $(cat $HTMM/source), cooling $(cat $HTMM/cooling_period_ms) ms," \
	"rate limit $(cat $HTMM/promote_rate_mb) MiB/s)"
p0=$(vmstat htmm_promoted); d0=$(vmstat htmm_demoted)
m0=$(cpu_ns "$kmd"); s0=$(cpu_ns "$ksd"); t0=$(now_ns)
out=/tmp/bench-tiering.out
htmm-launch -q -- htmm-touch -H -s "$size" -w "$hot" -t "$secs" -n 1 -v > $out &
launcher=$!
# The busiest second of promotion, from the vmstat counter.
best=0
last=$(vmstat htmm_promoted)
while kill -0 $launcher 2>/dev/null; do
	sleep 1
	cur=$(vmstat htmm_promoted)
	[ $((cur - last)) -gt $best ] && best=$((cur - last))
	last=$cur
done
wait $launcher
t1=$(now_ns); m1=$(cpu_ns "$kmd"); s1=$(cpu_ns "$ksd")
p1=$(vmstat htmm_promoted); d1=$(vmstat htmm_demoted)
sed 's/^/   /' $out

awk -v wall=$((t1 - t0)) -v kmd=$((m1 - m0)) -v ksd=$((s1 - s0)) \
    -v prom=$((p1 - p0)) -v dem=$((d1 - d0)) -v best=$best '
	# The lines of each second ("N s: ..., hot set X% on node 0, rest
	# Y%"), not the summary of htmm-touch, whose words are in another order.
	/ s: .*hot set/ {
		for (i = 1; i <= NF; i++) {
			if ($i == "set") hot = $(i + 1) + 0
			if ($i == "rest") rest = $(i + 1) + 0
		}
		if (t90 == "" && hot >= 90) t90 = $2 + 0
	}
	END {
		printf "== time to 90%% of the hot set on node 0: %s\n", t90 == "" ? "never" : t90 " s"
		printf "== at the end: hot set %.1f%%, rest %.1f%% on node 0\n", hot, rest
		printf "== pages moved: %d promoted, %d demoted\n", prom, dem
		printf "== promotion throughput, busiest second: %.1f MiB/s\n", best * 4 / 1024
		printf "== kmigraterd cpu: %.2f%% of one cpu; ksamplingd: %.2f%%\n", 100 * kmd / wall, 100 * ksd / wall
	}' $out
