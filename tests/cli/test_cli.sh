#!/usr/bin/env bash
# tests/cli/test_cli.sh: drives the rlock command-line tool from a shell, as
# a user would, against redis-servers this script starts on free loopback
# ports (never 6379) and always stops (trap on EXIT).
#
#   tests/cli/test_cli.sh PATH/TO/rlock [PATH/TO/rt-tls-files]
#
# With rt-tls-files (tests/support/tls_files_main.c), a TLS server is
# started too and the tool is driven over rediss://.
#
# Exit status: 0 when every check passed, 1 otherwise, 77 (CTest "skipped")
# when redis-server or redis-cli is missing, unless RLOCK_TEST_REQUIRE_REDIS=1
# makes that a failure. Needs python3 for reading --json output.
set -u

RLOCK=${1:?usage: test_cli.sh PATH/TO/rlock [PATH/TO/rt-tls-files]}
case "$RLOCK" in /*) ;; *) RLOCK="$PWD/$RLOCK" ;; esac
TLS_FILES=${2:-}

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_begin test_cli

# ------------------------------------------------------------------ helpers

# run ARGS...: runs the tool; sets $status, $out (stdout) and $err (stderr).
run() {
    "$RLOCK" "$@" >"$WORK/out" 2>"$WORK/err"
    status=$?
    out=$(cat "$WORK/out")
    err=$(cat "$WORK/err")
}

# expect_status WANT DESCRIPTION: checks $status from the last run.
expect_status() {
    if [ "$status" -eq "$1" ]; then
        ok "$2 (status $1)"
    else
        not_ok "$2: status $status, want $1" "stdout: $out" "stderr: $err"
    fi
}

# expect_text HAYSTACK NEEDLE DESCRIPTION
expect_text() {
    if [[ "$1" == *"$2"* ]]; then
        ok "$3"
    else
        not_ok "$3: '$2' not found" "in: $1"
    fi
}

now_ms() {
    date +%s%3N
}

# start_redis VAR [--tls TLSVAR TLS-ARGS...]: starts a redis-server on a
# free loopback port and stores the port in VAR; with --tls, a TLS port too
# (the next one up, stored in TLSVAR), with the --tls-* TLS-ARGS. Picks
# random ports until they bind, below the kernel's ephemeral range (where
# other tests' outgoing connections take ports), and accepts only the
# server it started: another test's server may answer on a taken port.
start_redis() {
    local var=$1 tls_var= port pid dir
    local -a tls=()
    shift
    if [ "${1:-}" = --tls ]; then
        tls_var=$2
        shift 2
    fi
    for _ in $(seq 20); do
        port=$((10000 + RANDOM % 12000))
        [ -n "$tls_var" ] && tls=(--tls-port $((port + 1)) "$@")
        dir="$WORK/redis-$port"
        mkdir -p "$dir"
        "$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --save "" \
            --appendonly no --dir "$dir" "${tls[@]}" >"$dir/log" 2>&1 &
        pid=$!
        for _ in $(seq 100); do
            if redis-cli -p "$port" info server 2>/dev/null |
                grep -q "^process_id:$pid"; then
                REDIS_PIDS+=("$pid")
                printf -v "$var" '%s' "$port"
                [ -n "$tls_var" ] && printf -v "$tls_var" '%s' $((port + 1))
                return 0
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.05
        done
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    echo "test_cli: cannot start redis-server" >&2
    exit 1
}

# A loopback port with no server behind it.
dead_port() {
    local port
    while :; do
        port=$((20000 + RANDOM % 40000))
        if ! redis-cli -p "$port" ping >/dev/null 2>&1; then
            echo "$port"
            return
        fi
    done
}

start_redis PORT
start_redis AUTH_PORT
redis-cli -p "$AUTH_PORT" config set requirepass s3cret >/dev/null
export REDIS_URL="redis://127.0.0.1:$PORT"

rcli() {
    redis-cli -p "$PORT" "$@"
}

is_held() {
    [ "$(rcli exists "$1")" = 1 ]
}

is_free() {
    [ "$(rcli exists "$1")" = 0 ]
}

# waiting_clients NAME: connections subscribed to NAME's unlock channel.
waiting_clients() {
    rcli pubsub numsub "redisson_lock__channel:{$1}" | sed -n 2p
}

has_waiter() {
    [ "$(waiting_clients "$1")" -ge 1 ]
}

# json_checks DESCRIPTION EXPR...: passes when every Python expression is
# true of the JSON in $out (bound to j); names the ones that are not.
json_checks() {
    local what=$1 result
    shift
    result=$(python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
for expr in sys.argv[1:]:
    try:
        good = eval(expr)
    except Exception as e:
        good = False
    if good is not True:
        print("false: " + expr)
' "$@" <<<"$out" 2>&1)
    if [ -z "$result" ]; then
        ok "$what"
    else
        not_ok "$what" "$result" "json: $out"
    fi
}

UUID_RE='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

# ------------------------------------------------------------------- help

echo "# help and version"
run --help
expect_status 0 "rlock --help"
expect_text "$out" "Usage: rlock" "rlock --help prints the usage"
expect_text "$out" "76     exec: the lock was lost" "--help documents the exit statuses"
for cmd in exec info unlock watch; do
    run "$cmd" --help
    expect_status 0 "rlock $cmd --help"
    expect_text "$out" "Usage: rlock $cmd" "rlock $cmd --help prints its usage"
    run help "$cmd"
    expect_status 0 "rlock help $cmd"
done
run exec -h
expect_status 0 "rlock exec -h"
run --version
expect_status 0 "rlock --version"
src_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
version=$(sed -En 's/^#define RLOCK_VERSION_(MAJOR|MINOR|PATCH) ([0-9]+)$/\2/p' \
    "$src_dir/include/rlock/version.h" | paste -sd.)
expect_text "$out" "rlock $version" "--version prints the version ($version)"
if [ "$(git -C "$src_dir" rev-parse --show-toplevel 2>/dev/null)" = "$src_dir" ]
then
    head=$(git -C "$src_dir" rev-parse HEAD)
    expect_text "$out" "+g${head:0:12}" "--version names the commit built"
else
    [[ "$out" != *+g* ]] && ok "--version names no commit outside git" ||
        not_ok "--version names a commit outside a git tree" "$out"
fi

# -------------------------------------------------------------- bad input

echo "# bad arguments"
run
expect_status 64 "no command"
run frobnicate x
expect_status 64 "unknown command"
expect_text "$err" "unknown command 'frobnicate'" "unknown command is named"
run exec
expect_status 64 "exec without NAME"
expect_text "$err" "missing the lock NAME" "missing NAME is explained"
run exec name
expect_status 64 "exec without a command"
expect_text "$err" "missing the command" "missing command is explained"
run exec name --
expect_status 64 "exec with nothing after --"
run exec --wait soon name -- true
expect_status 64 "exec --wait with a non-number"
expect_text "$err" "--wait wants milliseconds" "bad --wait is explained"
run exec --lease 0 name -- true
expect_status 64 "exec --lease 0"
run exec --signal NOPE name -- true
expect_status 64 "exec --signal with an unknown signal"
run exec --bogus name -- true
expect_status 64 "exec with an unknown option"
expect_text "$err" "unknown option '--bogus'" "unknown option is named"
run exec --wait
expect_status 64 "option without its value"
run info
expect_status 64 "info without NAME"
run info ""
expect_status 64 "info with an empty NAME"
run unlock name
expect_status 64 "unlock without --force"
expect_text "$err" "--force" "unlock without --force says why"
run unlock --force
expect_status 64 "unlock --force without NAME"
run watch
expect_status 64 "watch without NAME"
run info --json=yes x
expect_status 64 "a flag given a value"

echo "# unreachable server, bad URL, bad config, wrong password"
DEAD=$(dead_port)
run --url "redis://127.0.0.1:$DEAD" exec n -- true
expect_status 69 "exec, unreachable server"
expect_text "$err" "cannot reach Redis at redis://127.0.0.1:$DEAD" \
    "unreachable server is named"
run info --url "redis://127.0.0.1:$DEAD" n
expect_status 69 "info, unreachable server"
run unlock --force --url "redis://127.0.0.1:$DEAD" n
expect_status 69 "unlock, unreachable server"
run watch --url "redis://127.0.0.1:$DEAD" n
expect_status 69 "watch, unreachable server"
REDIS_URL="redis://127.0.0.1:$DEAD" run info n
expect_status 69 "REDIS_URL is used"
run --url http://127.0.0.1 info n
expect_status 78 "a URL that is not redis://"
expect_text "$err" "--url is not a valid URL" "bad --url is explained"
REDIS_URL=bogus run info n
expect_status 78 "a bad REDIS_URL"
expect_text "$err" "REDIS_URL is not a valid URL" "bad REDIS_URL is explained"
run info --url "rediss://127.0.0.1:$DEAD" n
expect_status 69 "info, unreachable TLS server"
run info --url "valkey://127.0.0.1:$PORT" n
expect_status 0 "info over valkey://, Redisson's spelling of redis://"

printf '{\n  "singleServerConfig": {\n    "adress": "redis://h"\n  }\n}\n' \
    >"$WORK/typo.json"
run --config "$WORK/typo.json" info n
expect_status 78 "config file with an unknown key"
expect_text "$err" "$WORK/typo.json:3: singleServerConfig.adress: unknown key" \
    "config error names file, line and key"
run info --config "$WORK/missing.json" n
expect_status 78 "missing config file"

run --url "redis://127.0.0.1:$AUTH_PORT" info n
expect_status 77 "info, password needed but none given"
expect_text "$err" "needs a password" "missing password is explained"
run --url "redis://:wrong@127.0.0.1:$AUTH_PORT" info n
expect_status 77 "info, wrong password"
run --url "redis://:wrong@127.0.0.1:$AUTH_PORT" exec n -- true
expect_status 77 "exec, wrong password"
expect_text "$err" "refused the password" "wrong password is explained"
run --url "redis://:wrong@127.0.0.1:$AUTH_PORT" unlock --force n
expect_status 77 "unlock, wrong password"
run --url "redis://:wrong@127.0.0.1:$AUTH_PORT" watch n
expect_status 77 "watch, wrong password"
run --url "redis://:s3cret@127.0.0.1:$AUTH_PORT/4" exec authed -- true
expect_status 0 "exec with the right password and a database"
cat >"$WORK/auth.json" <<EOF
{
  "singleServerConfig": {
    "address": "redis://127.0.0.1:$AUTH_PORT",
    "password": "s3cret",
    "database": 2,
    "clientName": "cli-test"
  },
  "lockWatchdogTimeout": 30000,
  "codec": {"class": "org.redisson.codec.Kryo5Codec"}
}
EOF
run --config "$WORK/auth.json" exec cfglock -- \
    redis-cli -p "$AUTH_PORT" -a s3cret --no-auth-warning -n 2 hkeys cfglock
expect_status 0 "exec with a Redisson config file"
if [[ "$out" =~ ^$UUID_RE:[0-9]+$ ]]; then
    ok "the config file's database holds the lock while CMD runs"
else
    not_ok "lock not found in database 2 during exec" "got: $out"
fi
run --config "$WORK/auth.json" --url "redis://:wrong@127.0.0.1:$AUTH_PORT" \
    info n
expect_status 77 "a password in --url beats the config file's"

# -------------------------------------------------------------------- exec

echo "# exec"
run exec e1 -- true
expect_status 0 "exec true"
run exec e1 -- sh -c 'exit 7'
expect_status 7 "exec passes the command's status through"
run exec e1 -- sh -c 'kill -KILL $$'
expect_status 137 "a command killed by SIGKILL gives 128+9"
run exec e1 -- printf '%s|' a --wait 'b c' --
expect_status 0 "exec printf"
if [ "$out" = "a|--wait|b c|--|" ]; then
    ok "the command's arguments arrive untouched"
else
    not_ok "command arguments changed" "got: $out"
fi
run exec e1 echo without dashes
expect_text "$out" "without dashes" "the command may follow NAME without --"
run exec e1 -- "$WORK/no-such-command"
expect_status 127 "a missing command"
expect_text "$err" "cannot run" "a missing command is explained"
printf 'not executable\n' >"$WORK/plain"
run exec e1 -- "$WORK/plain"
expect_status 126 "a command that cannot be executed"
run exec e1 -- sh -c "redis-cli -p $PORT hgetall e1"
if [[ "$out" =~ ^$UUID_RE:[0-9]+$'\n'1$ ]]; then
    ok "the lock is held, count 1, while the command runs"
else
    not_ok "lock state during exec" "got: $out"
fi
check "the lock is released after the command" is_free e1

echo "# exec when the lock is held elsewhere"
"$RLOCK" exec held -- sleep 30 >/dev/null 2>&1 &
HOLDER=$!
PIDS+=("$HOLDER")
check "a background exec takes the lock" wait_until 5 is_held held
t0=$(now_ms)
run exec --wait 300 held -- echo should-not-run
t1=$(now_ms)
expect_status 75 "exec --wait 300 on a held lock"
expect_text "$err" "held elsewhere" "the timeout is explained"
if [ -z "$out" ] && [ $((t1 - t0)) -ge 300 ] && [ $((t1 - t0)) -lt 5000 ]; then
    ok "gave up after the wait ($((t1 - t0)) ms) without running the command"
else
    not_ok "wait timing or command ran" "elapsed $((t1 - t0)) ms, out '$out'"
fi
run exec --wait 0 held -- true
expect_status 75 "exec --wait 0 on a held lock"
kill -TERM "$HOLDER"
wait "$HOLDER"
holder_status=$?
if [ "$holder_status" -eq 143 ]; then
    ok "SIGTERM sent to rlock reaches the command (status 143)"
else
    not_ok "SIGTERM forwarding: status $holder_status, want 143"
fi
check "the lock is released after the command was stopped" is_free held

echo "# exec: two at a time exclude each other"
cat >"$WORK/critical.sh" <<'EOF'
#!/usr/bin/env bash
# One critical section: read, wait, write back; notes any overlap.
cd "$1" || exit 1
[ -e inside ] && touch overlap
touch inside
n=$(cat counter)
sleep 0.05
echo $((n + 1)) >counter
rm -f inside
EOF
chmod +x "$WORK/critical.sh"
mkdir "$WORK/mx"
echo 0 >"$WORK/mx/counter"
worker() {
    local i
    for i in 1 2 3 4 5; do
        "$RLOCK" exec mutex -- "$WORK/critical.sh" "$WORK/mx" || return 1
    done
}
worker &
W1=$!
worker &
W2=$!
worker &
W3=$!
PIDS+=("$W1" "$W2" "$W3")
worker_failures=0
for w in "$W1" "$W2" "$W3"; do
    wait "$w" || worker_failures=$((worker_failures + 1))
done
count=$(cat "$WORK/mx/counter")
if [ "$worker_failures" -eq 0 ] && [ "$count" -eq 15 ] &&
    [ ! -e "$WORK/mx/overlap" ]; then
    ok "15 critical sections from 3 concurrent execs, no overlap"
else
    not_ok "mutual exclusion" "failed workers $worker_failures, counter $count," \
        "overlap: $([ -e "$WORK/mx/overlap" ] && echo yes || echo no)"
fi

echo "# exec: the lock is lost while the command runs"
printf '{"lockWatchdogTimeout": 3000}\n' >"$WORK/fast.json"
cat >"$WORK/victim.sh" <<'EOF'
#!/usr/bin/env bash
# Sleeps until signalled; records which signal came.
trap 'echo TERM >>"$1"; kill $! 2>/dev/null; exit 143' TERM
trap 'echo USR1 >>"$1"; kill $! 2>/dev/null; exit 138' USR1
sleep 30 &
wait
EOF
chmod +x "$WORK/victim.sh"
"$RLOCK" --config "$WORK/fast.json" exec lost -- "$WORK/victim.sh" \
    "$WORK/marker" >"$WORK/lost.out" 2>"$WORK/lost.err" &
VICTIM=$!
PIDS+=("$VICTIM")
check "the victim holds the lock" wait_until 5 is_held lost
sleep 0.3
run unlock --force lost
expect_status 0 "unlock --force of a held lock"
expect_text "$out" "lost: force-unlocked (was held by" "unlock --force reports the holder"
t0=$(now_ms)
wait "$VICTIM"
victim_status=$?
t1=$(now_ms)
if [ "$victim_status" -eq 76 ]; then
    ok "exec exits 76 when the lock is lost ($((t1 - t0)) ms after the unlock)"
else
    not_ok "lost lock: status $victim_status, want 76" "$(cat "$WORK/lost.err")"
fi
expect_text "$(cat "$WORK/marker" 2>/dev/null)" "TERM" "the command got SIGTERM"
expect_text "$(cat "$WORK/lost.err")" "lost lock 'lost' while the command ran" \
    "the loss is explained"

rm -f "$WORK/marker"
"$RLOCK" --config "$WORK/fast.json" exec --signal USR1 lost2 -- \
    "$WORK/victim.sh" "$WORK/marker" >/dev/null 2>&1 &
VICTIM=$!
PIDS+=("$VICTIM")
check "the second victim holds the lock" wait_until 5 is_held lost2
run unlock --force lost2
wait "$VICTIM"
victim_status=$?
# (USR1, not INT: a shell starts background jobs with SIGINT ignored)
if [ "$victim_status" -eq 76 ] && grep -q USR1 "$WORK/marker" 2>/dev/null; then
    ok "--signal USR1: the command got SIGUSR1, exec exits 76"
else
    not_ok "--signal USR1" "status $victim_status, marker: $(cat "$WORK/marker" 2>/dev/null)"
fi

"$RLOCK" --config "$WORK/fast.json" exec --kill-after 300 lost3 -- \
    bash -c 'trap "" TERM; exec sleep 30' >/dev/null 2>"$WORK/lost3.err" &
VICTIM=$!
PIDS+=("$VICTIM")
check "the third victim holds the lock" wait_until 5 is_held lost3
run unlock --force lost3
t0=$(now_ms)
wait "$VICTIM"
victim_status=$?
t1=$(now_ms)
if [ "$victim_status" -eq 76 ] && [ $((t1 - t0)) -lt 10000 ]; then
    ok "a command ignoring SIGTERM is killed after --kill-after ($((t1 - t0)) ms)"
else
    not_ok "--kill-after" "status $victim_status after $((t1 - t0)) ms"
fi
expect_text "$(cat "$WORK/lost3.err")" "SIGKILL" "the SIGKILL is reported"

t0=$(now_ms)
run exec --lease 500 leased -- sleep 10
t1=$(now_ms)
expect_status 76 "a fixed lease running out counts as a loss"
if [ $((t1 - t0)) -lt 5000 ]; then
    ok "the command was stopped when the lease ran out ($((t1 - t0)) ms)"
else
    not_ok "lease expiry took $((t1 - t0)) ms"
fi

echo "# exec: the command dies with rlock"
# gone_or_zombie PID: PID has ended (a zombie counts: it runs no more, and
# whoever inherited it may not reap it at once).
gone_or_zombie() {
    local state
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -z "$state" ] || [ "$state" = Z ]
}
rm -f "$WORK/orphan.pid"
"$RLOCK" exec orphan -- sh -c 'echo $$ >"$1"; exec sleep 30' sh \
    "$WORK/orphan.pid" >/dev/null 2>&1 &
GUARD=$!
PIDS+=("$GUARD")
check "the guarded command holds the lock" wait_until 5 is_held orphan
wait_until 5 test -s "$WORK/orphan.pid"
CMD_PID=$(cat "$WORK/orphan.pid")
PIDS+=("$CMD_PID")
kill -KILL "$GUARD"
wait "$GUARD" 2>/dev/null
t0=$(now_ms)
if wait_until 2 gone_or_zombie "$CMD_PID"; then
    ok "SIGKILL to rlock kills the command too ($(($(now_ms) - t0)) ms)"
else
    not_ok "the command outlived rlock's SIGKILL" \
        "pid $CMD_PID still running after $(($(now_ms) - t0)) ms"
fi
rcli del orphan >/dev/null

# -------------------------------------------------------------------- info

echo "# info"
"$RLOCK" exec inf -- sleep 30 >/dev/null 2>&1 &
HOLDER=$!
PIDS+=("$HOLDER")
check "info: the holder has the lock" wait_until 5 is_held inf
"$RLOCK" exec --wait 120000 inf -- true >/dev/null 2>&1 &
WAITER=$!
PIDS+=("$WAITER")
check "info: the waiter is subscribed" wait_until 5 has_waiter inf
field=$(rcli hkeys inf)
run info inf
expect_status 0 "info on a held lock"
row=$(sed -n 2p <<<"$out")
read -r r_name r_kind r_state r_client r_thread r_holds r_ttl r_waiting <<<"$row"
if [ "$r_name" = inf ] && [ "$r_kind" = lock ] && [ "$r_state" = held ] &&
    [ "$r_client:$r_thread" = "$field" ] && [ "$r_holds" = 1 ] &&
    [ "$r_ttl" -gt 0 ] && [ "$r_ttl" -le 30000 ] && [ "$r_waiting" = 1 ]; then
    ok "info table: kind, state, client, thread, holds, ttl, waiting"
else
    not_ok "info table row" "row: $row" "field in Redis: $field"
fi
expect_text "$(sed -n 1p <<<"$out")" "NAME" "info table has a header"
run info --json inf free-one
expect_status 0 "info --json"
json_checks "info --json fields" \
    'len(j) == 2' \
    'j[0]["name"] == "inf"' \
    'j[0]["kind"] == "lock"' \
    'j[0]["held"] is True' \
    'j[0]["holders"][0]["client"] + ":" + str(j[0]["holders"][0]["thread"]) == "'"$field"'"' \
    'j[0]["holders"][0]["count"] == 1' \
    'j[0]["holders"][0]["write"] is False' \
    'j[0]["hold_count"] == 1' \
    '0 < j[0]["ttl_ms"] <= 30000' \
    'j[0]["waiting"] == 1' \
    'j[0]["queued"] == 0' \
    'j[0]["token"] is None' \
    'j[0]["mode"] is None' \
    'j[0]["type"] == "hash"' \
    'j[1]["name"] == "free-one"' \
    'j[1]["kind"] == "free"' \
    'j[1]["held"] is False' \
    'j[1]["ttl_ms"] == -2' \
    'j[1]["holders"] == []' \
    'j[1]["type"] == "none"' \
    'j[0]["subscribers"] == {"redisson_lock__channel:{inf}": 1, "redisson_rwlock:{inf}": 0}' \
    'j[0]["queue"] == []' \
    'j[1]["subscribers"]["redisson_lock__channel:{free-one}"] == 0'
# two more waiters queue behind the first in rlock's queue, on channels of
# their own: WAITING counts them too
LATER=()
for _ in 1 2; do
    "$RLOCK" exec --wait 120000 inf -- true >/dev/null 2>&1 &
    LATER+=($!)
    PIDS+=($!)
done
rlock_queued() {
    [ "$(rcli llen "redisson_rlock_queue:{$1}")" = "$2" ]
}
check "info: three waiters queue in rlock's queue" \
    wait_until 5 rlock_queued inf 3
run info --json inf
json_checks "info --json counts the waiters behind the queue's head" \
    'j[0]["in_turn"] == 3' \
    'j[0]["waiting"] == 3' \
    'j[0]["subscribers"]["redisson_lock__channel:{inf}"] == 1'
kill -TERM "$HOLDER"
wait "$HOLDER"
holder_status=$?
t0=$(now_ms)
wait "$WAITER"
waiter_status=$?
t1=$(now_ms)
if [ "$waiter_status" -eq 0 ] && [ $((t1 - t0)) -lt 5000 ]; then
    ok "the waiter ran once the holder was stopped ($((t1 - t0)) ms)"
else
    not_ok "waiter status $waiter_status after $((t1 - t0)) ms" \
        "holder status $holder_status"
fi
later_failed=0
for pid in "${LATER[@]}"; do
    wait "$pid" || later_failed=1
done
check "the waiters behind it ran in turn" [ "$later_failed" = 0 ]

U1=11111111-2222-3333-4444-555555555555
U2=66666666-7777-8888-9999-aaaaaaaaaaaa
rcli hset rw mode write "$U1:7:write" 1 "$U1:7" 2 >/dev/null
rcli hset fair "$U1:3" 2 >/dev/null
rcli rpush "redisson_lock_queue:{fair}" "$U2:4" "$U2:5" >/dev/null
# the first waiter's deadline, 60 s from the server's now (wall clock ms)
fair_deadline=$(($(rcli time | head -1) * 1000 + 60000))
rcli zadd "redisson_lock_timeout:{fair}" "$fair_deadline" "$U2:4" >/dev/null
rcli hset fenced "$U2:9" 1 >/dev/null
rcli set "redisson_lock_token:{fenced}" 5 >/dev/null
rcli set str value >/dev/null
rcli hset odd a b >/dev/null
run info --json rw fair fenced str odd
expect_status 0 "info --json on other lock kinds"
json_checks "info recognises read-write, fair, fenced and non-lock keys" \
    '[x["kind"] for x in j] == ["read-write", "fair", "fenced", "not-a-lock", "not-a-lock"]' \
    'j[0]["mode"] == "write"' \
    'sorted((h["thread"], h["count"], h["write"]) for h in j[0]["holders"]) == [(7, 1, True), (7, 2, False)]' \
    'j[0]["hold_count"] == 3' \
    'j[0]["ttl_ms"] == -1' \
    'j[1]["queued"] == 2' \
    '[(w["owner"], w["client"], w["thread"]) for w in j[1]["queue"]] == [("'"$U2"':4", "'"$U2"'", 4), ("'"$U2"':5", "'"$U2"'", 5)]' \
    'j[1]["queue"][0]["deadline_ms"] == '"$fair_deadline" \
    '55000 < j[1]["queue"][0]["expires_in_ms"] <= 60000' \
    'j[1]["queue"][1]["deadline_ms"] is None' \
    'j[1]["queue"][0]["subscribed"] is False' \
    'j[1]["subscribers"]["redisson_lock__channel:{fair}:'"$U2"':4"] == 0' \
    'j[1]["hold_count"] == 2' \
    'j[1]["held"] is True' \
    'j[2]["token"] == 5' \
    'j[2]["holders"][0]["client"] == "'"$U2"'"' \
    'j[3]["type"] == "string"' \
    'j[3]["held"] is False' \
    'j[4]["type"] == "hash"'
run info rw fair fenced
expect_text "$out" "read-write(write)" "the table shows a read-write lock's mode"
expect_text "$out" "fair(2 queued)" "the table shows a fair lock's queue"
expect_text "$out" "fenced(token 5)" "the table shows a fenced lock's token"

# ------------------------------------------------------------------ unlock

echo "# unlock --force"
run unlock --force never-locked
expect_status 0 "unlock --force of a free lock"
expect_text "$out" "never-locked: not locked" "a free lock is reported"
run unlock --force str
expect_status 1 "unlock --force of a key that is not a lock"
check "a key that is not a lock is left alone" test "$(rcli get str)" = value
run unlock --force rw
expect_status 0 "unlock --force of a read-write lock"
check "the read-write lock is gone" is_free rw

"$RLOCK" exec fw -- sleep 30 >/dev/null 2>&1 &
HOLDER=$!
PIDS+=("$HOLDER")
check "unlock: the holder has the lock" wait_until 5 is_held fw
"$RLOCK" exec --wait 120000 fw -- sh -c "echo got >'$WORK/woken'" \
    >/dev/null 2>&1 &
WAITER=$!
PIDS+=("$WAITER")
check "unlock: the waiter is subscribed" wait_until 5 has_waiter fw
t0=$(now_ms)
run unlock --force fw
expect_status 0 "unlock --force with a waiter"
wait "$WAITER"
waiter_status=$?
t1=$(now_ms)
# The holder's lease is 30 s: a waiter through in well under that was woken
# by the unlock message, not by the lease running out.
if [ "$waiter_status" -eq 0 ] && [ "$(cat "$WORK/woken")" = got ] &&
    [ $((t1 - t0)) -lt 5000 ]; then
    ok "unlock --force wakes the waiter ($((t1 - t0)) ms)"
else
    not_ok "waiter after force unlock" "status $waiter_status after $((t1 - t0)) ms"
fi
kill -TERM "$HOLDER"
wait "$HOLDER"

# ------------------------------------------------------------------- watch

echo "# watch"
"$RLOCK" watch wn other >"$WORK/watch.out" 2>"$WORK/watch.err" &
WATCHER=$!
PIDS+=("$WATCHER")
check "watch starts" wait_until 5 watch_has "$WORK/watch.out" "wn watching: free"
run exec wn -- true
check "watch prints the unlock" wait_until 5 watch_has "$WORK/watch.out" " wn unlocked$"
kill -INT "$WATCHER"
wait "$WATCHER"
watch_status=$?
if [ "$watch_status" -eq 0 ]; then
    ok "watch exits 0 on SIGINT"
else
    not_ok "watch status $watch_status after SIGINT"
fi
expect_text "$(cat "$WORK/watch.err")" "keyspace notifications are off" \
    "watch says once that lock events need notifications"
if grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{4} wn unlocked$' \
    "$WORK/watch.out"; then
    ok "watch lines carry a timestamp"
else
    not_ok "watch line format" "$(cat "$WORK/watch.out")"
fi

# the first watcher's output goes first: the new one truncates the files
# only once it runs, and until then its "watching" line would be the old one
rm -f "$WORK/watch.out" "$WORK/watch.err"
"$RLOCK" watch --enable-notifications wn >"$WORK/watch.out" \
    2>"$WORK/watch.err" &
WATCHER=$!
PIDS+=("$WATCHER")
check "watch --enable-notifications starts" \
    wait_until 5 watch_has "$WORK/watch.out" "wn watching: free"
expect_text "$(rcli config get notify-keyspace-events | sed -n 2p)" "K" \
    "--enable-notifications turned keyspace events on"
run exec wn -- sleep 0.2
check "watch prints who locked" \
    wait_until 5 watch_has "$WORK/watch.out" "wn locked by [0-9a-f-]*:[0-9]* (holds 1)"
check "watch prints the unlock after the lock" \
    wait_until 5 watch_has "$WORK/watch.out" " wn unlocked$"
rcli hset wn "$U1:1" 1 >/dev/null
rcli hincrby wn "$U1:1" 1 >/dev/null
check "watch prints a re-entry" \
    wait_until 5 watch_has "$WORK/watch.out" "wn re-entered by $U1:1 (holds 2)"
rcli pexpire wn 100 >/dev/null
check "watch prints an expiry" \
    wait_until 5 watch_has "$WORK/watch.out" "wn expired"
kill -TERM "$WATCHER"
wait "$WATCHER"
watch_status=$?
if [ "$watch_status" -eq 0 ]; then
    ok "watch exits 0 on SIGTERM"
else
    not_ok "watch status $watch_status after SIGTERM"
fi

# who waits, and how long a holder held: a fair queue of two (no process
# behind it, so the count is exact) and a holder watch sees take the lock
"$RLOCK" watch wq >"$WORK/watch.out" 2>"$WORK/watch.err" &
WATCHER=$!
PIDS+=("$WATCHER")
check "watch of a queued lock starts" \
    wait_until 5 watch_has "$WORK/watch.out" "wq watching: free"
rcli rpush "redisson_lock_queue:{wq}" "$U2:4" "$U2:5" >/dev/null
rcli hset wq "$U1:1" 1 >/dev/null
check "watch counts the waiters of a lock" \
    wait_until 5 watch_has "$WORK/watch.out" "wq locked by $U1:1 (holds 1); 2 waiting$"
sleep 0.2
rcli del wq "redisson_lock_queue:{wq}" >/dev/null
check "watch says how long the holder held it" \
    wait_until 5 watch_has "$WORK/watch.out" "wq held by $U1:1 for [0-9]* ms$"
held_ms=$(sed -n "s/.*wq held by $U1:1 for \([0-9]*\) ms$/\1/p" "$WORK/watch.out")
if [ -n "$held_ms" ] && [ "$held_ms" -ge 200 ] && [ "$held_ms" -lt 5000 ]; then
    ok "the hold time is the time between the two events ($held_ms ms)"
else
    not_ok "hold time $held_ms ms" "$(cat "$WORK/watch.out")"
fi
# rlock's RLock queue tells its next waiter on the same kind of channel as
# a fair lock's unlock: watch says whose turn it is, not "unlocked"
rcli rpush "redisson_rlock_queue:{wq}" "$U2:7" >/dev/null
rcli publish "redisson_lock__channel:{wq}:$U2:7" 0 >/dev/null
check "watch shows a turn told by rlock's queue" \
    wait_until 5 watch_has "$WORK/watch.out" "wq turn of $U2:7 (rlock's queue)"
rcli del "redisson_rlock_queue:{wq}" >/dev/null
kill -TERM "$WATCHER"
wait "$WATCHER"
rcli config set notify-keyspace-events "" >/dev/null

# ------------------------------------------- a release whose PUBLISH is refused

# An ACL user without +publish: the release happens, only waiters are not
# told (RLOCK_ENOTIFY); exec must say so and keep the command's status.
rcli acl setuser nopub on '>pw' '~*' '&*' '+@all' '-publish' >/dev/null
run exec --url "redis://nopub:pw@127.0.0.1:$PORT" np -- sh -c 'exit 3'
expect_status 3 "exec keeps the command's status when the unlock message is refused"
expect_text "$err" "released lock 'np', but" "exec says the lock was released"
if [[ "$err" == *"could not release"* ]]; then
    not_ok "exec reports a refused unlock message as a failed release" "stderr: $err"
else
    ok "exec does not call a released lock unreleased"
fi
check "the lock is free after exec" is_free np
rcli acl deluser nopub >/dev/null

# --------------------------------------------------- semaphores and latches

echo "# semaphores and latches (--kind)"
sync_t0=$(now_ms)
# subscribers NAME-OF-CHANNEL: connections on it (a waiter stands in as a
# redis-cli subscriber: every waiter of any client listens so)
subscribers() {
    rcli pubsub numsub "$1" | sed -n 2p
}
has_subscribers() {
    [ "$(subscribers "$1")" -ge "$2" ]
}
# a waiter on CHANNEL, until the script ends
stand_in_waiter() {
    redis-cli -p "$PORT" subscribe "$1" >/dev/null 2>&1 &
    PIDS+=($!)
}
# raw_permit ID-HEX: the 16 bytes Redisson stores for a permit id
raw_permit() {
    printf '%b' "$(sed 's/../\\x&/g' <<<"$1")"
}

rcli set sem 3 >/dev/null
rcli set cdl 2 >/dev/null
rcli set ps 1 >/dev/null
P1=00112233445566778899aabbccddeeff
P2=ffeeddccbbaa99887766554433221100
p1_end=$(($(rcli time | head -1) * 1000 + 60000))
raw_permit "$P1" | rcli -x zadd "{ps}:timeout" "$p1_end" >/dev/null
# Redisson's score of a permit without a lease
raw_permit "$P2" | rcli -x zadd "{ps}:timeout" 922337203685477 >/dev/null
stand_in_waiter "redisson_sc:{sem}"
stand_in_waiter "redisson_countdownlatch__channel__{cdl}"
check "sync: the stand-in waiters are subscribed" wait_until 5 \
    has_subscribers "redisson_countdownlatch__channel__{cdl}" 1
check "sync: the semaphore's stand-in waiter is subscribed" wait_until 5 \
    has_subscribers "redisson_sc:{sem}" 1

run info sem
expect_status 64 "info refuses a number key without --kind"
expect_text "$err" "--kind semaphore|permit-semaphore|latch" \
    "info says which kinds a number key could be"
run info str
expect_status 0 "info still shows a string holding no number as not-a-lock"
run info --kind mutex sem
expect_status 64 "info --kind with an unknown kind"
run info --kind latch odd
expect_status 1 "info --kind on a key of another type"
expect_text "$err" "'odd' is a hash key, not a latch" "info says what the key is"

run info --kind semaphore sem
expect_status 0 "info --kind semaphore"
read -r s_name s_kind s_permits s_ttl s_waiting <<<"$(sed -n 2p <<<"$out")"
if [ "$s_name $s_kind $s_permits $s_ttl $s_waiting" = "sem semaphore 3 none 1" ]; then
    ok "info table: a semaphore's permits and waiters"
else
    not_ok "info semaphore row" "out: $out"
fi
run info --json --kind semaphore sem no-sem
json_checks "info --json --kind semaphore" \
    'j[0]["kind"] == "semaphore" and j[0]["permits"] == 3' \
    'j[0]["waiting"] == 1 and j[0]["exists"] is True' \
    'j[0]["subscribers"] == {"redisson_sc:{sem}": 1}' \
    'j[1]["permits"] == 0 and j[1]["exists"] is False and j[1]["ttl_ms"] == -2'

run info --json --kind permit-semaphore ps
expect_status 0 "info --kind permit-semaphore"
json_checks "info --json --kind permit-semaphore: permits, held ids, leases" \
    'j[0]["permits"] == 1 and j[0]["waiting"] == 0' \
    'sorted(p["id"] for p in j[0]["held"]) == ["'"$P1"'", "'"$P2"'"]' \
    '[p["lease_end_ms"] for p in j[0]["held"] if p["id"] == "'"$P1"'"] == ['"$p1_end"']' \
    '[p["lease_end_ms"] for p in j[0]["held"] if p["id"] == "'"$P2"'"] == [None]' \
    '55000 < [p["expires_in_ms"] for p in j[0]["held"] if p["id"] == "'"$P1"'"][0] <= 60000'
run info --kind permit-semaphore ps
expect_text "$out" "permit $P2  lease_ms none" "info table lists a held permit"

run info --json --kind latch cdl open-latch
expect_status 0 "info --kind latch"
json_checks "info --json --kind latch: count, waiters, open" \
    'j[0]["count"] == 2 and j[0]["waiting"] == 1 and j[0]["open"] is False' \
    'j[0]["subscribers"] == {"redisson_countdownlatch__channel__{cdl}": 1}' \
    'j[1]["count"] == 0 and j[1]["open"] is True'

run watch sem
expect_status 64 "watch refuses a number key without --kind"

"$RLOCK" watch --kind semaphore sem >"$WORK/wsem.out" 2>&1 &
WSEM=$!
PIDS+=("$WSEM")
"$RLOCK" watch --kind latch cdl >"$WORK/wcdl.out" 2>&1 &
WCDL=$!
PIDS+=("$WCDL")
"$RLOCK" watch --kind permit-semaphore ps >"$WORK/wps.out" 2>&1 &
WPS=$!
PIDS+=("$WPS")
check "watch --kind semaphore starts" wait_until 5 watch_has "$WORK/wsem.out" \
    "sem watching: semaphore, 3 permits available; 1 waiting$"
check "watch --kind latch starts" wait_until 5 watch_has "$WORK/wcdl.out" \
    "cdl watching: latch count 2; 1 waiting$"
check "watch --kind permit-semaphore starts" wait_until 5 watch_has \
    "$WORK/wps.out" "ps watching: permit-semaphore, 1 permits available, 2 held$"
# what a release and a count-down to zero write and publish (Redisson's)
rcli incrby sem 2 >/dev/null
rcli publish "redisson_sc:{sem}" 5 >/dev/null
rcli del cdl >/dev/null
rcli publish "redisson_countdownlatch__channel__{cdl}" 0 >/dev/null
raw_permit "$P2" | rcli -x zrem "{ps}:timeout" >/dev/null
rcli incr ps >/dev/null
rcli publish "redisson_sc:{ps}" 2 >/dev/null
check "watch shows a semaphore's release" wait_until 5 watch_has \
    "$WORK/wsem.out" "sem released (message: 5 available): semaphore, 5 permits available; 1 waiting$"
check "watch shows a latch opening" wait_until 5 watch_has \
    "$WORK/wcdl.out" "cdl opened (count reached zero): latch open; 1 waiting$"
check "watch shows a permit released by id" wait_until 5 watch_has \
    "$WORK/wps.out" "ps released (message: 2 available): permit-semaphore, 2 permits available, 1 held$"
kill -INT "$WSEM" "$WCDL" "$WPS"
wait "$WSEM"
check "watch --kind exits 0 on SIGINT" test $? -eq 0
wait "$WCDL" "$WPS" 2>/dev/null
rcli del sem ps "{ps}:timeout" >/dev/null
echo "# semaphores and latches took $(($(now_ms) - sync_t0)) ms"

# --------------------------------------------------------------------- TLS

# A server on a TLS port (certificates from the C tests' fixture); the
# Redisson config file names the CA to trust (sslTruststore). Its plain
# port, for redis-cli, shows what the tool did.
if ! redis_has_tls; then
    echo "ok - # SKIP TLS checks: $REDIS_SERVER cannot serve TLS"
elif [ -n "$TLS_FILES" ] && tls_vars=$("$TLS_FILES") && eval "$tls_vars"; then
    DIRS+=("$TLS_DIR") # removed at exit
    start_redis TLS_PLAIN_PORT --tls TLS_PORT \
        --tls-cert-file "$TLS_SERVER_CRT" --tls-key-file "$TLS_SERVER_KEY" \
        --tls-ca-cert-file "$TLS_CA" --tls-auth-clients no
    tls_config() { # FILE CA
        printf '{\n  "singleServerConfig": {\n    "address": "%s",\n    "sslTruststore": "%s"\n  }\n}\n' \
            "rediss://localhost:$TLS_PORT" "$2" >"$1"
    }
    tls_config "$WORK/tls.json" "$TLS_CA"
    tls_config "$WORK/tls-other-ca.json" "$TLS_OTHER_CA"

    run --config "$WORK/tls.json" exec tlslock -- \
        redis-cli -p "$TLS_PLAIN_PORT" hkeys tlslock
    expect_status 0 "exec over TLS (rediss:// in the config file)"
    if [[ "$out" =~ ^$UUID_RE:[0-9]+$ ]]; then
        ok "the lock is held over TLS while CMD runs"
    else
        not_ok "lock not found during exec over TLS" "got: $out"
    fi
    check "the lock is free after exec over TLS" \
        test "$(redis-cli -p "$TLS_PLAIN_PORT" exists tlslock)" = 0
    run --config "$WORK/tls.json" --url "rediss://localhost:$TLS_PORT" \
        info tlslock
    expect_status 0 "info over TLS (rediss:// in --url, the CA in the file)"
    run --config "$WORK/tls-other-ca.json" info tlslock
    expect_status 78 "info trusting another CA than the server's"
    expect_text "$err" "TLS with" "a refused certificate is explained"
    run --config "$WORK/tls-other-ca.json" exec tlslock -- true
    expect_status 78 "exec trusting another CA than the server's"
else
    not_ok "TLS checks: no certificates (rt-tls-files: '$TLS_FILES')"
fi

# ------------------------------------------------------------------- total

cli_end
