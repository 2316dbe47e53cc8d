#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The unit tests of libhtmm's perf ring-buffer reader and sample parser
# (userspace/tests/perf_rb_test.c), in TAP.  HTMM_USERSPACE is the
# directory of the built tools (default: build/userspace of this tree).

here=$(cd "$(dirname "$0")" && pwd)
userspace=${HTMM_USERSPACE:-$here/../../../build/userspace}
test=$userspace/tests/perf_rb_test

if [ ! -x "$test" ]; then
	echo "1..1"
	echo "not ok 1 perf_rb_test is built # $test is missing: make userspace"
	exit 1
fi
exec "$test"
