#!/usr/bin/env bash
# test_metrics_endpoint.sh ASYNC_SERVER: examples/async_server serves its
# lock statistics on /metrics as a user would run it: against its own
# redis-server on a free port, after a few requests through its line
# protocol; Prometheus's Python parser must read what it serves, with one
# acquisition per request. Exits 77 (skipped) without redis-server or the
# parser (python3-prometheus-client).
set -u
SERVER=${1:?usage: test_metrics_endpoint.sh PATH/TO/async_server}
HERE=$(cd "$(dirname "$0")" && pwd)
# the server the C tests' harness runs: $RLOCK_TEST_REDIS_SERVER (also a
# valkey-server; docs/servers.md), else redis-server from PATH
REDIS_SERVER=${RLOCK_TEST_REDIS_SERVER:-redis-server}
command -v "$REDIS_SERVER" >/dev/null || { echo "no $REDIS_SERVER: skipped"; exit 77; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rlock-metrics.XXXXXX")
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# free_ports N: N free loopback ports (tests/support/free_ports.py)
free_ports() {
    python3 "$HERE/../support/free_ports.py" "$1"
}

# start_until_ready PATTERN CMD...: runs CMD in the background (output in
# $WORK/out) and waits up to 30 s (a loaded machine, the sanitizer passes,
# can take seconds) for PATTERN in its output, or for `redis-cli -p
# $REDIS_PORT ping` when PATTERN is "ping". Returns 0 when ready, 2 when
# CMD exited because a port was taken between our pick and its bind
# (another test on the machine got it first: pick again), 1 otherwise.
start_until_ready() {
    local pattern=$1 pid
    shift
    "$@" >"$WORK/out" 2>&1 &
    pid=$!
    for _ in $(seq 600); do
        if [ "$pattern" = ping ]; then
            redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break
        else
            grep -q "$pattern" "$WORK/out" && break
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid" 2>/dev/null
            grep -qi "address already in use" "$WORK/out" && return 2
            return 1
        fi
        sleep 0.05
    done
    PIDS+=("$pid")
    if [ "$pattern" = ping ]; then
        redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 || return 1
    else
        grep -q "$pattern" "$WORK/out" || return 1
    fi
}

ready=1
for _ in 1 2 3 4 5; do
    read -r REDIS_PORT < <(free_ports 1)
    start_until_ready ping "$REDIS_SERVER" --port "$REDIS_PORT" \
        --bind 127.0.0.1 --save "" --appendonly no --dir "$WORK"
    ready=$?
    [ "$ready" = 2 ] || break
done
if [ "$ready" != 0 ]; then
    echo "test_metrics_endpoint: $REDIS_SERVER did not answer within 30 s"
    cat "$WORK/out"
    exit 1
fi
mv "$WORK/out" "$WORK/redis.log"

for _ in 1 2 3 4 5; do
    read -r APP_PORT METRICS_PORT < <(free_ports 2)
    start_until_ready listening "$SERVER" "redis://127.0.0.1:$REDIS_PORT" \
        "$APP_PORT" "$METRICS_PORT"
    ready=$?
    [ "$ready" = 2 ] || break
done
mv "$WORK/out" "$WORK/server.out"
if [ "$ready" != 0 ]; then
    echo "test_metrics_endpoint: async_server not listening within 30 s"
    cat "$WORK/server.out"
    exit 1
fi

# five requests for two accounts; each answer means one lock taken
answers=$(python3 - "$APP_PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"alice\nbob\nalice\nalice\nbob\n")
got = b""
while got.count(b"\n") < 5:
    chunk = s.recv(4096)
    if not chunk:
        break
    got += chunk
print(got.count(b"\n"))
PY
)
if [ "$answers" != 5 ]; then
    echo "test_metrics_endpoint: $answers answers of 5"
    cat "$WORK/server.out"
    exit 1
fi
bash "$HERE/run_python.sh" "$HERE/check_exposition.py" \
    --url "http://127.0.0.1:$METRICS_PORT/metrics" --acquires 5
