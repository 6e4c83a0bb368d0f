-- Release one write hold of a read-write lock (Redisson WriteLock unlock,
-- with the unlock latch). A writer that still reads keeps the lock in read
-- mode and, as in Redisson, publishes nothing.
-- KEYS[1] lock hash, KEYS[2] rwlock channel, KEYS[3] unlock latch key
-- ARGV[1] unlock message ("1": wakes every waiter), ARGV[2] lease to
-- restore when holds remain, ARGV[3] writer owner tag, ARGV[4] publish
-- commands (space-separated, as in lock_release.lua), ARGV[5] latch
-- lifetime in ms
-- Reply: nil (not held by owner), 0 (still held), 1 (released), 3 (released,
-- but the unlock message was refused).
-- A refused PUBLISH (an ACL user without +publish, a renamed command) is
-- caught, so that the writes are done as Redisson's and the reply says the
-- waiters were not told (3 instead of 1).
local function announce()
    local told = true
    for command in string.gmatch(ARGV[4], '%S+') do
        local sent = redis.pcall(command, KEYS[2], ARGV[1])
        told = told and (type(sent) ~= 'table' or sent.err == nil)
    end
    return told
end
local latched = redis.call('get', KEYS[3])
if latched ~= false then
    return tonumber(latched)
end
local key = KEYS[1]
local mode = redis.call('hget', key, 'mode')
if mode == false then
    announce()
    redis.call('set', KEYS[3], 1, 'px', ARGV[5])
    return nil
end
if mode ~= 'write' or redis.call('hexists', key, ARGV[3]) == 0 then
    return nil
end
local left = redis.call('hincrby', key, ARGV[3], -1)
if left > 0 then
    redis.call('pexpire', key, ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('hdel', key, ARGV[3])
local told = true
if redis.call('hlen', key) == 1 then
    redis.call('del', key)
    told = announce()
else
    redis.call('hset', key, 'mode', 'read')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return told and 1 or 3
