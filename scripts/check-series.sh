#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the kernel at every patch of the series, to show that each patch
# builds on its own.  A git worktree of build/linux (build/series) is moved
# from htmm-base to each commit in turn and built out of tree in
# build/kbuild-series, through ccache, with the guest's configuration
# (options an earlier patch does not know yet are dropped by olddefconfig).
# Warnings in files a patch touches fail it too.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$TOP/build}
KSRC=$BUILD/linux
WT=$BUILD/series
KOBJ=$BUILD/kbuild-series
CONFIG=$BUILD/kbuild-guest/.config
JOBS=${JOBS:-$(nproc)}

die() { echo "check-series: error: $*" >&2; exit 1; }

[ -d "$KSRC/.git" ] || die "no kernel tree: run 'make kernel'"
[ -f "$CONFIG" ] || die "no guest configuration: run 'make kernel'"

. "$TOP/scripts/kbuild-env.sh"

# A worktree of an earlier tree (unpacked again since) is made anew.
if [ -d "$WT" ] && ! git -C "$WT" rev-parse -q --verify htmm-base >/dev/null 2>&1; then
	rm -rf "$WT"
	git -C "$KSRC" worktree prune
fi
if [ ! -d "$WT" ]; then
	git -C "$KSRC" worktree add -q --detach "$WT" htmm-base
fi
mkdir -p "$KOBJ"
KMAKE=(make -C "$WT" O="$KOBJ" ARCH=x86_64 CC="ccache gcc" HOSTCC="ccache gcc" -j"$JOBS")

fail=0 n=0
for c in $(git -C "$KSRC" rev-list --reverse htmm-base..HEAD); do
	n=$((n + 1))
	subject=$(git -C "$KSRC" log -1 --format=%s "$c")
	git -C "$WT" checkout -q --detach "$c"
	cp "$CONFIG" "$KOBJ/.config"
	start=$(date +%s)
	if ! "${KMAKE[@]}" olddefconfig >/dev/null 2>&1 ||
	   ! "${KMAKE[@]}" bzImage > "$KOBJ/build-$n.log" 2>&1; then
		echo "check-series: FAIL $n $subject (log: $KOBJ/build-$n.log)"
		grep -E 'error' "$KOBJ/build-$n.log" | head -n 5 | sed 's/^/    /'
		fail=1
		continue
	fi
	files=$(git -C "$WT" diff --name-only "$c~1" "$c" | grep '\.[ch]$' || true)
	warn=""
	for f in $files; do
		warn="$warn$(grep -F "$f" "$KOBJ/build-$n.log" | grep 'warning:' || true)"
	done
	if [ -n "$warn" ]; then
		echo "check-series: FAIL $n $subject: warnings"
		echo "$warn" | head -n 5 | sed 's/^/    /'
		fail=1
		continue
	fi
	echo "check-series: ok   $n $subject ($(( $(date +%s) - start )) s)"
done
echo "check-series: $n patch(es) built"
exit $fail
