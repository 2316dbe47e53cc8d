#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the htmm guest: two NUMA nodes described to the kernel by ACPI SRAT
# and HMAT, node 0 with every CPU and fast memory (the top tier), node 1 with
# slower memory and no CPU (a lower tier), as CXL or persistent memory is;
# and a third, node 2, whose only memory is a 128 MiB DIMM that the guest
# leaves offline at boot: a memoryless node, which the memory-hotplug tests
# online and take offline again.
#
#   boot.sh --kernel BZIMAGE --initrd CPIO [--mode test|demo|bench|shell|slowtier-test]
#           [--fast-mem 1G] [--slow-mem 1G] [--cpus 2] [--timeout SECONDS]
#           [--log FILE] [--tap FILE] [--append "KERNEL ARGS"]
#           [--slow-tier NS|default [--slow-tier-out FILE] [--slow-tier-llc SIZE]]
#
# test:  the kernel console goes to --log, and the guest writes its test
#        output (TAP) to a second serial port, saved in --tap.
# slowtier-test: the same with the emulated slow tier's own test
#        (qemu/guest/slowtier-test.sh) in place of the kselftests.
# demo:  the guest runs the demonstration and prints it here; the whole
#        console is also kept in --log.
# bench: the same with a benchmark (qemu/guest/bench-*.sh); with --tap, its
#        results are written to the second serial port, saved there.
# shell: an interactive shell on the serial console (Ctrl-A X quits QEMU).
#
# --slow-tier makes node 1 really slower under TCG: QEMU loads the plugin
# build/plugin/slowtier.so (qemu/plugin/slowtier.c, `make plugin`), which
# adds NS nanoseconds to every load or store that misses its model of a
# last-level cache (--slow-tier-llc, default 8M) and goes to node 1, and
# writes per-node access counts every second to --slow-tier-out (default:
# beside --log, NAME.slowtier.csv, or build/slowtier.csv).  NS 0 only
# counts.  SLOWTIER_PLUGIN in the environment names another plugin file.
# "default" is the plugin's calibrated latency, 400 ns
# (DEFAULT_LATENCY_NS in slowtier.c): a dependent-load miss to node 1 then
# takes 3.1 times as long as one to node 0, as HMAT's 250 ns against 80 ns
# say.  Measured with slowtier-ctl chase over 64 MiB on the build machine
# (QEMU 7.2 TCG, 2 cores): a miss to node 0 took 190 ns with the plugin,
# 2.125 times that is 400 ns more for node 1, which then took 606 to 654 ns
# against node 0's 165 to 207 (3.1 to 3.7 times).  Slower or faster hosts
# need another figure.
#
# Exit status: QEMU's, or 124 when the guest ran over --timeout.

set -euo pipefail

kernel="" initrd="" mode=test fast=1G slow=1G cpus=2 timeout_s=1800
log="" tap="" append=""
slow_tier="" slow_tier_out="" slow_tier_llc=""

usage() { sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--initrd) initrd=$2; shift 2 ;;
	--mode) mode=$2; shift 2 ;;
	--fast-mem) fast=$2; shift 2 ;;
	--slow-mem) slow=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--timeout) timeout_s=$2; shift 2 ;;
	--log) log=$2; shift 2 ;;
	--tap) tap=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--slow-tier) slow_tier=$2; shift 2 ;;
	--slow-tier-out) slow_tier_out=$2; shift 2 ;;
	--slow-tier-llc) slow_tier_llc=$2; shift 2 ;;
	-h|--help) usage ;;
	*) echo "boot.sh: unknown option $1" >&2; usage ;;
	esac
done

die() { echo "boot.sh: $*" >&2; exit 2; }

[ -f "$kernel" ] || die "no kernel image '$kernel': run 'make kernel'"
[ -f "$initrd" ] || die "no initramfs '$initrd': run 'make initramfs'"
command -v qemu-system-x86_64 >/dev/null ||
	die "qemu-system-x86_64 is missing: run 'make deps' (installs qemu-system-x86)"

