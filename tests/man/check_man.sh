#!/usr/bin/env bash
# check_man.sh: holds the man pages (docs/man/*.scd) to the library.
#
#   check_man.sh SOURCE_DIR [BUILD_DIR]
#
# From the sources alone (always):
#   - every symbol in src/rlock.exports is listed in the NAME section of
#     exactly one page, and every rlock_* name a NAME section lists is
#     exported (the build makes the other names of a page ".so" pages);
#   - each page's SYNOPSIS declares exactly the functions of its NAME, and
#     every declaration in a SYNOPSIS is one of include/rlock.h's, word for
#     word once whitespace is normalized (RLOCK_API aside), and every
#     #define it shows is the header's;
#   - every function a page mentions ("rlock_x(" or "*rlock_x*(3)") is
#     exported, and every RLOCK_* constant it mentions is the header's.
# With BUILD_DIR (a build with the pages, cmake/man.cmake):
#   - BUILD_DIR/man holds a page for rlock(1), rlock(3) and every export,
#     and each renders with man(1) without a warning;
#   - "cmake --install" of the dev and tool components into a temporary
#     prefix gives "man rlock", "man 1 rlock", "man 3 rlock" and a page for
#     every export.
# Without BUILD_DIR the build checks are skipped with a note, unless
# RLOCK_TEST_REQUIRE_MAN is set: then that fails.
set -euo pipefail

src="$1"
build="${2:-}"
pages="$src/docs/man"
exports="$src/src/rlock.exports"
header="$src/include/rlock.h"
fail=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bad() {
    echo "check_man: $*" >&2
    fail=1
}

# The header as statements, one a line: comments, preprocessor lines and
# RLOCK_API removed, whitespace collapsed, cut at ';', '{' and '}'.
normalize() {
    tr '\n\t' '  ' | sed -e 's/  */ /g' -e 's/( /(/g' -e 's/ )/)/g' \
        -e 's/ *\([;{}]\) */\1\n/g' | sed -e 's/^ *//' -e 's/ *$//' |
        grep -v '^[;{}]*$' || true
}
sed -e 's,/\*.*\*/,,g' "$header" |
    awk '/\/\*/ { sub(/\/\*.*/, ""); skip = 1; print; next }
         skip && /\*\// { sub(/.*\*\//, ""); skip = 0 }
         skip { next }
         { print }' |
    grep -v '^[ \t]*#' | sed 's/RLOCK_API //g' | normalize >"$work/header.stmts"
# the macros of rlock.h and of the headers it includes (rlock/version.h)
cat "$header" "$src"/include/rlock/*.h |
    grep -o '^[ \t]*#[ \t]*define[ \t]*RLOCK_[A-Z0-9_]*' |
    sed 's/.*define[ \t]*//' | sort -u >"$work/header.macros"
grep -v '^#' "$exports" | grep -v '^[[:space:]]*$' | sort >"$work/exports"

# section FILE NAME: the lines of section "# NAME" of an scdoc source.
section() {
    awk -v want="# $2" '/^# / { on = ($0 == want); next } on' "$1"
}

