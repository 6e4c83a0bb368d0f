#!/usr/bin/env bash
# tests/consumer/test_consumer.sh: builds rlock the ways a user without an
# install would, on a machine without cmocka, and runs what was built.
#
#   test_consumer.sh subdirectory SOURCE_DIR C_COMPILER
#       configures tests/consumer (add_subdirectory of SOURCE_DIR) with a
#       pkg-config that cannot find cmocka, builds it and runs it
#   test_consumer.sh no-tests SOURCE_DIR C_COMPILER
#       configures and builds SOURCE_DIR itself with -DBUILD_TESTING=OFF
#       and the same pkg-config
#   test_consumer.sh pkg-config BUILD_DIR C_COMPILER [FLAGS]
#       compiles main.c with the flags pkg-config gives for "rlock" with
#       PKG_CONFIG_PATH=BUILD_DIR (its rlock-uninstalled.pc), plus FLAGS
#       (the sanitizer a sanitizer build's library needs), and runs it
set -euo pipefail

mode=${1:?mode}
tree=${2:?tree}
cc=${3:?compiler}
extra=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/rlock-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Writes $work/pkg-config: pkg-config as on a machine without cmocka.
hide_cmocka() {
    local real
    real=$(command -v pkg-config)
    cat >"$work/pkg-config" <<HIDE
#!/bin/sh
for arg in "\$@"; do
    case "\$arg" in *cmocka*) exit 1 ;; esac
done
exec "$real" "\$@"
HIDE
    chmod +x "$work/pkg-config"
    if "$work/pkg-config" --exists cmocka; then
        echo "test_consumer: cmocka is not hidden" >&2
        exit 1
    fi
}

# configure_and_build SOURCE [cmake args...]: into $work/build, quietly
# unless it fails.
configure_and_build() {
    local src=$1
    shift
    cmake -S "$src" -B "$work/build" -DCMAKE_C_COMPILER="$cc" \
        -DPKG_CONFIG_EXECUTABLE="$work/pkg-config" \
        -DCMAKE_BUILD_TYPE=Release "$@" >"$work/configure.log" 2>&1 ||
        { cat "$work/configure.log"; exit 1; }
    cmake --build "$work/build" -j2 >"$work/build.log" 2>&1 ||
        { cat "$work/build.log"; exit 1; }
}

case "$mode" in
subdirectory)
    hide_cmocka
    configure_and_build "$here" -DRLOCK_SOURCE_DIR="$tree"
    "$work/build/consumer"
    ;;
no-tests)
    hide_cmocka
    configure_and_build "$tree" -DBUILD_TESTING=OFF
    if [ -e "$work/build/tests" ]; then
        echo "test_consumer: tests configured despite BUILD_TESTING=OFF" >&2
        exit 1
    fi
    echo "rlock built without its tests"
    ;;
pkg-config)
    export PKG_CONFIG_PATH="$tree"
    flags=$(pkg-config --cflags --libs rlock)
    echo "pkg-config rlock: $flags"
    case "$flags" in
    *"-I$(cd "$here/../.." && pwd)/include"*) ;;
    *)
        echo "test_consumer: pkg-config did not pick the build tree" >&2
        exit 1
        ;;
    esac
    # shellcheck disable=SC2086 # the flags are words
    "$cc" $extra -o "$work/consumer" "$here/main.c" $flags
    "$work/consumer"
    ;;
*)
    echo "test_consumer: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