# Sizes like 512M or 2G, in MiB.
to_mb() {
	case "$1" in
	*[Gg]) echo $(( ${1%[Gg]} * 1024 )) ;;
	*[Mm]) echo "${1%[Mm]}" ;;
	*[!0-9]*|"") die "bad memory size '$1' (use 512M or 2G)" ;;
	*) echo "$1" ;;
	esac
}
fast_mb=$(to_mb "$fast")
slow_mb=$(to_mb "$slow")
[ "$fast_mb" -ge 256 ] || die "--fast-mem must be at least 256M"
[ "$slow_mb" -ge 128 ] || die "--slow-mem must be at least 128M"
case "$cpus" in ''|*[!0-9]*|0) die "bad --cpus '$cpus'" ;; esac
case "$mode" in test|demo|bench|shell|slowtier-test) ;; *) die "bad --mode '$mode'" ;; esac
if [ -n "$slow_tier" ]; then
	top=$(cd "$(dirname "$0")/../.." && pwd)
	plugin=${SLOWTIER_PLUGIN:-$top/build/plugin/slowtier.so}
	[ -f "$plugin" ] || die "no plugin '$plugin': run 'make plugin'"
	case "$slow_tier" in
	default) ;;
	*[!0-9]*|"") die "bad --slow-tier '$slow_tier' (nanoseconds, or default)" ;;
	esac
	case "$slow_tier_out$slow_tier_llc" in
	*,*) die "no comma in --slow-tier-out or --slow-tier-llc" ;;
	esac
fi

last_cpu=$((cpus - 1))
args=(
	-machine pc,hmat=on -cpu max -smp "$cpus"
	-m "$((fast_mb + slow_mb))M,slots=1,maxmem=$((fast_mb + slow_mb + 128))M"
	-object "memory-backend-ram,id=m0,size=${fast_mb}M"
	-object "memory-backend-ram,id=m1,size=${slow_mb}M"
	-numa "node,nodeid=0,cpus=0-$last_cpu,memdev=m0"
	-numa node,nodeid=1,memdev=m1,initiator=0
	# Node 2: a 128 MiB DIMM that the guest finds at boot and leaves
	# offline (a memoryless node), as fast as node 0 once a test onlines
	# it; see the memory-hotplug kselftests.
	-numa node,nodeid=2,initiator=0
	-object memory-backend-ram,id=m2,size=128M
	-device pc-dimm,id=dimm2,memdev=m2,node=2
	# Latency and bandwidth as seen from node 0's CPUs: local DRAM, and a
	# CXL-like tier about three times slower.
	-numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=80
	-numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=20G
	-numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=250
	-numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=5G
	-numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-latency,latency=80
	-numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-bandwidth,bandwidth=20G
	-kernel "$kernel" -initrd "$initrd"
	-display none -no-reboot
)
cmdline="console=ttyS0 panic=-1 htmm_mode=$mode htmm_fast_mem_mb=$fast_mb htmm_slow_mem_mb=$slow_mb"

case "$mode" in
test|slowtier-test)
	[ -n "$log" ] && [ -n "$tap" ] || die "$mode mode needs --log and --tap"
	: > "$log"
	: > "$tap"
	args+=(-monitor none
	       -chardev "file,id=con,path=$log" -serial chardev:con
	       -chardev "file,id=tap,path=$tap" -serial chardev:tap)
	;;
demo|bench)
	[ -n "$log" ] || log=/dev/null
	args+=(-monitor none
	       -chardev "stdio,id=con,signal=on,logfile=$log" -serial chardev:con)
	cmdline="$cmdline loglevel=4"
	# A bench's results, apart from what it prints.
	if [ -n "$tap" ]; then
		: > "$tap"
		args+=(-chardev "file,id=out,path=$tap" -serial chardev:out)
		cmdline="$cmdline htmm_bench_out=1"
	fi
	;;
shell)
	args+=(-serial mon:stdio)
	cmdline="$cmdline loglevel=4"
	timeout_s=0
	echo "boot.sh: interactive guest; Ctrl-A X quits QEMU, 'poweroff -f' ends it from inside"
	;;
