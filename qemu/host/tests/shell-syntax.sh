#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Every shell script of the project parses: each file whose first line
# names sh or bash is read by that shell with -n, which runs nothing.  A
# script that only a rare target runs (a benchmark in the guest) breaks
# silently otherwise: a quote in a comment inside an awk program once cut
# bench-tiering.sh's report off for days.  The guest's scripts are read
# by busybox's sh as well, which runs them there.

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../../.." && pwd)

# The project's files: git's list in a clone, else all but build/.
files() {
	if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$top" ls-files
	else
		(cd "$top" && find . -path ./build -prune -o -path ./.git -prune \
			-o -type f -print | sed 's|^\./||')
	fi
}

scripts=$(files | sort | while read -r f; do
		[ -f "$top/$f" ] || continue
		case $(head -n 1 "$top/$f" 2>/dev/null) in
		'#!/bin/sh'*|'#!/bin/bash'*|'#!/usr/bin/env sh'*|'#!/usr/bin/env bash'*)
			echo "$f" ;;
		esac
	done)
busybox=$(command -v busybox)

echo "1..$(echo "$scripts" | wc -l)"
n=0
failed=0
for f in $scripts; do
	n=$((n + 1))
	case $(head -n 1 "$top/$f") in
	*bash*) shells=bash ;;
	*) shells=sh ;;
	esac
	case $f in
	qemu/guest/*|selftests/*) [ -n "$busybox" ] && [ "$shells" = sh ] &&
		shells="sh busybox" ;;
	esac
	err=
	for sh in $shells; do
		if [ "$sh" = busybox ]; then
			out=$("$busybox" sh -n "$top/$f" 2>&1)
		else
			out=$("$sh" -n "$top/$f" 2>&1)
		fi || err="$sh: $(echo "$out" | head -n 1)"
		[ -n "$err" ] && break
	done
	if [ -n "$err" ]; then
		failed=$((failed + 1))
		echo "not ok $n $f parses # $err"
	else
		echo "ok $n $f parses"
	fi
done
[ "$failed" -eq 0 ]
