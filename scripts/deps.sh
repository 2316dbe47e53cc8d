#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# deps.sh [--check] PACKAGE...: install the Debian packages the project needs.
# Quick no-op when all are installed; --check only reports (exit 1 if any is
# missing).
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
missing=""
for p in "$@"; do
	s=$(dpkg-query -W -f '${db:Status-Abbrev}' "$p" 2>/dev/null)
	case "$s" in ii*) ;; *) missing="$missing $p" ;; esac
done
if [ -z "$missing" ]; then
	[ "$check" = 1 ] || echo "deps: all $# packages are installed"
	exit 0
fi
if [ "$check" = 1 ]; then
	echo "deps: missing:$missing" >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing:$missing" >&2
	echo "deps: run 'make deps' as root (it uses apt-get)" >&2
	exit 1
fi
echo "deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q || exit 1
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing || exit 1
