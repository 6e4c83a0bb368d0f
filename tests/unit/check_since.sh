#!/usr/bin/env bash
# check_since.sh EXPORTS SINCE VERSION_H: every symbol of EXPORTS
# (src/rlock.exports) has a line in SINCE (abi/symbols-in-versions) saying
# the version it appeared in, and SINCE names no symbol that is gone without
# saying when it went. Versions are MAJOR.MINOR.PATCH and none is later than
# the next minor release after the one VERSION_H (include/rlock/version.h)
# declares: VERSION_H keeps the last release's version until the next
# release sets it, while a symbol added meanwhile already names that release
# (CONTRIBUTING.md). A sibling of check_exports.sh, which checks EXPORTS
# against the library and the header.
set -euo pipefail
exports=$1 since=$2 version_h=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

current=$(sed -En 's/^#define RLOCK_VERSION_(MAJOR|MINOR|PATCH) ([0-9]+)$/\2/p' \
    "$version_h" | paste -sd.)
[[ "$current" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || {
    echo "check_since: no version in $version_h"
    exit 1
}
grep -v '^#' "$exports" | sed '/^$/d' | sort >"$tmp/exported"

# One line per symbol: NAME INTRODUCED [DEPRECATED|- [LAST]]. Prints the
# problems, then "live NAME" or "gone NAME" per symbol.
IFS=. read -r major minor _ <<<"$current"
next_minor="$major.$((minor + 1)).0"
awk -v current="$current" -v next_minor="$next_minor" -v file="$since" '
function num(v, p) { split(v, p, "."); return p[1] * 1000000 + p[2] * 1000 + p[3] }
function ver(v) { return v ~ /^[0-9]+\.[0-9]+\.[0-9]+$/ }
/^#/ || NF == 0 { next }
{
    where = file ":" FNR ": "
    if (NF > 4) { print "bad " where "more than 4 fields"; next }
    if (seen[$1]++) { print "bad " where $1 " listed twice"; next }
    if (!ver($2)) { print "bad " where $1 ": introduced \"" $2 "\" is not MAJOR.MINOR.PATCH"; next }
    if (num($2) > num(current) && num($2) != num(next_minor)) { print "bad " where $1 ": introduced " $2 " is after this version, " current ", and is not the next minor release, " next_minor }
    if (NF >= 3 && $3 != "-" && !ver($3)) { print "bad " where $1 ": deprecated \"" $3 "\" is not a version or -" }
    if (NF == 4) {
        if (!ver($4)) { print "bad " where $1 ": last \"" $4 "\" is not a version" }
        else if (num($4) < num($2)) { print "bad " where $1 ": last " $4 " is before introduced " $2 }
        print "gone " $1
    } else {
        print "live " $1
    }
}' "$since" >"$tmp/parsed"

status=0
if grep '^bad ' "$tmp/parsed" | sed 's/^bad /check_since: /'; then
    status=1
fi
sed -n 's/^live //p' "$tmp/parsed" | sort >"$tmp/live"
sed -n 's/^gone //p' "$tmp/parsed" | sort >"$tmp/gone"

# exported, but with no line (or a line saying it is gone)
comm -23 "$tmp/exported" "$tmp/live" >"$tmp/missing"
while read -r sym; do
    if grep -qx -- "$sym" "$tmp/gone"; then
        echo "check_since: $sym is exported, but $since says it was removed"
    else
        echo "check_since: $sym is exported but has no line in $since" \
            "(add: $sym $next_minor)"
    fi
    status=1
done <"$tmp/missing"
# a line for a symbol that no longer exists, not marked as removed
comm -13 "$tmp/exported" "$tmp/live" >"$tmp/stale"
while read -r sym; do
    echo "check_since: $since lists $sym, which $exports does not export" \
        "(removed? give its last version as the 4th field)"
    status=1
done <"$tmp/stale"

[ "$status" -eq 0 ] &&
    echo "check_since: $(wc -l <"$tmp/live") symbols, each with its version ($current)"
exit "$status"
