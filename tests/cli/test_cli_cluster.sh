#!/usr/bin/env bash
# tests/cli/test_cli_cluster.sh: the rlock tool on a Redis Cluster (issue
# 14), driven from a shell as test_cli.sh drives it on one server. The
# script makes a cluster of 3 masters (no replicas: the tool only reads
# and listens) on free loopback ports and always stops it (trap on EXIT).
#
#   tests/cli/test_cli_cluster.sh PATH/TO/rlock
#
# What it checks: "rlock info" names the master serving each lock; "rlock
# watch" of two locks on two masters listens on each lock's master (its
# SSUBSCRIBE is seen there, and nowhere else), turns keyspace notifications
# on there, and prints both locks' lock and unlock events, which sharded
# pub/sub and keyspace notifications only deliver on that node; when a
# watched lock's slot moves, watch says so and exits 69. Redis 6.2 has no
# sharded pub/sub: there watch listens with SUBSCRIBE (on the same node),
# unlocks PUBLISH, it learns of the move from the cluster's table (within
# a scan interval, 5 s), and rlock's mode BOTH is refused.
#
# Exit status: 0 when every check passed, 1 otherwise, 77 (CTest "skipped")
# when redis-server, redis-cli or python3 is missing, unless
# RLOCK_TEST_REQUIRE_REDIS=1 makes that a failure.
set -u

