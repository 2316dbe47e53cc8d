# SPDX-License-Identifier: GPL-2.0
#
# TAP for the shell tests of the htmm tools, sourced by each of them:
#
#   . "$(dirname "$0")/tap.sh"
#   tap_need htmm-launch htmm-touch     # skip the whole script without them
#   tap_plan 7
#   some check; result $? "name # what was seen"
#   exit $failed

n=0
failed=0

# Skip the script (kselftest's status 4) if a tool it runs is missing.
tap_need() {
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null; then
			echo "1..0 # SKIP $tool is not installed"
			exit 4
		fi
	done
}

tap_plan() {
	echo "TAP version 13"
	echo "1..$1"
}

# One result: "ok" if $1 is 0; any failure makes the script exit 1.
result() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		failed=1
	fi
}

# A result skipped, with the reason.
skip() {
	n=$((n + 1))
	echo "ok $n $1 # SKIP $2"
}