esac
[ -z "$append" ] || cmdline="$cmdline $append"
args+=(-append "$cmdline")

# The emulated slow tier.  The plugin classifies accesses by the physical
# address QEMU's plugin API reports, so boot.sh tells it where each node is,
# laid out as QEMU's pc machine lays out RAM (pc_init1() in
# hw/i386/pc_piix.c): all of it below 4 GiB when it is under 3.5 GiB, else
# the first 3 GiB below 4 GiB (gigabyte_align) and the rest from 4 GiB.
# Node 0 is the first --fast-mem of RAM, node 1 the next --slow-mem.
#
# QEMU before 8.2 reports a RAM access's address not as the guest-physical
# address but as ram_addr + offset in the RAM container (block->offset +
# offset + block->mr->addr in qemu_plugin_hwaddr_phys_addr(); fixed by
# "plugin: Simplify struct qemu_plugin_hwaddr", QEMU 8.2).  The nodes'
# backends are the first RAM blocks QEMU allocates: m0 at ram_addr 0, m1 at
# fast_mb MiB, each also at its own offset in the container, so node 1's
# RAM is reported fast_mb MiB above its offset in the container.  Then each
# range is given as QEMU reports it, with @GPA, its guest-physical start.
slow_tier_args() {
	local mib=$((1024 * 1024)) total below old=0 ver
	total=$(( (fast_mb + slow_mb) * mib ))
	below=$total
	[ "$total" -lt $((0xe0000000)) ] || below=$((0xc0000000))
	ver=$(qemu-system-x86_64 --version |
		sed -n 's/^QEMU emulator version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
	# shellcheck disable=SC2086
	set -- $ver
	if [ $# -eq 2 ] && { [ "$1" -lt 8 ] || { [ "$1" -eq 8 ] && [ "$2" -lt 2 ]; }; }; then
		old=1
	fi
	# Each node's RAM offsets [a, b), cut at the end of low memory.
	piece() {	# NAME A B REPORTED_OFFSET
		local a=$2 b=$3 gpa start
		[ "$a" -lt "$b" ] || return 0
		gpa=$a
		[ "$a" -lt "$below" ] || gpa=$((0x100000000 + a - below))
		if [ $old = 1 ]; then start=$((a + $4)); else start=$gpa; fi
		printf ',%s=0x%x-0x%x' "$1" "$start" $((start + b - a))
		[ "$start" = "$gpa" ] || printf '@0x%x' "$gpa"
	}
	span() {	# NAME A B REPORTED_OFFSET: [a, b) as one or two pieces
		if [ "$2" -lt "$below" ] && [ "$3" -gt "$below" ]; then
			piece "$1" "$2" "$below" "$4"
			piece "$1" "$below" "$3" "$4"
		else
			piece "$1" "$2" "$3" "$4"
		fi
	}
	span fast 0 $((fast_mb * mib)) 0
	span slow $((fast_mb * mib)) "$total" $((fast_mb * mib))
}

if [ -n "$slow_tier" ]; then
	if [ -z "$slow_tier_out" ]; then
		if [ -n "$log" ] && [ "$log" != /dev/null ]; then
			slow_tier_out=${log%.log}.slowtier.csv
		else
			slow_tier_out=$top/build/slowtier.csv
		fi
	fi
	opts="$(slow_tier_args),out=$slow_tier_out"
	[ "$slow_tier" = default ] || opts="$opts,latency=$slow_tier"
	[ -z "$slow_tier_llc" ] || opts="$opts,llc=$slow_tier_llc"
	args+=(-plugin "$plugin$opts")
	echo "boot.sh: emulated slow tier, $([ "$slow_tier" = default ] &&
		echo "the default latency" || echo "$slow_tier ns") per node-1 miss;" \
		"counts in $slow_tier_out" >&2
fi

if [ "$timeout_s" -gt 0 ]; then
	exec timeout --foreground -k 10 "$timeout_s" qemu-system-x86_64 "${args[@]}" </dev/null
fi
exec qemu-system-x86_64 "${args[@]}"
