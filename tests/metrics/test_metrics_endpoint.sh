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

# three free loopback ports, from the kernel
read -r REDIS_PORT APP_PORT METRICS_PORT < <(python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])
PY
)
"$REDIS_SERVER" --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no \
    --dir "$WORK" >"$WORK/redis.log" 2>&1 &
PIDS+=($!)
# generous waits: a loaded machine (the sanitizer passes) can take seconds
# to start a server
up=0
for _ in $(seq 600); do
    redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && { up=1; break; }
    sleep 0.05
done
if [ "$up" != 1 ]; then
    echo "test_metrics_endpoint: $REDIS_SERVER did not answer within 30 s"
    cat "$WORK/redis.log"
    exit 1
fi

"$SERVER" "redis://127.0.0.1:$REDIS_PORT" "$APP_PORT" "$METRICS_PORT" \
    >"$WORK/server.out" 2>&1 &
PIDS+=($!)
up=0
for _ in $(seq 600); do
    grep -q listening "$WORK/server.out" && { up=1; break; }
    sleep 0.05
done
if [ "$up" != 1 ]; then
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
