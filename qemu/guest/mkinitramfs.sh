#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Assemble the guest's initramfs:
#
#   mkinitramfs.sh OUT.cpio.gz KSELFTEST_INSTALL_DIR USERSPACE_BIN_DIR
#
# busybox-static provides the shell and the utilities; the installed
# kselftests go to /kselftest; the project's tools to /usr/bin.  The guest
# has no C library of its own, so every shared library that a program links
# (as ldd reports) is copied in at its host path.  The archive is rebuilt only
# when one of its inputs changed.

set -euo pipefail

out=$1 kst=$2 usr=$3
here=$(cd "$(dirname "$0")" && pwd)
busybox=${BUSYBOX:-/bin/busybox}

die() { echo "mkinitramfs: error: $*" >&2; exit 1; }

[ -x "$busybox" ] || die "$busybox missing: run 'make deps' (installs busybox-static)"
[ -x "$kst/run_kselftest.sh" ] || die "no kselftests installed in $kst"

root=$(mktemp -d "${out%/*}/initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/share/htmm,etc,proc,sys,dev,tmp,run,root,kselftest}
cp "$busybox" "$root/bin/busybox"
"$busybox" --list-full | while read -r app; do
	[ -e "$root/$app" ] || ln -s /bin/busybox "$root/$app"
done

# kselftest's runner calls "/usr/bin/timeout --foreground", which busybox's
# timeout does not take; the wrapper drops it (the guest has no job control
# to be in the foreground of anyway).
rm -f "$root/usr/bin/timeout"
cat > "$root/usr/bin/timeout" <<'EOF'
#!/bin/sh
[ "$1" = "--foreground" ] && shift
exec /bin/busybox timeout "$@"
EOF
chmod 755 "$root/usr/bin/timeout"

install -m 755 "$here/init" "$root/init"
install -m 755 "$here/demo.sh" "$root/usr/share/htmm/demo.sh"
install -m 755 "$here/bench-sampling.sh" "$root/usr/share/htmm/bench-sampling.sh"
install -m 755 "$here/bench-tiering.sh" "$root/usr/share/htmm/bench-tiering.sh"
install -m 755 "$here/bench-compare.sh" "$root/usr/share/htmm/bench-compare.sh"
install -m 755 "$here/slowtier-test.sh" "$root/usr/share/htmm/slowtier-test.sh"
cp -a "$kst/." "$root/kselftest/"
if [ -d "$usr" ]; then
	find "$usr" -maxdepth 1 -type f -perm -u+x -exec cp {} "$root/usr/bin/" \;
fi

# Programs from Debian that the benchmark runs in the guest (make bench):
# a real server and its client, and numactl's migratepages.
for prog in redis-server redis-cli redis-benchmark migratepages; do
	path=$(command -v $prog) ||
		die "$prog is missing: run 'make deps' (installs redis-server, redis-tools, numactl)"
	cp -L "$path" "$root/usr/bin/$prog"
done

cat > "$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat > "$root/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
echo "htmm-guest" > "$root/etc/hostname"

# Shared libraries, with the dynamic loader, at their host paths.
find "$root" -type f -perm -u+x | while read -r f; do
	file -b "$f" | grep -q 'dynamically linked' || continue
	ldd "$f" 2>/dev/null | grep -oE '/[^ ]+' || true
done | sort -u | while read -r lib; do
	[ -e "$root$lib" ] && continue
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done

tmp=$out.tmp
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
	cpio --quiet -o -H newc -R 0:0 --reproducible) | gzip -1 -n > "$tmp"
if [ -f "$out" ] && cmp -s "$tmp" "$out"; then
	rm -f "$tmp"
else
	mv "$tmp" "$out"
	echo "mkinitramfs: wrote $out ($(du -h "$out" | cut -f1))"
fi
