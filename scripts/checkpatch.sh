#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the kernel's checkpatch.pl --strict on every patch in patches/series.
#
# checkpatch asks "does MAINTAINERS need updating?" of any patch that adds a
# file without touching MAINTAINERS.  That question is answered here instead:
# every file a patch adds must be covered by an F: entry of MAINTAINERS in
# the tree, or the check fails.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/.." && pwd)
KSRC=${BUILD_DIR:-$TOP/build}/linux
[ -x "$KSRC/scripts/checkpatch.pl" ] || { echo "checkpatch: no kernel tree: run 'make kernel'" >&2; exit 1; }
# checkpatch's SPDX check runs python3 with ply: Debian's python3-ply.
export PATH=/usr/bin:$PATH

covered() {
	local f=$1 pat
	while read -r pat; do
		case "$f" in "$pat"*) return 0 ;; esac
	done < <(sed -n 's/^F:[[:space:]]*//p' "$KSRC/MAINTAINERS")
	return 1
}

fail=0 n=0
while read -r p; do
	case "$p" in ''|'#'*) continue ;; esac
	n=$((n + 1))
	ok=1
	if ! out=$(cd "$KSRC" && scripts/checkpatch.pl --strict --color=never \
			--ignore FILE_PATH_CHANGES -q "$TOP/patches/$p" 2>&1); then
		ok=0
	fi
	for f in $(awk '/^diff --git/ { file = $4; sub(/^b\//, "", file) }
			/^new file mode/ { print file }' "$TOP/patches/$p"); do
		if ! covered "$f"; then
			out="$out
$f: added, and no MAINTAINERS entry covers it"
			ok=0
		fi
	done
	if [ "$ok" = 1 ]; then
		echo "checkpatch: ok   $p"
	else
		echo "checkpatch: FAIL $p"
		echo "$out" | sed 's/^/    /'
		fail=1
	fi
done < "$TOP/patches/series"
echo "checkpatch: $n patch(es) checked"
exit $fail