RLOCK=${1:?usage: test_cli_cluster.sh PATH/TO/rlock}
case "$RLOCK" in /*) ;; *) RLOCK="$PWD/$RLOCK" ;; esac

# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cli_begin test_cli_cluster

# ----------------------------------------------------------------- cluster

# three free loopback ports for the nodes (tests/support/free_ports.py),
# each bus its node's port + 10000 (before 7.0 it can be nothing else),
# which the script checked free too
free_ports=$(dirname "${BASH_SOURCE[0]}")/../support/free_ports.py
read -r -a P < <(python3 "$free_ports" 3)
BUS=($((P[0] + 10000)) $((P[1] + 10000)) $((P[2] + 10000)))
if redis_has_7_0; then
    BUS_ARGS=(--cluster-port)
else
    BUS_ARGS=()
fi
RANGES=("0 5460" "5461 10922" "10923 16383")

rcli() {
    local i=$1
    shift
    redis-cli -p "${P[$i]}" "$@"
}

for i in 0 1 2; do
    mkdir -p "$WORK/node$i"
    bus=()
    [ ${#BUS_ARGS[@]} -gt 0 ] && bus=(--cluster-port "${BUS[$i]}")
    "$REDIS_SERVER" --port "${P[$i]}" --bind 127.0.0.1 --save "" \
        --appendonly no --dir "$WORK/node$i" --cluster-enabled yes \
        --cluster-config-file nodes.conf "${bus[@]}" \
        --cluster-node-timeout 3000 >"$WORK/node$i/log" 2>&1 &
    REDIS_PIDS+=($!)
done
for i in 0 1 2; do
    wait_until 10 rcli "$i" ping >/dev/null 2>&1 || {
        echo "test_cli_cluster: node $i did not start" >&2
        cat "$WORK/node$i/log" >&2
        exit 1
    }
done
for i in 0 1 2; do
    rcli "$i" cluster set-config-epoch $((i + 1)) >/dev/null
    if [ ${#BUS_ARGS[@]} -gt 0 ]; then
        # shellcheck disable=SC2086 # two numbers
        rcli "$i" cluster addslotsrange ${RANGES[$i]} >/dev/null
    else
        # shellcheck disable=SC2046,SC2086 # every slot, one word each
        rcli "$i" cluster addslots $(seq ${RANGES[$i]}) >/dev/null
    fi
done
for i in 1 2; do
    if [ ${#BUS_ARGS[@]} -gt 0 ]; then
        rcli 0 cluster meet 127.0.0.1 "${P[$i]}" "${BUS[$i]}" >/dev/null
    else
        rcli 0 cluster meet 127.0.0.1 "${P[$i]}" >/dev/null
    fi
done

cluster_ok() {
    local i
    for i in 0 1 2; do
        rcli "$i" cluster info | grep -q "cluster_state:ok" || return 1
        [ "$(rcli "$i" cluster nodes | grep -c master)" = 3 ] || return 1
    done
}
if ! wait_until 20 cluster_ok; then
    echo "test_cli_cluster: the cluster did not form" >&2
    rcli 0 cluster nodes >&2
    exit 1
fi
URL="redis+cluster://127.0.0.1:${P[0]},127.0.0.1:${P[1]}"

# owner NAME: the index of the node serving NAME's slot
owner() {
    local slot i lo hi
    slot=$(rcli 0 cluster keyslot "$1")
    for i in 0 1 2; do
        read -r lo hi <<<"${RANGES[$i]}"
        if [ "$slot" -ge "$lo" ] && [ "$slot" -le "$hi" ]; then
            echo "$i"
            return
        fi
    done
}

# a name on node 0 and one on node 1 (slots are fixed by the names)
N1=
N2=
for k in $(seq 100); do
    [ -z "$N1" ] && [ "$(owner "w$k")" = 0 ] && N1="w$k"
    [ -z "$N2" ] && [ "$(owner "w$k")" = 1 ] && N2="w$k"
done

# shard_subs NODE CHANNEL: PUBSUB SHARDNUMSUB's count (0 before 7.0,
# which has no sharded pub/sub)
shard_subs() {
    if redis_has_7_0; then
        rcli "$1" pubsub shardnumsub "$2" | sed -n 2p
    else
        echo 0
    fi
}

# plain_subs NODE CHANNEL: PUBSUB NUMSUB's count (that node's clients)
plain_subs() {
    rcli "$1" pubsub numsub "$2" | sed -n 2p
}

# lock_subs NODE CHANNEL: the subscribers of a lock channel the way an
# rlock waiter or watch listens in mode AUTO: sharded from 7.0, else plain
if redis_has_7_0; then
    SUB_VERB=SSUBSCRIBE
    PUB_VERB=SPUBLISH
    lock_subs() { shard_subs "$@"; }
else
    SUB_VERB=SUBSCRIBE
    PUB_VERB=PUBLISH
    lock_subs() { plain_subs "$@"; }
fi

# ------------------------------------------------------------------- info

"$RLOCK" --url "$URL" info --json "$N1" "$N2" >"$WORK/info.out" \
    2>"$WORK/info.err"
status=$?
if [ "$status" -eq 0 ] && python3 - "$WORK/info.out" "127.0.0.1:${P[0]}" \
    "127.0.0.1:${P[1]}" <<'PY'; then
import json, sys
rows = json.load(open(sys.argv[1]))
rows = rows if isinstance(rows, list) else rows.get("locks", rows)
assert [r["node"] for r in rows] == sys.argv[2:4], rows
PY
    ok "info names the master serving each lock"
else
    not_ok "info --json: status $status" "$(cat "$WORK/info.out")" \
        "$(cat "$WORK/info.err")"
fi

# ------------------------------------------------------------------ watch

"$RLOCK" --url "$URL" watch --enable-notifications "$N1" "$N2" \
    >"$WORK/watch.out" 2>"$WORK/watch.err" &
WATCH=$!
PIDS+=("$WATCH")
check "watch starts on both locks" wait_until 10 \
    watch_has "$WORK/watch.out" "$N2 watching: free"
CH1="redisson_lock__channel:{$N1}"
CH2="redisson_lock__channel:{$N2}"
check "watch listens ($SUB_VERB) on the master of $N1" \
    test "$(lock_subs 0 "$CH1")" = 1
check "watch listens ($SUB_VERB) on the master of $N2" \
    test "$(lock_subs 1 "$CH2")" = 1
check "and nowhere else" \
    test "$(lock_subs 1 "$CH1")$(lock_subs 2 "$CH1")$(lock_subs 0 "$CH2")" = 000
for i in 0 1; do
    check "watch turned keyspace notifications on at node $i" \
        bash -c "redis-cli -p ${P[$i]} config get notify-keyspace-events |
            sed -n 2p | grep -q K"
done
check "but not at node 2, which serves neither" \
    test -z "$(rcli 2 config get notify-keyspace-events | sed -n 2p)"

# each hold lasts long enough for watch to read the holder after the
# keyspace event, even on a loaded machine (a hold of a few ms is over
# before that read, and watch then prints the unlock alone)
"$RLOCK" --url "$URL" exec "$N1" -- sleep 1 >"$WORK/exec.out" 2>&1
check "exec on $N1 succeeds" test $? -eq 0
check "watch prints who locked $N1 (keyspace events of node 0)" \
    wait_until 5 watch_has "$WORK/watch.out" "$N1 locked by [0-9a-f-]*:[0-9]*"
check "watch prints $N1's unlock ($PUB_VERB on node 0)" \
    wait_until 5 watch_has "$WORK/watch.out" " $N1 unlocked$"
"$RLOCK" --url "$URL" exec "$N2" -- sleep 1 >"$WORK/exec.out" 2>&1
check "exec on $N2 succeeds" test $? -eq 0
check "watch prints who locked $N2 (node 1)" \
    wait_until 5 watch_has "$WORK/watch.out" "$N2 locked by"
check "watch prints $N2's unlock (node 1)" \
    wait_until 5 watch_has "$WORK/watch.out" " $N2 unlocked$"
if [ "$(grep -c " $N1 unlocked$" "$WORK/watch.out")" = 1 ]; then
    ok "one unlock, one line"
else
    not_ok "unlock lines" "$(cat "$WORK/watch.out")"
fi

# the slot of N1 moves from node 0 to node 2 (no keys: the lock is free)
SLOT=$(rcli 0 cluster keyslot "$N1")
ID0=$(rcli 0 cluster myid)
ID2=$(rcli 2 cluster myid)
rcli 2 cluster setslot "$SLOT" importing "$ID0" >/dev/null
rcli 0 cluster setslot "$SLOT" migrating "$ID2" >/dev/null
for i in 2 0 1; do
    rcli "$i" cluster setslot "$SLOT" node "$ID2" >/dev/null
done
wait_watch_exit() {
    ! kill -0 "$WATCH" 2>/dev/null
}
# within the client's scan interval (5 s) where only its table tells
check "watch ends when a watched lock's slot moves" wait_until 20 \
    wait_watch_exit
kill -KILL "$WATCH" 2>/dev/null # one that did not end fails below
wait "$WATCH"
watch_status=$?
if [ "$watch_status" -eq 69 ]; then
    ok "watch exits 69 when the slot moved"
else
    not_ok "watch status $watch_status after the slot moved" \
        "$(cat "$WORK/watch.err")"
fi
if grep -q "slot moved" "$WORK/watch.err"; then
    ok "watch says the slot moved"
else
    not_ok "watch's message" "$(cat "$WORK/watch.err")"
fi

# and a watch started now finds N1 on node 2
"$RLOCK" --url "$URL" watch "$N1" >"$WORK/watch2.out" 2>"$WORK/watch2.err" &
WATCH=$!
PIDS+=("$WATCH")
check "a new watch starts" wait_until 10 \
    watch_has "$WORK/watch2.out" "$N1 watching: free"
check "on the lock's new master" test "$(lock_subs 2 "$CH1")" = 1
kill -INT "$WATCH"
wait "$WATCH"
check "watch exits 0 on SIGINT" test $? -eq 0

# Redisson's shardedSubscriptionMode OFF: plain SUBSCRIBE, still on the
# lock's master (its keyspace events are there)
cat >"$WORK/off.json" <<EOF
{"clusterServersConfig": {"nodeAddresses": ["redis://127.0.0.1:${P[0]}"],
 "shardedSubscriptionMode": "OFF"}}
EOF
"$RLOCK" --config "$WORK/off.json" watch "$N2" >"$WORK/watch3.out" \
    2>"$WORK/watch3.err" &
WATCH=$!
PIDS+=("$WATCH")
check "a watch with sharded pub/sub off starts" wait_until 10 \
    watch_has "$WORK/watch3.out" "$N2 watching: free"
check "it listens with SUBSCRIBE on the lock's master" \
    test "$(plain_subs 1 "$CH2")$(shard_subs 1 "$CH2")" = 10
"$RLOCK" --config "$WORK/off.json" exec "$N2" -- sleep 1 >"$WORK/exec.out" 2>&1
check "it prints who locked (keyspace events on node 1)" \
    wait_until 5 watch_has "$WORK/watch3.out" "$N2 locked by"
check "and the unlock, published plain" \
    wait_until 5 watch_has "$WORK/watch3.out" " $N2 unlocked$"
# rlock's own mode BOTH (a fleet of sharded and plain peers), read from the
# config file: its unlock is published plain too, so the plain watch hears
# it (one in mode AUTO publishes SPUBLISH alone); before 7.0 the mode is
# refused, its SPUBLISH having nowhere to go
cat >"$WORK/both.json" <<EOF
{"clusterServersConfig": {"nodeAddresses": ["redis://127.0.0.1:${P[0]}"],
 "shardedSubscriptionMode": "BOTH"}}
EOF
"$RLOCK" --config "$WORK/both.json" exec "$N2" -- true >"$WORK/exec.out" 2>&1
both_status=$?
if redis_has_7_0; then
    check "an exec in mode BOTH succeeds" test "$both_status" -eq 0
    unlocks_heard() {
        [ "$(grep -c " $N2 unlocked$" "$WORK/watch3.out")" -ge 2 ]
    }
    check "the plain watch hears its unlock" wait_until 5 unlocks_heard
else
    check "an exec in mode BOTH is refused" test "$both_status" -ne 0
fi
kill -TERM "$WATCH"
wait "$WATCH"
check "watch exits 0 on SIGTERM" test $? -eq 0

cli_end
