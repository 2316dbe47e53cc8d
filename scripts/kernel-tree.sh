#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Manage the kernel tree that the htmm patch series is developed in.
#
# The tree is a build artifact: Debian's linux-source-6.12 tarball unpacked
# into build/linux, made a git repository with one base commit (tag
# htmm-base), with patches/ applied on top by `git am`.  Developers edit and
# commit there, and `make patches` regenerates patches/ from the commits after
# the base.
#
#   kernel-tree.sh sync      unpack if needed and bring the tree in step with
#                            patches/ (never discards work done in the tree)
#   kernel-tree.sh export    regenerate patches/ from the tree
#   kernel-tree.sh version   print the source package and kernel version
#
# A stamp (build/stamps/tree) records the patches/ digest and the tree's HEAD
# at the last point where both were known to agree, so that sync can tell
# "patches/ changed under me" (re-apply) from "the tree has new commits"
# (keep them, ask for `make patches`).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
TARBALL=${KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
BUILD=${BUILD_DIR:-$TOP/build}
KSRC=$BUILD/linux
PATCHES=$TOP/patches
STAMPS=$BUILD/stamps
BASE_TAG=htmm-base

# Fixed identity and dates for the base commit and for `git am`, so that the
# tree's history (and so format-patch output) does not depend on who ran it.
export GIT_COMMITTER_NAME="htmm build"
export GIT_COMMITTER_EMAIL="htmm-build@localhost"
export GIT_COMMITTER_DATE="2024-11-17 00:00:00 +0000"

die() { echo "kernel-tree: error: $*" >&2; exit 1; }
note() { echo "kernel-tree: $*"; }

g() { git -C "$KSRC" "$@"; }

patches_digest() {
	# Digest of the series as listed in patches/series, in order.
	local p
	{
		if [ -f "$PATCHES/series" ]; then
			while read -r p; do
				case "$p" in ''|'#'*) continue ;; esac
				[ -f "$PATCHES/$p" ] || die "patches/series names $p, which does not exist"
				echo "== $p"
				cat "$PATCHES/$p"
			done < "$PATCHES/series"
		fi
	} | sha256sum | cut -d' ' -f1
}

series_list() {
	[ -f "$PATCHES/series" ] || return 0
	grep -v -e '^#' -e '^[[:space:]]*$' "$PATCHES/series" || true
}

tarball_id() {
	# The tarball's identity: size and mtime are enough to notice a new
	# linux-source-6.12 package without hashing 150 MB every time.
	stat -c '%s %Y' "$TARBALL"
}

# write_stamp [TARBALL_ID]: the tarball the tree was unpacked from is the
# one given (after an unpack), else the one already recorded: exporting or
# re-applying the series does not make the tree a newer package's.
write_stamp() {
	local tarball=${1:-$(stamp_get tarball)}
	[ -n "$tarball" ] || tarball=$(tarball_id)
	mkdir -p "$STAMPS"
	{
		echo "tarball=$tarball"
		echo "patches=$(patches_digest)"
		echo "head=$(g rev-parse HEAD)"
	} > "$STAMPS/tree"
}

stamp_get() {
	[ -f "$STAMPS/tree" ] || return 0
	sed -n "s/^$1=//p" "$STAMPS/tree"
}

unpack() {
	[ -f "$TARBALL" ] || die "$TARBALL not found: run 'make deps' (installs linux-source-6.12)"
	local tmp=$BUILD/linux.unpack
	rm -rf "$tmp" "$KSRC"
	mkdir -p "$tmp"
	note "unpacking $TARBALL"
	tar -C "$tmp" -xJf "$TARBALL"
	local dir
	dir=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -n1)
	[ -n "$dir" ] && [ -f "$dir/Makefile" ] || die "unexpected tarball layout in $TARBALL"
	mv "$dir" "$KSRC"
	rm -rf "$tmp"

	# Debian's top-level .gitignore ends by ignoring everything at the top
	# level ("/*", "!/debian/") because its own repository holds only
	# debian/.  Drop that block so the base commit holds the whole tree.
	sed -i '/^# Debian packaging: ignore everything at the top level/,$d' "$KSRC/.gitignore"
	sed -i -e :a -e '/^\n*$/{$d;N;ba' -e '}' "$KSRC/.gitignore"
	sed -i '${/^#$/d}' "$KSRC/.gitignore"

	note "creating the base commit (about 30 s)"
	g init -q -b master
	g config core.autocrlf false
	g config gc.auto 0
	# Selftests are copied in from the project's selftests/ at build time.
	echo "/tools/testing/selftests/htmm/" >> "$KSRC/.git/info/exclude"
	g add -A
	GIT_AUTHOR_NAME="htmm build" GIT_AUTHOR_EMAIL="htmm-build@localhost" \
	GIT_AUTHOR_DATE="$GIT_COMMITTER_DATE" \
		g commit -q -m "Base: Debian linux-source-6.12 $(pkg_version)"
	g tag -f "$BASE_TAG" >/dev/null
}

