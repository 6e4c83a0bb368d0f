-- Take or re-enter a reentrant lock in turn (rlock's orderly RLock acquire):
-- the lock hash is changed exactly as Redisson's RLock acquire changes it;
-- beside it an rlock-only queue orders rlock's waiters, so that an unlock
-- wakes only the one whose turn it is. Redisson clients never read it.
-- KEYS[1] lock hash, KEYS[2] queue list (owner tags, in arrival order),
-- KEYS[3] sorted set of when each queued waiter goes stale (the server's
-- clock, ms)
-- ARGV[1] lease in ms, ARGV[2] owner tag, ARGV[3] how long a queued waiter
-- keeps its place without trying again (ms), ARGV[4] the lock channel (a
-- waiter's own channel is it + ":" + its owner tag), ARGV[5] publish
-- commands (space-separated, as in lock_release.lua; empty: tell nobody),
-- ARGV[6] a non-reentrant lock's error for a holder's second acquire, as
-- in lock_acquire.lua (empty or left out: reentrant)
-- Reply: nil when the caller now holds the lock; else, when the caller
-- heads the queue, how long the holder's lease has left (ms, at least 0,
-- 2147483647 for none); -3 when it waits behind another; -4 when it waits
-- behind a head that has not taken the free lock yet (HEAD_GRACE_MS
-- decides, and the caller should look again soon after).
--
-- Only a waiter that found the lock taken runs this: an acquire first
-- tries lock_acquire.lua, Redisson's one-key script.
--
-- Times are the server's (TIME), never a client's: clients' clocks need not
-- agree, and a caller is never stale to itself (it is here, trying).
-- Membership heals itself, since either key may vanish on its own (both
-- expire, so a volatile-* eviction policy can take one; a failover can
-- lose them): a waiter missing from the list is pushed again, a head
-- missing from the set gets HEAD_GRACE_MS to show it is alive.
--
-- A head that went stale (its process died, or it gave up unheard) is
-- dropped by the next waiter's try, which tells the new head. A head seen
-- leaving a free lock untaken has HEAD_GRACE_MS more to take it before it
-- counts as stale: a live head, told by the unlock, takes it within a round
-- trip or two.
if redis.replicate_commands ~= nil then
    redis.replicate_commands() -- TIME before writes (Redis 5 and 6)
end
local key, queue, stale_at = KEYS[1], KEYS[2], KEYS[3]
local owner = ARGV[2]
local free = redis.call('exists', key) == 0
if not free and redis.call('hexists', key, owner) == 1 then
    if ARGV[6] ~= nil and ARGV[6] ~= '' then
        return redis.error_reply(ARGV[6]) -- a non-reentrant lock's holder
    end
    redis.call('hincrby', key, owner, 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
local keep = tonumber(ARGV[3])
local clock = redis.call('time')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local HEAD_GRACE_MS = math.min(keep, 500)

-- the waiter's own channel: it tries at once
local function tell(waiter)
    for command in string.gmatch(ARGV[5], '%S+') do
        redis.pcall(command, ARGV[4] .. ':' .. waiter, '0')
    end
end

local head = redis.call('lindex', queue, 0)
local dropped = false
while head ~= false and head ~= owner do
    local due = redis.call('zscore', stale_at, head)
    if due == false then
        redis.call('zadd', stale_at, now + HEAD_GRACE_MS, head)
        break
    end
    if tonumber(due) > now then
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
        local next = redis.call('lindex', queue, 0)
        if next ~= false then
            tell(next) -- it heads the queue now
        end
    end
    redis.call('zrem', stale_at, owner)
    redis.call('hincrby', key, owner, 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
if dropped and head ~= false and head ~= owner then
    tell(head)
end

redis.call('zadd', stale_at, now + keep, owner)
if head == false or
        (head ~= owner and redis.call('lpos', queue, owner) == false) then
    redis.call('rpush', queue, owner)
    if head == false then
        head = owner
    end
end
if redis.call('pttl', queue) < keep then
    redis.call('pexpire', queue, keep)
end
if redis.call('pttl', stale_at) < keep then
    redis.call('pexpire', stale_at, keep)
end
if head ~= owner then
    if free then
        local grace_due = now + HEAD_GRACE_MS
        local due = redis.call('zscore', stale_at, head)
        if due == false or tonumber(due) > grace_due then
            redis.call('zadd', stale_at, grace_due, head)
        end
        return -4
    end
    return -3
end
local ttl = redis.call('pttl', key)
if ttl == -1 then
    return 2147483647
end
return math.max(ttl, 0)
