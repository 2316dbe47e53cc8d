#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot the htmm guest: two NUMA nodes described to the kernel by ACPI SRAT
# and HMAT, node 0 with every CPU and fast memory (the top tier), node 1 with
# slower memory and no CPU (a lower tier), as CXL or persistent memory is.
#
#   boot.sh --kernel BZIMAGE --initrd CPIO [--mode test|demo|bench|shell]
#           [--fast-mem 1G] [--slow-mem 1G] [--cpus 2] [--timeout SECONDS]
#           [--log FILE] [--tap FILE] [--append "KERNEL ARGS"]
#
# test:  the kernel console goes to --log, and the guest writes its test
#        output (TAP) to a second serial port, saved in --tap.
# demo:  the guest runs the demonstration and prints it here; the whole
#        console is also kept in --log.
# bench: the same with a benchmark (qemu/bench-*.sh); with --tap, its
#        results are written to the second serial port, saved there.
# shell: an interactive shell on the serial console (Ctrl-A X quits QEMU).
#
# Exit status: QEMU's, or 124 when the guest ran over --timeout.

set -euo pipefail

kernel="" initrd="" mode=test fast=1G slow=1G cpus=2 timeout_s=1800
log="" tap="" append=""

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
case "$mode" in test|demo|bench|shell) ;; *) die "bad --mode '$mode'" ;; esac

last_cpu=$((cpus - 1))
args=(
	-machine pc,hmat=on -cpu max -smp "$cpus" -m "$((fast_mb + slow_mb))M"
	-object "memory-backend-ram,id=m0,size=${fast_mb}M"
	-object "memory-backend-ram,id=m1,size=${slow_mb}M"
	-numa "node,nodeid=0,cpus=0-$last_cpu,memdev=m0"
	-numa node,nodeid=1,memdev=m1,initiator=0
	# Latency and bandwidth as seen from node 0's CPUs: local DRAM, and a
	# CXL-like tier about three times slower.
	-numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=80
	-numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=20G
	-numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=250
	-numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=5G
	-kernel "$kernel" -initrd "$initrd"
	-display none -no-reboot
)
cmdline="console=ttyS0 panic=-1 htmm_mode=$mode htmm_fast_mem_mb=$fast_mb htmm_slow_mem_mb=$slow_mb"

case "$mode" in
test)
	[ -n "$log" ] && [ -n "$tap" ] || die "test mode needs --log and --tap"
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

if [ "$timeout_s" -gt 0 ]; then
	exec timeout --foreground -k 10 "$timeout_s" qemu-system-x86_64 "${args[@]}" </dev/null
fi
exec qemu-system-x86_64 "${args[@]}"
