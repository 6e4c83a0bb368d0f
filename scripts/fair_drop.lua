-- Remove what a lost acquire of a fair lock may have added to one owner's
-- field: every hold above the count the owner is known to have there, as
-- that many releases would (lock_drop.lua, for the fair lock). The last one
-- deletes the lock and wakes the head of the fair queue on its own
-- channel, as Redisson's FairLock unlock does; no unlock latch, since no
-- caller retries a drop expecting an unlock's answer.
-- KEYS[1] lock hash, KEYS[2] queue list, KEYS[3] timeout sorted set,
-- KEYS[4] lock channel (a waiter's channel is it + ":" + owner tag)
-- ARGV[1] unlock message, ARGV[2] owner tag, ARGV[3] publish commands
-- (space-separated, as in lock_release.lua), ARGV[4] holds the owner is
-- known to have, ARGV[5] now (wall clock, ms)
-- Reply: the number of holds removed.
local key, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local count = tonumber(redis.call('hget', key, ARGV[2]))
local known = tonumber(ARGV[4])
if count == nil or count <= known then
    return 0
end
if known > 0 then
    redis.call('hincrby', key, ARGV[2], known - count)
    return count - known
end
redis.call('del', key)
local now = tonumber(ARGV[5])
local head = redis.call('lindex', queue, 0)
while head ~= false do
    local due = redis.call('zscore', timeouts, head)
    if due == false or tonumber(due) > now then
        break
    end
    redis.call('zrem', timeouts, head)
    redis.call('lpop', queue)
    head = redis.call('lindex', queue, 0)
end
if head ~= false then
    for command in string.gmatch(ARGV[3], '%S+') do
        redis.pcall(command, KEYS[4] .. ':' .. head, ARGV[1])
    end
end
return count
