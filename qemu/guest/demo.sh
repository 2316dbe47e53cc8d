#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demonstration that `make demo` runs inside the guest.
echo
echo "=== htmm demo: $(uname -sr), $(nproc) CPUs ==="
echo
echo "NUMA nodes (node 0: CPUs and fast memory; node 1: memory only, slower;"
echo "node 2: a DIMM left offline, no memory until it is onlined):"
for d in /sys/devices/system/node/node[0-9]*; do
	n=${d##*node}
	mem=$(awk '/MemTotal/ { printf "%d MiB", $4 / 1024 }' "$d/meminfo")
	free=$(awk '/MemFree/ { printf "%d MiB", $4 / 1024 }' "$d/meminfo")
	cpus=$(cat "$d/cpulist")
	printf "  node %s: %-10s total, %-10s free, CPUs: %s\n" "$n" "$mem" "$free" "${cpus:-none}"
done
echo
echo "Memory tiers (lower id = faster), from ACPI HMAT:"
for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
	[ -e "$t/nodelist" ] || continue
	printf "  %-14s nodes %s\n" "${t##*/}" "$(cat "$t/nodelist")"
done
echo
HTMM=/sys/kernel/mm/htmm
if [ ! -d $HTMM ]; then
	echo "htmm is not in this kernel: the patch series adds it."
	echo
	echo "=== demo done ==="
	exit 0
fi

echo "htmm is in this kernel. Sampling source: $(cat $HTMM/source)"
echo
echo "Running a workload under htmm-launch: 128 MiB in 4 KiB pages placed on"
echo "node 1 (the slow tier). Its first 16 MiB are the hot set, touched over"
echo "and over; the other 112 MiB are touched once every 8 s. Each second,"
echo "its session (/sys/kernel/mm/htmm/sessions/PID/): the samples, the hot"
echo "threshold, the pages kmigraterd counted per tier and as hot, and the"
echo "pages it moved:"
echo
htmm-launch -- htmm-touch -s 128M -w 16M -t 30 -n 1 -H >/tmp/demo-touch.out &
launcher=$!
pid=""
i=0
while [ -z "$pid" ] && [ $i -lt 50 ]; do
	pid=$(ls $HTMM/sessions 2>/dev/null | head -n 1)
	[ -n "$pid" ] || sleep 0.1
	i=$((i + 1))
done
printf "  %3s %8s %6s %6s %10s %10s %8s %9s %8s %7s %7s\n" "s" "samples" "period" \
	"thresh" "node 0 pg" "node 1 pg" "hot pg" "promoted" "demoted" "ksampl" "kmigr"
t=0
while [ -n "$pid" ] && [ -d "$HTMM/sessions/$pid" ]; do
	d=$HTMM/sessions/$pid
	row=$(cat $d/sampled $HTMM/sample_period $d/hot_threshold $d/pages_fast \
		$d/pages_slow $d/pages_hot $d/promoted $d/demoted 2>/dev/null | tr '\n' ' ')
	# The session may end between two reads: print whole rows only.
	[ $(echo $row | wc -w) -eq 8 ] || break
	printf "  %3d %8s %6s %6s %10s %10s %8s %9s %8s %6s%% %6s%%\n" $t $row \
		"$(awk '{ printf "%.1f", $1 / 10 }' $HTMM/ksamplingd_cpu)" \
		"$(awk '{ printf "%.1f", $1 / 10 }' $HTMM/kmigraterd_cpu)"
	sleep 1
	t=$((t + 1))
done
wait $launcher
cat /tmp/demo-touch.out
echo
# What happened in this run, as the workload read it back at its end.
set -- $(sed -n 's/.*at the end, \([0-9.]*\)% of the hot set.* and \([0-9.]*\)% of the rest.*/\1 \2/p' \
	/tmp/demo-touch.out)
if [ $# -eq 2 ]; then
	echo "In this run, $1% of the hot set (4096 pages) ended on node 0, and"
	echo "$2% of the pages touched only every 8 s (28672 pages), with node 0"
	echo "roomy enough for all of them."
else
	echo "The workload did not report where its pages ended up."
fi
echo
echo "=== demo done ==="
