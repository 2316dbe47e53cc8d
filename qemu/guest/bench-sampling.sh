#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Figures of the sampling pipeline, run inside the guest by `make bench`:
# a workload touches every page of a buffer for a while, first alone, then
# under htmm-launch; printed are the workload's rate both ways, the samples
# htmm consumed per second, ksamplingd's cpu share against its quota, and
# its cpu time per consumed sample.
#
#   bench-sampling.sh [SIZE] [SECONDS]

size=${1:-128M}
secs=${2:-10}
HTMM=/sys/kernel/mm/htmm

vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
# ksamplingd's cpu time in ns (schedstat), or from its tick counts.
ksd_ns() {
	if [ -r "/proc/$ksd/schedstat" ]; then
		cut -d' ' -f1 "/proc/$ksd/schedstat"
	else
		awk -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)" \
			'{ print ($14 + $15) * 1000000000 / hz }' "/proc/$ksd/stat"
	fi
}
now_ns() { awk '{ printf "%.0f\n", $1 * 1000000000 }' /proc/uptime; }

ksd=$(pidof ksamplingd)
if [ -z "$ksd" ] || [ ! -d $HTMM ]; then
	echo "bench-sampling: htmm is not in this kernel"
	exit 1
fi

echo "== workload alone: htmm-touch -H -s $size -t $secs (4 KiB pages)"
base=$(htmm-touch -H -s "$size" -t "$secs" | sed -n 's/.* \([0-9]*\) pages\/s$/\1/p')
echo "   $base pages/s"

echo "== the same under htmm-launch (source: $(cat $HTMM/source), quota $(cat $HTMM/cpu_quota)/1000 cpu)"
s0=$(vmstat htmm_sampled); l0=$(vmstat htmm_sample_lost)
h0=$(vmstat numa_hint_faults); c0=$(ksd_ns); t0=$(now_ns)
htmm-launch -q -- htmm-touch -H -s "$size" -t "$secs" > /tmp/bench.out &
launcher=$!
# After the first touches of the buffer: the steady state.
sleep 3
cm=$(ksd_ns); tm=$(now_ns); sm=$(vmstat htmm_sampled)
wait $launcher
t1=$(now_ns); c1=$(ksd_ns)
managed=$(sed -n 's/.* \([0-9]*\) pages\/s$/\1/p' /tmp/bench.out)
s1=$(vmstat htmm_sampled); l1=$(vmstat htmm_sample_lost); h1=$(vmstat numa_hint_faults)
echo "   $managed pages/s"

awk -v base="$base" -v managed="$managed" -v s=$((s1 - s0)) -v l=$((l1 - l0)) \
    -v h=$((h1 - h0)) -v cpu=$((c1 - c0)) -v wall=$((t1 - t0)) \
    -v quota="$(cat $HTMM/cpu_quota)" -v period="$(cat $HTMM/sample_period)" \
    -v scpu=$((c1 - cm)) -v swall=$((t1 - tm)) -v ss=$((s1 - sm)) 'BEGIN {
	w = wall / 1e9
	printf "samples consumed       %d (%.0f/s), lost %d, hint faults %d\n", s, s / w, l, h
	printf "ksamplingd cpu         %.2f%% of one cpu over the run (quota %.1f%%)\n", \
		100 * cpu / wall, quota / 10
	printf "  after the first 3 s  %.2f%% of one cpu, %.0f samples/s; sample period now %d\n", \
		100 * scpu / swall, ss / (swall / 1e9), period
	if (s > 0)
		printf "ksamplingd cost        %.0f ns per consumed sample\n", cpu / s
	if (base > 0)
		printf "workload under htmm    %.1f%% of its rate alone\n", 100 * managed / base
}'
