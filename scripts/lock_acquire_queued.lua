-- Take or re-enter a reentrant lock in turn (rlock's orderly RLock acquire):
-- the lock hash is changed exactly as Redisson's RLock acquire changes it;
-- beside it an rlock-only queue orders rlock's waiters, so that an unlock
-- wakes only the one whose turn it is. Redisson clients never read it.
-- KEYS[1] lock hash, KEYS[2] queue list (owner tags, in arrival order),
-- KEYS[3] sorted set of when each queued waiter goes stale (wall clock ms)
-- ARGV[1] lease in ms, ARGV[2] owner tag, ARGV[3] how long a queued waiter
-- keeps its place without trying again (ms), ARGV[4] now (the client's
-- wall clock, ms, as Redisson's fair lock), ARGV[5] the lock channel (a
-- waiter's own channel is it + ":" + its owner tag), ARGV[6] publish
-- commands (space-separated, as in lock_release.lua; empty: tell nobody)
-- Reply: nil when the caller now holds the lock; else, when the caller
-- heads the queue, how long the holder's lease has left (ms, at least 0,
-- 2147483647 for none); -3 when it waits behind another.
-- A try without a wait never queues: it is lock_acquire.lua's, as Redisson.
-- The queue's keys expire when nobody has refreshed them for ARGV[3] ms,
-- and a head that went stale (its process died, or gave up unheard) is
-- dropped by the next waiter's try, which tells the new head. A head seen
-- leaving a free lock untaken (it gave up while Redis was stalled, or ran
-- out of memory, and its leaving never arrived) has HEAD_GRACE_MS more to
-- take it before it counts as stale: a live head, told by the unlock, takes
-- it within a round trip or two, and a dead one holds the free lock up
-- until the next waiter's re-check after that, not for its whole ARGV[3].
-- (The waiter behind is not told to try sooner: it would wait on the
-- head's channel, beside the head, whose wake-up it could take.)
local key, queue, stale_at = KEYS[1], KEYS[2], KEYS[3]
local owner = ARGV[2]
local free = redis.call('exists', key) == 0
if not free and redis.call('hexists', key, owner) == 1 then
    redis.call('hincrby', key, owner, 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
local keep, now = tonumber(ARGV[3]), tonumber(ARGV[4])
local HEAD_GRACE_MS = math.min(keep, 500)

-- the waiter's own channel: it tries at once
local function tell(waiter)
    for command in string.gmatch(ARGV[6], '%S+') do
        redis.pcall(command, ARGV[5] .. ':' .. waiter, '0')
    end
end

local head = redis.call('lindex', queue, 0)
local dropped = false
while head ~= false do
    local due = redis.call('zscore', stale_at, head)
    if due ~= false and tonumber(due) > now then
        break
    end
    redis.call('zrem', stale_at, head)
    redis.call('lpop', queue)
    dropped = true
    head = redis.call('lindex', queue, 0)
end

if free and (head == false or head == owner) then
    if head == owner then
        redis.call('lpop', queue)
        redis.call('zrem', stale_at, owner)
        local next = redis.call('lindex', queue, 0)
        if next ~= false then
            tell(next) -- it heads the queue now
        end
    end
    redis.call('hincrby', key, owner, 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
if dropped and head ~= false and head ~= owner then
    tell(head)
end

if redis.call('zadd', stale_at, now + keep, owner) == 1 then
    redis.call('rpush', queue, owner)
end
if redis.call('pttl', queue) < keep then
    redis.call('pexpire', queue, keep)
end
if redis.call('pttl', stale_at) < keep then
    redis.call('pexpire', stale_at, keep)
end
if redis.call('lindex', queue, 0) ~= owner then
    if free then
        local grace_due = now + HEAD_GRACE_MS
        local due = redis.call('zscore', stale_at, head)
        if due == false or tonumber(due) > grace_due then
            redis.call('zadd', stale_at, grace_due, head)
        end
    end
    return -3
end
local ttl = redis.call('pttl', key)
if ttl == -1 then
    return 2147483647
end
return math.max(ttl, 0)
