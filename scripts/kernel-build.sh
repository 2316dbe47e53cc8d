#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Configure and build the guest kernel from build/linux into an output
# directory (O=), through ccache.
#
#   kernel-build.sh VARIANT FRAGMENT...
#
# VARIANT names the output directory (build/kbuild-VARIANT).  The .config is
# tinyconfig with the fragments merged by scripts/kconfig/merge_config.sh;
# every option a fragment asks for must end up in the final .config, or the
# build stops and names it.  An unchanged tree and configuration is not built
# again.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$TOP/build}
KSRC=$BUILD/linux
VARIANT=$1
shift
KOBJ=$BUILD/kbuild-$VARIANT
STAMP=$BUILD/stamps/kbuild-$VARIANT
JOBS=${JOBS:-$(nproc)}

die() { echo "kernel-build: error: $*" >&2; exit 1; }
note() { echo "kernel-build: $*"; }

[ -d "$KSRC/.git" ] || die "no kernel tree in $KSRC: run 'make kernel'"

. "$TOP/scripts/kbuild-env.sh"
ccache -M 8G >/dev/null 2>&1 || true

KMAKE=(make -C "$KSRC" O="$KOBJ" ARCH=x86_64 CC="ccache gcc" HOSTCC="ccache gcc" -j"$JOBS")

# What the output depends on: the tree's commit and (uncommitted) changes,
# and the fragments.  If none changed since the last good build, stop here.
inputs() {
	git -C "$KSRC" rev-parse HEAD
	git -C "$KSRC" diff HEAD
	# New files not yet added: their names and contents.
	(cd "$KSRC" && git ls-files -z --others --exclude-standard -- . \
		':!tools/testing/selftests/htmm' | xargs -0r sha256sum)
	cat "$@"
	gcc --version | head -n1
}
# One build of a variant at a time: two makes configuring and building in
# the same directory (make test and make check-series started together)
# left a tinyconfig bzImage behind, stamped as up to date.
mkdir -p "$KOBJ" "$BUILD/stamps"
exec 9>"$BUILD/stamps/kbuild-$VARIANT.lock"
flock 9

digest=$(inputs "$@" | sha256sum | cut -d' ' -f1)
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$digest" ] && [ -f "$KOBJ/arch/x86/boot/bzImage" ]; then
	note "$VARIANT kernel is up to date ($KOBJ/arch/x86/boot/bzImage)"
	exit 0
fi

mkdir -p "$KOBJ" "$BUILD/stamps"
cfgdigest=$( (cat "$@"; git -C "$KSRC" rev-parse HEAD) | sha256sum | cut -d' ' -f1)
if [ ! -f "$KOBJ/.config" ] || [ "$(cat "$STAMP.config" 2>/dev/null)" != "$cfgdigest" ]; then
	note "configuring: tinyconfig + $(printf '%s ' "${@##*/}")"
	"${KMAKE[@]}" -s tinyconfig >/dev/null
	cp "$KOBJ/.config" "$KOBJ/.config.tiny"
	log=$KOBJ/merge_config.log
	(cd "$KSRC" && ARCH=x86_64 CC="ccache gcc" HOSTCC="ccache gcc" \
		scripts/kconfig/merge_config.sh -O "$KOBJ" "$KOBJ/.config.tiny" "$@") >"$log" 2>&1 ||
		{ cat "$log" >&2; die "merge_config.sh failed"; }
	# merge_config.sh reports options that a fragment asked for but that
	# Kconfig would not give (a missing dependency, a typo, a symbol that
	# the series does not add).  Treat each as an error.
	bad=0
	for frag in "$@"; do
		while IFS= read -r line; do
			case "$line" in
			CONFIG_*=*) sym=${line%%=*}; want=$line ;;
			"# CONFIG_"*" is not set") sym=${line#\# }; sym=${sym%% *}; want="" ;;
			*) continue ;;
			esac
			got=$(grep -E "^($sym=|# $sym is not set)" "$KOBJ/.config" || true)
			if [ -n "$want" ] && [ "$got" != "$want" ]; then
				echo "kernel-build: ${frag##*/} asks for $want, the final .config has '${got:-nothing}'" >&2
				bad=1
			elif [ -z "$want" ] && [ -n "$got" ] && [ "${got#\#}" = "$got" ]; then
				echo "kernel-build: ${frag##*/} asks for $sym off, the final .config has '$got'" >&2
				bad=1
			fi
		done < "$frag"
	done
	[ "$bad" = 0 ] || die "the configuration does not hold what kernel-config/ asks for (log: $log)"
	echo "$cfgdigest" > "$STAMP.config"
fi

note "building bzImage ($VARIANT) with $JOBS jobs"
start=$(date +%s)
if ! "${KMAKE[@]}" bzImage > "$KOBJ/build.log" 2>&1; then
	grep -E -B2 -A8 'error|Error' "$KOBJ/build.log" | tail -n 60 >&2
	die "kernel build failed (full log: $KOBJ/build.log)"
fi
grep -E 'warning:' "$KOBJ/build.log" >&2 || true
# A warning in a file that the series adds or changes fails the build (a
# warning elsewhere is upstream's).  ccache replays a cached compiler's
# warnings, so a fresh build (as CI's) sees them all.
touched=$(git -C "$KSRC" diff --name-only htmm-base -- '*.c' '*.h' 2>/dev/null || true)
ours=""
for f in $touched; do
	ours=$ours$(grep -E "(^|/)$f:[0-9]+:([0-9]+:)? warning:" "$KOBJ/build.log" || true)
done
if [ -n "$ours" ]; then
	echo "$ours" >&2
	die "the series' own files have compiler warnings (full log: $KOBJ/build.log)"
fi
# The uapi headers the selftests and userspace tools build against.
"${KMAKE[@]}" -s headers >> "$KOBJ/build.log" 2>&1 || die "make headers failed (log: $KOBJ/build.log)"
note "built $KOBJ/arch/x86/boot/bzImage in $(( $(date +%s) - start )) s"
ccache -s 2>/dev/null | grep -iE 'hits|misses' | head -n3 | sed 's/^/kernel-build: ccache /' || true
echo "$digest" > "$STAMP"
