#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the kernel's checkpatch.pl --strict on every patch in patches/series.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
KSRC=${BUILD_DIR:-$TOP/build}/linux
[ -x "$KSRC/scripts/checkpatch.pl" ] || { echo "checkpatch: no kernel tree: run 'make kernel'" >&2; exit 1; }
fail=0 n=0
while read -r p; do
	case "$p" in ''|'#'*) continue ;; esac
	n=$((n + 1))
	if out=$(cd "$KSRC" && PATH=/usr/bin:$PATH scripts/checkpatch.pl --strict --color=never \
			-q "$TOP/patches/$p" 2>&1); then
		echo "checkpatch: ok   $p"
	else
		echo "checkpatch: FAIL $p"
		echo "$out" | sed 's/^/    /'
		fail=1
	fi
done < "$TOP/patches/series"
echo "checkpatch: $n patch(es) checked"
exit $fail
