#!/usr/bin/env bash
# tests/layers/run.sh CHECK: scripts/check-layers passes base/ and fails
# each copy of it with one file that breaks one rule, naming the file and
# the include (or call). Passing cases show what the rules allow.
set -u
check="$1"
base="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/base"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

# expect PASS|FAIL FILE CONTENT [WANTED]: copy base/, add FILE with
# CONTENT, run the check; a FAIL must print WANTED.
expect() {
    local want="$1" file="$2" content="$3" wanted="${4:-}"
    rm -rf "$work/tree" && cp -r "$base" "$work/tree"
    if [ -n "$file" ]; then
        mkdir -p "$(dirname "$work/tree/$file")"
        printf '%s\n' "$content" >"$work/tree/$file"
    fi
    local out rc
    out="$("$check" "$work/tree" 2>&1)"
    rc=$?
    if [ "$want" = PASS ] && [ "$rc" -ne 0 ]; then
        echo "FAIL: ${file:-base/} should pass, got rc $rc:"
        echo "$out"
        failures=$((failures + 1))
    elif [ "$want" = FAIL ] && { [ "$rc" -ne 1 ] || ! grep -qF -- "$wanted" <<<"$out"; }; then
        echo "FAIL: $file should be refused with '$wanted', got rc $rc:"
        echo "$out"
        failures=$((failures + 1))
    else
        echo "ok: $want ${file:-base/}${wanted:+ ($wanted)}"
    fi
}

expect PASS "" ""
expect PASS src/proto/note.c '/* #include "io/io.h" is not included */'
expect PASS src/cli/tool.c $'#include "api/admin.h"\n#include "rlock.h"'
expect PASS src/proto/slot_table.c '#include <hiredis/hiredis.h>'

expect FAIL src/proto/up.c '#include "io/io.h"' \
    'src/proto/up.c:1: includes "io/io.h": src/io/io.h belongs to io, above proto'
expect FAIL src/io/up.c $'#include "io.h"\n#include "core/core.h"' \
    'src/io/up.c:2: includes "core/core.h": src/core/core.h belongs to core, above io'
expect FAIL src/core/up.c '#include "../api/api.h"' \
    'src/core/up.c:1: includes "../api/api.h": src/api/api.h belongs to api, above core'
expect FAIL src/core/old.c '#include "internal.h"' \
    'src/core/old.c:1: includes "internal.h": no such header'
expect FAIL src/core/net.c '#include <hiredis/async.h>' \
    'src/core/net.c:1: includes <hiredis/async.h>'
expect FAIL src/api/loop.c '#include <ev.h>' \
    'src/api/loop.c:1: includes <ev.h>'
expect FAIL src/core/tls.c '#include <openssl/ssl.h>' \
    'src/core/tls.c:1: includes <openssl/ssl.h>'
expect FAIL src/proto/keys2.c '#include <hiredis/hiredis.h>' \
    'src/proto/keys2.c:1: includes <hiredis/hiredis.h>'
expect FAIL src/proto/thread.c '#include <pthread.h>' \
    'src/proto/thread.c:1: includes <pthread.h>'
expect FAIL src/proto/read.c $'#include <hiredis/read.h>\nvoid f(void) { redisReaderCreate(); }' \
    'src/proto/read.c:2: calls redisReaderCreate'
expect FAIL src/cli/peek.c '#include "core/core.h"' \
    'src/cli/peek.c:1: includes "core/core.h"'
expect FAIL src/cli/raw.c '#include <hiredis/hiredis.h>' \
    'src/cli/raw.c:1: includes <hiredis/hiredis.h>'
expect FAIL src/api/gone.c '#include "nowhere.h"' \
    'src/api/gone.c:1: includes "nowhere.h": no such header'
expect FAIL src/cli/cli.h '#include "api/api.h"' \
    'src/cli/cli.h:1: includes "api/api.h": src/cli uses only include/ and src/api/admin.h'
expect FAIL src/somefile.c '/* any source file directly in src/ */' \
    'src/somefile.c: not in a layer'
expect FAIL src/internal.h '/* or a header the layers would share */' \
    'src/internal.h: not in a layer'
expect FAIL src/util/helper.c '/* or in a directory that is no layer */' \
    'src/util/helper.c: not in a layer'

[ "$failures" -eq 0 ] || { echo "$failures case(s) wrong"; exit 1; }
echo "all cases as expected"
