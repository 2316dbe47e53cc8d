#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The series on a real machine's kernel: Debian's own configuration
# (package linux-config-6.12) with htmm's options merged on top.
#
#   kernel-distro.sh check amd64|arm64
#	Configure (amd64: Debian's configuration; arm64: the kernel's
#	defconfig, linux-config-6.12 having only the machine's own
#	architecture's), then build with W=1 only the objects the series adds
#	or changes (mm/htmm/, kernel/events/, and the touched files of mm/,
#	fs/ and kernel/), natively or with aarch64-linux-gnu-gcc.  A warning on
#	a line the series added fails the check; warnings on upstream's own
#	lines are counted and left alone.
#   kernel-distro.sh config
#	The configuration `make deb` builds from: Debian's amd64 one, htmm's
#	options, olddefconfig; every option of the fragment must survive.
#   kernel-distro.sh deb
#	That configuration built into installable packages (bindeb-pkg) in
#	build/deb/.
#
# Output goes to build/kbuild-distro-ARCH (build/kbuild-deb for packages).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$TOP/build}
KSRC=${KSRC:-$BUILD/linux}
JOBS=${JOBS:-$(nproc)}
CONFIGS=${DEBIAN_CONFIGS:-/usr/src/linux-config-6.12}
CFG=$TOP/kernel-config

die() { echo "kernel-distro: error: $*" >&2; exit 1; }
note() { echo "kernel-distro: $*"; }

[ -e "$KSRC/.git" ] || die "no kernel tree in $KSRC: run 'make kernel'"

. "$TOP/scripts/kbuild-env.sh"

# Debian's configuration for @1 (amd64, arm64): its flavour without
# extras (none), the one linux-image-ARCH installs.
debian_config() {
	local f=$CONFIGS/config.$1_none_$1.xz
	[ -f "$f" ] || die "$f is missing: run 'make deps' (package linux-config-6.12)"
	echo "$f"
}

# Configure @KOBJ for @ARCH from Debian's config of @1 and the fragments
# in FRAGMENTS.
configure() {
	local deb=$1 log=$KOBJ/merge_config.log
	base=$([ "$deb" = defconfig ] && echo "the arm64 defconfig" || echo "Debian's $deb configuration")
	mkdir -p "$KOBJ"
	if [ "$deb" = defconfig ]; then
		"${KMAKE[@]}" -s defconfig > "$log" 2>&1 || { cat "$log" >&2; die "defconfig failed"; }
		cp "$KOBJ/.config" "$KOBJ/.config.debian"
	else
		xz -dc "$(debian_config "$deb")" > "$KOBJ/.config.debian"
	fi
	(cd "$KSRC" && ARCH=$ARCH CROSS_COMPILE=${CROSS:-} \
		scripts/kconfig/merge_config.sh -m -O "$KOBJ" \
		"$KOBJ/.config.debian" "${FRAGMENTS[@]}") > "$log" 2>&1 ||
		{ cat "$log" >&2; die "merge_config.sh failed"; }
	"${KMAKE[@]}" -s olddefconfig >> "$log" 2>&1 || { cat "$log" >&2; die "olddefconfig failed"; }
}

# Every option the fragments set must be in the final .config as set.
survives() {
	local frag line sym got bad=0
	for frag in "${FRAGMENTS[@]}"; do
		while IFS= read -r line; do
			case "$line" in
			CONFIG_*=*) sym=${line%%=*} ;;
			*) continue ;;
			esac
			got=$(grep -E "^$sym=" "$KOBJ/.config" || true)
			if [ "$got" != "$line" ]; then
				echo "kernel-distro: ${frag##*/} asks for $line, the final .config has '${got:-nothing}'" >&2
				bad=1
			fi
		done < "$frag"
	done
	[ "$bad" = 0 ] || die "$base does not keep what kernel-config/ asks for"
	note "$ARCH: $base + $(printf '%s ' "${FRAGMENTS[@]##*/}")kept every option ($(grep '^CONFIG_HTMM' "$KOBJ/.config" | tr '\n' ' '))"
}

# The objects to build: mm/htmm/ and kernel/events/ whole, and an object
# for each other C file the series touches under mm/, fs/ and kernel/.
objects() {
	local f
	echo mm/htmm/ kernel/events/
	for f in $(git -C "$KSRC" diff --name-only htmm-base -- 'mm/*.c' 'fs/*.c' 'kernel/*.c'); do
		case "$f" in
		mm/htmm/*|kernel/events/*) continue ;;
		esac
		echo "${f%.c}.o"
	done
}

# Lines the series added to @1, as "first,count" ranges of the new file.
added_ranges() {
	git -C "$KSRC" diff -U0 htmm-base -- "$1" |
		sed -n 's/^@@ -[0-9,]* +\([0-9]*\)\(,\([0-9]*\)\)\{0,1\} @@.*/\1,\3/p'
}

