#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The emulated slow tier's test, in the guest (boot.sh --mode slowtier-test,
# QEMU running the plugin qemu/plugin/slowtier.c at its default latency).
#
# Each run is a pointer chase by slowtier-ctl over a buffer bound to a node,
# timed in the guest and counted by the plugin as one of its windows (the
# run's id).  This script prints TAP, one result per run (did it run), and
# the run's figures as a line "# chase id=ID name=NAME node=... loads=...
# ns_per_load=... on_node_pct=..."; the host (qemu/host/run-tests.py) puts them
# beside the plugin's counts of the same window and judges them:
#
#   node0        64 MiB on node 0, every load a miss of the cache model
#   node1        the same on node 1: slower by the added latency
#   node1-fast   node 1 with the added latency turned off (slowtier-ctl
#                fast): as fast as node 0
#   node1-small  64 KiB on node 1, chased over and over: it fits the cache
#                model, so (nearly) no access reaches node 1
#
# The first three take turns, three rounds of them: the host takes each
# one's fastest round, as the one least disturbed by the host's other work
# (the first round is often a third slower than the others, even after the
# warm-up chase).  All run on CPU 0: the plugin's cache model is per CPU.

SIZE=64M
LOADS=2M
ROUNDS="1 2 3"
n=0

# A kmemleak scan (debug kernel) reads all memory: none in the middle of a run.
[ -w /sys/kernel/debug/kmemleak ] && echo scan=off > /sys/kernel/debug/kmemleak

echo "1..$(( $(echo $ROUNDS | wc -w) * 3 + 1 ))"

run() {	# ID NAME CHASE-ARGS...
	id=$1 name=$2
	shift 2
	n=$((n + 1))
	if out=$(slowtier-ctl chase -C 0 -W "$id" "$@" 2>&1); then
		echo "ok $n chase $name (window $id)"
		echo "# chase id=$id name=$name $out"
	else
		echo "not ok $n chase $name (window $id)"
		echo "$out" | sed 's/^/#   /'
	fi
}

# A warm-up, not judged.
slowtier-ctl chase -C 0 -n 0 -s $SIZE -c $LOADS >/dev/null

for r in $ROUNDS; do
	run "${r}1" node0 -n 0 -s $SIZE -c $LOADS
	run "${r}2" node1 -n 1 -s $SIZE -c $LOADS
	slowtier-ctl fast
	run "${r}3" node1-fast -n 1 -s $SIZE -c $LOADS
	slowtier-ctl slow
done
run 100 node1-small -n 1 -s 64K -c $LOADS
