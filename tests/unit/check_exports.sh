#!/usr/bin/env bash
# check_exports.sh LIBRARY LIST HEADER: the shared library exports exactly
# the symbols of the checked-in LIST (src/rlock.exports, one a line), and
# HEADER (include/rlock.h) declares each of them with RLOCK_API: a new
# public function must be added to all three, and nothing internal leaks
# (STYLE.md 1.6; jansson's test/suites/api/check-exports).
set -euo pipefail
lib=$1 list=$2 header=$3
command -v nm >/dev/null || { echo "check_exports: no nm: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '{ print $3 }' | sort >"$tmp/exported"
grep -v '^#' "$list" | sed '/^$/d' | sort >"$tmp/listed"
# every function declared with RLOCK_API (the name is on its first line)
grep -E '^RLOCK_API ' "$header" | sed -E 's/\(.*//; s/.*[ *]//' |
    sort >"$tmp/declared"
status=0
if ! diff -u "$tmp/listed" "$tmp/exported" >"$tmp/diff"; then
    echo "check_exports: $lib exports other symbols than $list lists"
    echo "(- listed only, + exported only):"
    cat "$tmp/diff"
    status=1
fi
if ! diff -u "$tmp/listed" "$tmp/declared" >"$tmp/diff"; then
    echo "check_exports: $header declares other RLOCK_API names than $list"
    echo "(- listed only, + declared only):"
    cat "$tmp/diff"
    status=1
fi
[ "$status" -eq 0 ] && echo "check_exports: $(wc -l <"$tmp/listed") symbols, as listed"
exit "$status"
