#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The man pages, `make install` and the tools' --help and --version, on the
# host.  TAP on standard output.
#
#  - every page of userspace/man renders with man(1) and groff without a
#    warning, and its title, section and NAME line are right;
#  - the program of each page's EXAMPLES compiles against <htmm.h> and
#    links with -lhtmm;
#  - `make install DESTDIR=...` puts every page, program, libhtmm.a and
#    htmm.h where they belong, man -M finds each page there, and
#    `make uninstall` takes them all away again;
#  - every tool answers --help and --version with status 0 on standard
#    output, and its page documents each option its --help lists.
#
# HTMM_USERSPACE is the directory of the built tools (make's O=); the
# install builds there what is missing.

set -u
export LC_ALL=C MANPAGER=cat PAGER=cat
unset MANPATH MANOPT MANROFFOPT
# Not the settings of a make that runs the suite (make test PREFIX=...).
unset MAKEFLAGS MFLAGS MAKELEVEL BINDIR LIBDIR INCLUDEDIR MANDIR INSTALL

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../../.." && pwd)
SRC=$TOP/userspace
MANSRC=$SRC/man
TOOLS=${HTMM_USERSPACE:-$TOP/build/userspace}
PREFIX=/usr/local
# The tools the pages document; any other program in $TOOLS is checked too.
KNOWN_TOOLS="htmm-launch htmm-touch htmmstat htmm-sample"
# Being written: skipped, not failed, while it is not built.
NOT_YET="htmm-sample"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# Results are collected, then printed after the plan.
NAMES=()
STATES=()
NOTES=()
result() {	# ok|fail|skip NAME [NOTE-FILE-OR-TEXT]
	NAMES+=("$2")
	STATES+=("$1")
	NOTES+=("${3:-}")
}
check() {	# NAME COMMAND...: ok if COMMAND succeeds
	local name=$1
	shift
	if "$@" >"$TMP/out" 2>&1; then
		result ok "$name"
	else
		result fail "$name" "$(tail -n 20 "$TMP/out")"
	fi
}

# roff source to plain text: the escapes the pages use.
unroff() {
	sed -e 's/\\-/-/g' -e 's/\\e/\\/g' -e "s/\\\\(aq/'/g" -e 's/\\&//g' \
	    -e 's/\\f[BIRP]//g' -e 's/\\(em/--/g' -e 's/\\(en/-/g'
}

shopt -s nullglob
PAGES=()
for p in "$MANSRC"/*.[1-8]; do
	PAGES+=("$(basename "$p")")
done

# --- each page: no warnings; title, section and NAME line ----------------

page_clean() {	# PAGE: groff -ww and man --warnings both silent
	local page=$MANSRC/$1 rc
	: >"$TMP/err"
	groff -man -ww -z "$page" 2>>"$TMP/err" || echo "groff exited $?" >>"$TMP/err"
	MANWIDTH=80 man --warnings=w -l "$page" >"$TMP/render" 2>>"$TMP/err"
	rc=$?
	[ $rc -eq 0 ] || echo "man exited $rc" >>"$TMP/err"
	[ -s "$TMP/render" ] || echo "man rendered nothing" >>"$TMP/err"
	cat "$TMP/err"
	[ ! -s "$TMP/err" ]
}

page_name() {	# PAGE: .TH and NAME agree with the file name; man shows NAME
	local page=$MANSRC/$1 base=${1%.*} sec=${1##*.} th name_line first
	th=$(sed -n 's/^\.TH  *\([^ ]*\)  *\([^ ]*\).*/\1 \2/p' "$page" | head -n 1 | unroff)
	if [ "$th" != "$(echo "$base" | tr a-z A-Z) $sec" ]; then
		echo ".TH says '$th', the file is $1"
		return 1
	fi
	name_line=$(sed -n '/^\.SH NAME$/{n;p;q}' "$page" | unroff)
	first=${name_line%% *}
	first=${first%,}
	if [ "$first" != "$base" ]; then
		echo "NAME line '$name_line' does not start with $base"
		return 1
	fi
	MANWIDTH=250 man -l "$page" 2>/dev/null | tr -s ' ' >"$TMP/wide"
	if ! grep -qF -- "$(echo "$name_line" | tr -s ' ')" "$TMP/wide"; then
		echo "the rendered page lacks its NAME line: $name_line"
		return 1
	fi
}