: >"$work/named"
for scd in "$pages"/*.scd; do
    page=$(basename "$scd" .scd)
    base="${page%.*}"
    # NAME: "a, b, c - summary"
    names=$(section "$scd" NAME | grep -m1 ' - ' | sed 's/ - .*//' |
        tr ',' '\n' | sed 's/^ *//; s/ *$//' || true)
    if [ -z "$names" ]; then
        bad "$page: no \"name, ... - summary\" line under # NAME"
        continue
    fi
    grep -qx -- "$base" <<<"$names" ||
        bad "$page: its NAME does not list $base"
    fns=$(grep '^rlock_' <<<"$names" | sort || true)
    [ -n "$fns" ] && printf '%s\n' "$fns" | sed "s/\$/ $page/" >>"$work/named"

    # SYNOPSIS: the preformatted blocks' declarations
    section "$scd" SYNOPSIS | awk '/^```/ { on = !on; next } on' \
        >"$work/syn.raw"
    grep '^[ \t]*#[ \t]*define' "$work/syn.raw" |
        awk '{ print $2 }' | sort -u >"$work/syn.macros" || true
    { grep -v '^[ \t]*#' "$work/syn.raw" || true; } | normalize >"$work/syn.stmts"
    while IFS= read -r stmt; do
        grep -qxF -- "$stmt" "$work/header.stmts" ||
            bad "$page: SYNOPSIS declares what include/rlock.h does not: $stmt"
    done <"$work/syn.stmts"
    while IFS= read -r m; do
        grep -qx -- "$m" "$work/header.macros" ||
            bad "$page: SYNOPSIS defines $m, which include/rlock.h does not"
    done <"$work/syn.macros"
    declared=$(grep -o '^[^(]*[ *]rlock_[a-z0-9_]*(' "$work/syn.stmts" |
        grep -v '^typedef' | sed 's/.*[ *]\(rlock_[a-z0-9_]*\)($/\1/' |
        sort -u || true)
    if [ "$declared" != "$fns" ]; then
        bad "$page: NAME lists [$(echo $fns)] but SYNOPSIS declares [$(echo $declared)]"
    fi

    # every function mentioned exists; every RLOCK_ constant is the header's
    while IFS= read -r f; do
        grep -qx -- "$f" "$work/exports" ||
            bad "$page: mentions $f(), which is not exported"
    done < <(grep -o 'rlock_[a-z0-9_]*\**(' "$scd" | sed 's/\**($//' | sort -u)
    while IFS= read -r m; do
        case "$m" in RLOCK_API | RLOCK_E | RLOCK_VERSION | RLOCK_BUILD_*) continue ;; esac
        # "RLOCK_LOG_\*" names a family: some macro must start so
        case "$m" in *_) pat="^$m" ;; *) pat="^$m\$" ;; esac
        grep -q -- "$pat" "$work/header.macros" ||
            bad "$page: mentions $m, which include/rlock.h does not define"
    done < <(grep -o 'RLOCK_[A-Z0-9_]*' "$scd" | sort -u)
done

# every export has exactly one page; every page's function is exported
awk '{ print $1 }' "$work/named" | sort >"$work/named.fns"
for f in $(uniq -d "$work/named.fns"); do
    bad "$f is listed by more than one page: $(grep "^$f " "$work/named" | awk '{ print $2 }' | xargs)"
done
for f in $(comm -23 "$work/exports" <(sort -u "$work/named.fns")); do
    bad "$f is exported (src/rlock.exports) but no page's NAME lists it"
done
for f in $(comm -13 "$work/exports" <(sort -u "$work/named.fns")); do
    bad "$f is documented ($(grep "^$f " "$work/named" | awk '{ print $2 }')) but not exported"
done
echo "check_man: $(wc -l <"$work/exports") exports, $(ls "$pages"/*.scd | wc -l) pages: sources checked"

if [ -z "$build" ]; then
    if [ -n "${RLOCK_TEST_REQUIRE_MAN:-}" ]; then
        bad "RLOCK_TEST_REQUIRE_MAN is set but no pages were built (is scdoc installed?)"
    else
        echo "check_man: pages not built (no scdoc?): render and install checks skipped"
    fi
    exit "$fail"
fi

# the built pages: one for each export, each rendering cleanly
man="$build/man"
for p in man1/rlock.1 man3/rlock.3 $(sed 's,^\(.*\)$,man3/\1.3,' "$work/exports"); do
    [ -f "$man/$p" ] || bad "$man/$p was not built"
done
for p in "$man"/man1/*.1 "$man"/man3/*.3; do
    head -c 3 "$p" | grep -q '^\.so' && continue
    if ! MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l "$p" \
        >"$work/render" 2>"$work/render.err" || [ -s "$work/render.err" ]; then
        bad "$p does not render cleanly: $(head -5 "$work/render.err")"
    fi
done
# a ".so" page shows its group through man(1)
MANPATH="$man" MANWIDTH=80 man 3 rlock_trylock 2>/dev/null | grep -q 'rlock_trylock' ||
    bad "man 3 rlock_trylock (a .so page) does not show rlock_lock(3)"

# cmake --install: the pages land where man(1) finds them
prefix="$work/prefix"
for c in dev tool; do
    cmake --install "$build" --prefix "$prefix" --component "$c" >/dev/null ||
        bad "cmake --install --component $c failed"
done
export MANPATH="$prefix/share/man"
[ "$(man -w rlock 2>/dev/null)" = "$MANPATH/man1/rlock.1" ] ||
    bad "after install, 'man rlock' does not find man1/rlock.1"
man -w 1 rlock >/dev/null 2>&1 || bad "after install, no 'man 1 rlock'"
man -w 3 rlock >/dev/null 2>&1 || bad "after install, no 'man 3 rlock'"
while IFS= read -r f; do
    man -w "$f" >/dev/null 2>&1 || bad "after install, no 'man $f'"
done <"$work/exports"
echo "check_man: $(ls "$man"/man3 | wc -l) pages in man3, rendered and installed"
exit "$fail"
