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
if [ -d /sys/kernel/mm/htmm ]; then
	echo "htmm is in this kernel: /sys/kernel/mm/htmm"
else
	echo "htmm is not in this kernel yet: the patch series adds it."
fi
echo
echo "=== demo done ==="
