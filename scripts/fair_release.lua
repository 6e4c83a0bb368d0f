-- Release one hold of a fair lock and wake the head of its queue on the
-- head's own channel (Redisson FairLock unlock, with the unlock latch).
-- KEYS[1] lock hash, KEYS[2] queue list, KEYS[3] timeout sorted set,
-- KEYS[4] lock channel (a waiter's channel is it + ":" + owner tag),
-- KEYS[5] unlock latch key
-- ARGV[1] unlock message, ARGV[2] lease to restore when holds remain,
-- ARGV[3] owner tag, ARGV[4] now (wall clock, ms), ARGV[5] publish commands
-- (space-separated, as in lock_release.lua), ARGV[6] latch lifetime in ms
-- Reply: nil (not held by owner), 0 (still held), 1 (released), 3 (released,
-- but the unlock message was refused). Where
-- Redisson replies 1 for a lock that is not there at all, this replies nil
-- (the caller's hold is gone) and leaves the same latch and message.
-- A refused PUBLISH (an ACL user without +publish, a renamed command) is
-- caught, so that the writes are done as Redisson's and the reply says the
-- waiters were not told (3 instead of 1).
local latched = redis.call('get', KEYS[5])
if latched ~= false then
    return tonumber(latched)
end
local key, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local now = tonumber(ARGV[4])
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

-- returns false when the head could not be told
local function wake_head()
    local head = redis.call('lindex', queue, 0)
    local told = true
    if head ~= false then
        for command in string.gmatch(ARGV[5], '%S+') do
            local sent = redis.pcall(command, KEYS[4] .. ':' .. head, ARGV[1])
            told = told and (type(sent) ~= 'table' or sent.err == nil)
        end
    end
    return told
end

if redis.call('exists', key) == 0 then
    wake_head()
    redis.call('set', KEYS[5], 1, 'px', ARGV[6])
    return nil
end
if redis.call('hexists', key, ARGV[3]) == 0 then
    return nil
end
local left = redis.call('hincrby', key, ARGV[3], -1)
if left > 0 then
    redis.call('pexpire', key, ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
end
redis.call('del', key)
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
return wake_head() and 1 or 3
