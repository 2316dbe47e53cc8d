#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The demonstration that `make demo` runs inside the guest.
echo
echo "=== htmm demo: $(uname -sr), $(nproc) CPUs ==="
echo
echo "NUMA nodes (node 0: CPUs and fast memory; node 1: memory only, slower):"
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
echo "Running a workload under htmm-launch: 64 MiB in 4 KiB pages placed on"
echo "node 1 (the slow tier), every page touched for 6 s. Each second, what"
echo "ksamplingd made of the samples of its session"
echo "(/sys/kernel/mm/htmm/sessions/PID/):"
echo
htmm-launch -- htmm-touch -s 64M -t 6 -n 1 -H &
launcher=$!
pid=""
i=0
while [ -z "$pid" ] && [ $i -lt 50 ]; do
	pid=$(ls $HTMM/sessions 2>/dev/null | head -n 1)
	[ -n "$pid" ] || sleep 0.1
	i=$((i + 1))
done
printf "  %4s %10s %12s %12s %8s %10s\n" "s" "samples" "fast tier" "slow tier" "lost" "ksampl.cpu"
t=0
while [ -n "$pid" ] && [ -d "$HTMM/sessions/$pid" ]; do
	d=$HTMM/sessions/$pid
	printf "  %4d %10s %12s %12s %8s %9s%%\n" $t "$(cat $d/sampled 2>/dev/null)" \
		"$(cat $d/fast 2>/dev/null)" "$(cat $d/slow 2>/dev/null)" \
		"$(cat $d/lost 2>/dev/null)" \
		"$(awk '{ printf "%.1f", $1 / 10 }' $HTMM/ksamplingd_cpu)"
	sleep 1
	t=$((t + 1))
done
wait $launcher
echo
echo "The samples found the workload's pages on node 1, the slow tier. Moving"
echo "hot pages to node 0 is the next stage of htmm (promotion and demotion)."
echo
echo "=== demo done ==="