for p in "${PAGES[@]}"; do
	check "page $p renders without warnings" page_clean "$p"
	check "page $p has its title and NAME line" page_name "$p"
done
[ ${#PAGES[@]} -gt 0 ] || result fail "pages in userspace/man" "none found in $MANSRC"

# --- make install, man -M, make uninstall -------------------------------

STAGE=$TMP/stage
INSTALLED=0
if make -s -C "$SRC" O="$TOOLS" PREFIX="$PREFIX" DESTDIR="$STAGE" install >"$TMP/install.log" 2>&1; then
	result ok "make install DESTDIR=..."
	INSTALLED=1
else
	result fail "make install DESTDIR=..." "$(tail -n 20 "$TMP/install.log")"
fi

# The programs: every executable at the top of $TOOLS (nothing else is there).
PROGS=()
for f in "$TOOLS"/*; do
	[ -f "$f" ] && [ -x "$f" ] && PROGS+=("$(basename "$f")")
done

installed() {	# PATH [x]: exists (and is executable)
	[ -f "$1" ] || { echo "missing: $1"; return 1; }
	[ "${2:-}" != x ] || [ -x "$1" ] || { echo "not executable: $1"; return 1; }
}

if [ $INSTALLED = 1 ]; then
	for p in "${PAGES[@]}"; do
		check "install: share/man/man${p##*.}/$p" \
			installed "$STAGE$PREFIX/share/man/man${p##*.}/$p"
	done
	for b in "${PROGS[@]}"; do
		check "install: bin/$b" installed "$STAGE$PREFIX/bin/$b" x
	done
	check "install: lib/libhtmm.a" installed "$STAGE$PREFIX/lib/libhtmm.a"
	check "install: include/htmm.h" installed "$STAGE$PREFIX/include/htmm.h"

	man_finds() {	# PAGE: man -M finds it in the staging tree and shows it
		local sec=${1##*.} base=${1%.*} where
		where=$(man -M "$STAGE$PREFIX/share/man" -w "$sec" "$base" 2>&1)
		if [ "$where" != "$STAGE$PREFIX/share/man/man$sec/$1" ]; then
			echo "man -w $sec $base: $where"
			return 1
		fi
		MANWIDTH=80 man -M "$STAGE$PREFIX/share/man" "$sec" "$base" 2>&1 |
			grep -q "^NAME" || { echo "man $sec $base shows no NAME"; return 1; }
	}
	for p in "${PAGES[@]}"; do
		check "man -M finds ${p%.*}(${p##*.}) installed" man_finds "$p"
	done

	uninstall() {
		make -s -C "$SRC" O="$TOOLS" PREFIX="$PREFIX" DESTDIR="$STAGE" uninstall || return 1
		local left
		left=$(find "$STAGE" -type f)
		[ -z "$left" ] || { echo "left behind:"; echo "$left"; return 1; }
	}
	check "make uninstall removes what install put" uninstall
fi

# --- EXAMPLES: the programs compile and link with -lhtmm -----------------

example_builds() {	# PAGE: compile the program between SRC BEGIN and SRC END
	local page=$MANSRC/$1 c=$TMP/${1%.*}.c
	sed -n '/^\.\\" SRC BEGIN/,/^\.\\" SRC END/p' "$page" |
		sed -e '/^\.\\"/d' -e '/^\.EX$/d' -e '/^\.EE$/d' | unroff >"$c"
	[ -s "$c" ] || { echo "no program between SRC BEGIN and SRC END"; return 1; }
	cc -std=gnu11 -Wall -Wextra -Werror -I"$SRC/include" -o "$c.bin" "$c" \
		-L"$TOOLS/lib" -lhtmm
}

for p in "${PAGES[@]}"; do
	grep -q '^\.\\" SRC BEGIN' "$MANSRC/$p" || continue
	if ! command -v cc >/dev/null; then
		result skip "the EXAMPLES program of $p compiles" "no cc"
	elif [ ! -f "$TOOLS/lib/libhtmm.a" ]; then
		result fail "the EXAMPLES program of $p compiles" "no $TOOLS/lib/libhtmm.a"
	else
		check "the EXAMPLES program of $p compiles" example_builds "$p"
	fi
done

# --- the tools: --help, --version, and their pages' options ---------------

TOOL_LIST=$KNOWN_TOOLS
for b in "${PROGS[@]}"; do
	case " $TOOL_LIST " in *" $b "*) ;; *) TOOL_LIST="$TOOL_LIST $b" ;; esac
done

answers() {	# TOOL OPTION: status 0, something on stdout, nothing on stderr
	local rc
	"$TOOLS/$1" "$2" >"$TMP/stdout" 2>"$TMP/stderr" </dev/null
	rc=$?
	[ $rc -eq 0 ] || { echo "$1 $2 exited $rc"; cat "$TMP/stderr"; return 1; }
	[ -s "$TMP/stdout" ] || { echo "$1 $2 printed nothing on stdout"; return 1; }
	[ ! -s "$TMP/stderr" ] || { echo "$1 $2 wrote to stderr:"; cat "$TMP/stderr"; return 1; }
	if [ "$2" = --version ] && ! head -n 1 "$TMP/stdout" | grep -q "^$1 [0-9]"; then
		echo "$1 --version: '$(head -n 1 "$TMP/stdout")' is not '$1 VERSION'"
		return 1
	fi
}

documents_options() {	# TOOL: each option of its --help is in its page
	local opt missing=""
	"$TOOLS/$1" --help 2>&1 |
		grep -oE '(^|[][ ,|])(-[A-Za-z]|--[a-z][a-z0-9-]*)' |
		sed 's/^[][ ,|]//' | sort -u >"$TMP/opts"
	[ -s "$TMP/opts" ] || { echo "no option found in $1 --help"; return 1; }
	while read -r opt; do
		grep -qF -- "$(echo "$opt" | sed 's/-/\\-/g')" "$MANSRC/$1.1" ||
			missing="$missing $opt"
	done <"$TMP/opts"
	[ -z "$missing" ] || { echo "$1.1 does not document:$missing"; return 1; }
}

for t in $TOOL_LIST; do
	if [ ! -x "$TOOLS/$t" ]; then
		case " $NOT_YET " in
		*" $t "*)
			for o in --help --version; do
				result skip "$t $o" "$t is not built yet"
			done
			[ ! -f "$MANSRC/$t.1" ] ||
				result skip "$t.1 documents the options of $t --help" \
					"$t is not built yet"
			;;
		*)
			for o in --help --version; do
				result fail "$t $o" "no $TOOLS/$t"
			done
			;;
		esac
		continue
	fi
	check "$t --help" answers "$t" --help
	check "$t --version" answers "$t" --version
	[ ! -f "$MANSRC/$t.1" ] ||
		check "$t.1 documents the options of $t --help" documents_options "$t"
done

# --- report -----------------------------------------------------------

echo "1..${#NAMES[@]}"
for i in "${!NAMES[@]}"; do
	n=$((i + 1))
	case ${STATES[$i]} in
	ok)	echo "ok $n ${NAMES[$i]}" ;;
	skip)	echo "ok $n ${NAMES[$i]} # SKIP ${NOTES[$i]}" ;;
	*)	echo "not ok $n ${NAMES[$i]}"
		[ -z "${NOTES[$i]}" ] || printf '%s\n' "${NOTES[$i]}" | sed 's/^/#   /' ;;
	esac
done
exit 0