# Whether line @2 of @1 is one the series added.
is_added() {
	local r first count
	for r in $(added_ranges "$1"); do
		first=${r%,*}; count=${r#*,}
		[ -n "$count" ] || count=1
		if [ "$2" -ge "$first" ] && [ "$2" -lt $((first + count)) ]; then
			return 0
		fi
	done
	return 1
}

check() {
	local arch=$1 objs log start ours=0 theirs=0 w file line o
	case "$arch" in
	amd64) ARCH=x86_64; CROSS= ;;
	arm64) ARCH=arm64; CROSS=aarch64-linux-gnu-
		command -v ${CROSS}gcc >/dev/null ||
			die "${CROSS}gcc is missing: run 'make deps' (package gcc-aarch64-linux-gnu)" ;;
	*) die "check: amd64 or arm64, not '$arch'" ;;
	esac
	KOBJ=$BUILD/kbuild-distro-$arch
	FRAGMENTS=("$CFG/distro.config")
	[ ! -f "$CFG/distro-$arch.config" ] || FRAGMENTS+=("$CFG/distro-$arch.config")
	FRAGMENTS+=("$CFG/distro-check.config")
	KMAKE=(make -C "$KSRC" O="$KOBJ" ARCH=$ARCH CROSS_COMPILE=$CROSS
	       CC="ccache ${CROSS}gcc" HOSTCC="ccache gcc" -j"$JOBS")
	start=$(date +%s)
	# linux-config-6.12 holds the configurations of the machine's own
	# architecture only: arm64 starts from the kernel's defconfig, which
	# has NUMA and NUMA balancing.
	if [ "$arch" = arm64 ]; then configure defconfig; else configure "$arch"; fi
	survives
	log=$KOBJ/build.log
	objs=$(objects)
	note "building with W=1: $(echo $objs)"
	# Compiled afresh every time (ccache replays a cached compile's
	# warnings), so that an object left from an earlier check hides none.
	for o in $objs; do
		case "$o" in
		*/) rm -rf "${KOBJ:?}/$o" ;;
		*) rm -f "$KOBJ/$o" ;;
		esac
	done
	# Kbuild's prepare stage (generated headers, objtool) comes first.
	if ! "${KMAKE[@]}" W=1 $objs > "$log" 2>&1; then
		grep -E -B2 -A8 'error|Error' "$log" | tail -n 60 >&2
		die "$arch build failed (log: $log)"
	fi
	while IFS= read -r w; do
		file=${w%%:*}; line=${w#*:}; line=${line%%:*}
		# Compilers name the files as Kbuild passed them: from the
		# output directory, relative or absolute.
		file=$(cd "$KOBJ" && realpath -m "$file")
		file=${file#"$(realpath "$KSRC")"/}
		if [ -f "$KSRC/$file" ] && is_added "$file" "$line"; then
			echo "$w" >&2
			ours=$((ours + 1))
		else
			theirs=$((theirs + 1))
		fi
	done < <(grep -E '^[^ ]+:[0-9]+:([0-9]+:)? warning:' "$log" | sort -u)
	[ "$ours" = 0 ] || die "$arch: $ours W=1 warnings on lines the series added (log: $log)"
	note "$arch: no W=1 warning on the series' lines ($theirs on upstream's, in $(( $(date +%s) - start )) s; log: $log)"
}

deb_config() {
	ARCH=x86_64; CROSS=
	KOBJ=$BUILD/kbuild-deb
	FRAGMENTS=("$CFG/distro.config" "$CFG/distro-amd64.config")
	KMAKE=(make -C "$KSRC" O="$KOBJ" ARCH=x86_64 CC="ccache gcc" HOSTCC="ccache gcc" -j"$JOBS")
	configure amd64
	# A package for one machine: no debug info (Debian ships it in a
	# separate package, built here in hours), and not Debian's keys,
	# which a local build does not have (the build makes a throw-away
	# module signing key instead).
	"$KSRC/scripts/config" --file "$KOBJ/.config" \
		--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
		--disable DEBUG_INFO_DWARF5 --disable DEBUG_INFO_DWARF4 \
		--disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT \
		--disable DEBUG_INFO_BTF --enable DEBUG_INFO_NONE \
		--set-str LOCALVERSION "-htmm"
	"${KMAKE[@]}" -s olddefconfig
	grep -q '^CONFIG_DEBUG_INFO_NONE=y' "$KOBJ/.config" ||
		die "the package configuration still builds debug info"
	survives
}

case "${1:-}" in
check) check "${2:-}" ;;
config) deb_config ;;
deb)
	deb_config
	note "building the packages with $JOBS jobs (an hour or more on 2 cores)"
	start=$(date +%s)
	"${KMAKE[@]}" bindeb-pkg > "$KOBJ/build.log" 2>&1 ||
		{ tail -n 40 "$KOBJ/build.log" >&2; die "bindeb-pkg failed (log: $KOBJ/build.log)"; }
	mkdir -p "$BUILD/deb"
	mv "$BUILD"/linux-*.deb "$BUILD"/linux-upstream_* "$BUILD/deb/" 2>/dev/null || true
	note "packages in $BUILD/deb/ in $(( $(date +%s) - start )) s:"
	ls "$BUILD/deb/"*.deb
	;;
*) die "usage: kernel-distro.sh check amd64|arm64 | config | deb" ;;
esac