apply_series() {
	local p n=0
	while read -r p; do
		n=$((n + 1))
		if ! g am -q --keep-cr --committer-date-is-author-date "$PATCHES/$p" >/dev/null 2>"$BUILD/am.log"; then
			g am --abort >/dev/null 2>&1 || true
			cat "$BUILD/am.log" >&2
			die "patch $n ($p) does not apply to $(pkg_version); the tree is left at the patch before it"
		fi
	done < <(series_list)
	note "applied $n patch(es) from patches/"
}

pkg_version() {
	dpkg-query -W -f '${Version}' linux-source-6.12 2>/dev/null || echo unknown
}

cmd_version() {
	local kv
	kv=$(make -s -C "$KSRC" kernelversion 2>/dev/null || echo unknown)
	echo "linux-source-6.12 $(pkg_version), kernel $kv"
}

cmd_sync() {
	mkdir -p "$BUILD"
	if [ ! -d "$KSRC/.git" ] || ! g rev-parse -q --verify "refs/tags/$BASE_TAG" >/dev/null; then
		unpack
		apply_series
		write_stamp "$(tarball_id)"
		return
	fi
	if [ "$(stamp_get tarball)" != "$(tarball_id)" ]; then
		if [ "$(stamp_get head)" != "$(g rev-parse HEAD)" ]; then
			die "the kernel source package changed, and build/linux has commits not in patches/: run 'make patches' first"
		fi
		note "the kernel source package changed: unpacking again"
		unpack
		apply_series
		write_stamp "$(tarball_id)"
		return
	fi

	local want have head
	want=$(patches_digest)
	have=$(stamp_get patches)
	head=$(g rev-parse HEAD)
	if [ "$want" = "$have" ]; then
		if [ "$head" != "$(stamp_get head)" ]; then
			note "warning: build/linux has commits not yet in patches/: run 'make patches'"
		fi
		return
	fi
	if [ "$head" != "$(stamp_get head)" ]; then
		die "patches/ changed, and build/linux also has new commits; run 'make patches' to keep the tree's work, or 'make kernel-reset' to drop it"
	fi
	if [ -n "$(g status --porcelain --untracked-files=no)" ]; then
		die "patches/ changed, and build/linux has uncommitted changes; commit or discard them first"
	fi
	note "patches/ changed: re-applying the series on $BASE_TAG"
	g reset -q --hard "$BASE_TAG"
	apply_series
	write_stamp
}

cmd_reset() {
	[ -d "$KSRC/.git" ] || { cmd_sync; return; }
	note "resetting build/linux to $BASE_TAG plus patches/ (drops commits not in patches/)"
	g am --abort >/dev/null 2>&1 || true
	g reset -q --hard "$BASE_TAG"
	apply_series
	write_stamp
}

cmd_export() {
	[ -d "$KSRC/.git" ] || die "no kernel tree: run 'make kernel' first"
	if [ -n "$(g status --porcelain --untracked-files=no)" ]; then
		die "build/linux has uncommitted changes: commit them first"
	fi
	local tmp
	tmp=$(mktemp -d)
	# Stable output: no commit hashes in the From line, no signature
	# version line, numbered names that depend only on the subjects.
	g format-patch -q --zero-commit --no-signature --no-numbered \
		--output-directory "$tmp" "$BASE_TAG..HEAD"
	rm -f "$PATCHES"/*.patch "$PATCHES/series"
	mkdir -p "$PATCHES"
	local f n=0
	for f in "$tmp"/*.patch; do
		[ -e "$f" ] || continue
		# The Date: header is the author date; keep it (it is part of
		# the commit), but nothing else varies between runs.
		mv "$f" "$PATCHES/"
		basename "$f" >> "$PATCHES/series"
		n=$((n + 1))
	done
	[ -f "$PATCHES/series" ] || : > "$PATCHES/series"
	rmdir "$tmp"
	write_stamp
	note "wrote $n patch(es) to patches/"
}

case "${1:-}" in
sync) cmd_sync ;;
reset) cmd_reset ;;
export) cmd_export ;;
version) cmd_version ;;
*) echo "usage: $0 sync|reset|export|version" >&2; exit 2 ;;
esac
