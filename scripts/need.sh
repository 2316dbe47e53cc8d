#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# need.sh WHAT...: check that the tools a make target uses are installed, and
# name the Debian package that `make deps` installs for each missing one.
# WHAT is a command name, or file:PATH:PACKAGE for a file.
missing=""
for w in "$@"; do
	case "$w" in
	file:*)
		path=${w#file:}; pkg=${path#*:}; path=${path%%:*}
		[ -e "$path" ] || missing="$missing $pkg($path)"
		continue ;;
	esac
	command -v "$w" >/dev/null 2>&1 && continue
	case "$w" in
	qemu-system-x86_64) pkg=qemu-system-x86 ;;
	busybox) pkg=busybox-static ;;
	gnuplot) pkg=gnuplot-nox ;;
	gcc|cc) pkg=gcc ;;
	aarch64-linux-gnu-gcc) pkg=gcc-aarch64-linux-gnu ;;
	dpkg-buildpackage) pkg=dpkg-dev ;;
	depmod) pkg=kmod ;;
	*) pkg=$w ;;
	esac
	missing="$missing $pkg($w)"
done
if [ -n "$missing" ]; then
	echo "missing:$missing" >&2
	echo "run 'make deps' (as root) to install them from Debian's packages" >&2
	exit 1
fi
