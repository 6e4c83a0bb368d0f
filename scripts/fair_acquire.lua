-- Take or re-enter a fair lock, or queue for it (Redisson FairLock).
-- KEYS[1] lock hash, KEYS[2] queue list, KEYS[3] timeout sorted set
-- ARGV[1] lease in ms, ARGV[2] owner tag, ARGV[3] wait in ms (the slack a
-- queued waiter keeps its place for), ARGV[4] now (wall clock, ms),
-- ARGV[5] "1": try once (never queue), else queue when taken,
-- ARGV[6] a non-reentrant fair lock's error for a holder's second acquire
-- (Redisson 4.4's RedissonNonReentrantFairLock; empty or left out:
-- reentrant).
-- Reply: nil when the caller now holds the lock; otherwise how long to wait
-- at most before trying again (ms; the try-once form replies 1). Redis state
-- is Redisson's; only the waits replied differ: a queued waiter is never
-- told 0, which would make it spin while the head takes its turn.
local key, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local owner = ARGV[2]
local wait, now = tonumber(ARGV[3]), tonumber(ARGV[4])

-- purge waiters at the head whose time ran out (they died or gave up)
while true do
    local head = redis.call('lindex', queue, 0)
    if head == false then
        break
    end
    local due = redis.call('zscore', timeouts, head)
    if due == false or tonumber(due) > now then
        break
    end
    redis.call('zrem', timeouts, head)
    redis.call('lpop', queue)
end

if redis.call('exists', key) == 0 and
    (redis.call('exists', queue) == 0 or
     redis.call('lindex', queue, 0) == owner) then
    redis.call('lpop', queue)
    redis.call('zrem', timeouts, owner)
    local waiting = redis.call('zrange', timeouts, 0, -1)
    for i = 1, #waiting do
        redis.call('zincrby', timeouts, -wait, waiting[i])
    end
    redis.call('hset', key, owner, 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
if redis.call('hexists', key, owner) == 1 then
    if ARGV[6] ~= nil and ARGV[6] ~= '' then
        return redis.error_reply(ARGV[6])
    end
    redis.call('hincrby', key, owner, 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
if ARGV[5] == '1' then
    return 1
end

local function until_head_due()
    local head = redis.call('lindex', queue, 0)
    if head == owner then
        return 1 -- our turn: the holder's lease is running out right now
    end
    local due = head and redis.call('zscore', timeouts, head)
    if due then
        return math.max(1, tonumber(due) - now)
    end
    return 1
end

if redis.call('zscore', timeouts, owner) ~= false then
    local ttl = redis.call('pttl', key)
    if ttl >= 0 then
        return math.max(ttl, 1)
    end
    return until_head_due()
end

local last = redis.call('lindex', queue, -1)
local base
if last ~= false and last ~= owner and
    redis.call('zscore', timeouts, last) ~= false then
    base = tonumber(redis.call('zscore', timeouts, last)) - now
else
    base = redis.call('pttl', key)
end
if redis.call('zadd', timeouts, base + wait + now, owner) == 1 then
    redis.call('rpush', queue, owner)
end
if base > 0 then
    return base
end
return until_head_due()
