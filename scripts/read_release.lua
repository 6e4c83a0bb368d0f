-- Release one read hold of a read-write lock (Redisson ReadLock unlock,
-- with the unlock latch). The hash lives as long as its longest-lived read
-- hold; the last reader out deletes it and wakes one waiter.
-- KEYS[1] lock hash, KEYS[2] rwlock channel, KEYS[3] the owner's timeout
-- prefix, KEYS[4] key prefix ("{N}", or N when N has a brace),
-- KEYS[5] unlock latch key
-- ARGV[1] unlock message, ARGV[2] reader owner tag, ARGV[3] publish
-- commands (space-separated, as in lock_release.lua), ARGV[4] latch
-- lifetime in ms
-- Reply: nil (not held by owner), 0 (still held), 1 (released), 3 (released,
-- but the unlock message was refused).
-- A refused PUBLISH (an ACL user without +publish, a renamed command) is
-- caught, so that the writes are done as Redisson's and the reply says the
-- waiters were not told (3 instead of 1).
local function announce()
    local told = true
    for command in string.gmatch(ARGV[3], '%S+') do
        local sent = redis.pcall(command, KEYS[2], ARGV[1])
        told = told and (type(sent) ~= 'table' or sent.err == nil)
    end
    return told
end
local latched = redis.call('get', KEYS[5])
if latched ~= false then
    return tonumber(latched)
end
local key = KEYS[1]
local mode = redis.call('hget', key, 'mode')
if mode == false then
    announce()
    redis.call('set', KEYS[5], 1, 'px', ARGV[4])
    return nil
end
if redis.call('hexists', key, ARGV[2]) == 0 then
    return nil
end
local count = redis.call('hincrby', key, ARGV[2], -1)
if count == 0 then
    redis.call('hdel', key, ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (count + 1))

if redis.call('hlen', key) > 1 then
    local longest = -3
    local fields = redis.call('hkeys', key)
    for _, field in ipairs(fields) do
        local holds = tonumber(redis.call('hget', key, field))
        if holds ~= nil then
            for i = holds, 1, -1 do
                local left = redis.call('pttl',
                    KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i)
                longest = math.max(left, longest)
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', key, longest)
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
    if mode == 'write' then
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
end
redis.call('del', key)
local told = announce()
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return told and 1 or 3
