-- Remove what a lost acquire may have added to a writer's field of a
-- read-write lock: every write hold above the count the writer is known to
-- have, as that many write unlocks would (Redisson WriteLock,
-- write_release.lua). The last one deletes the lock and publishes, or,
-- when the writer also reads, leaves the lock in read mode.
-- KEYS[1] lock hash, KEYS[2] rwlock channel
-- ARGV[1] unlock message, ARGV[2] writer owner tag, ARGV[3] publish
-- commands (space-separated, as in lock_release.lua), ARGV[4] write holds
-- the writer is known to have (0: remove them all)
-- Reply: the number of holds removed.
local key = KEYS[1]
if redis.call('hget', key, 'mode') ~= 'write' then
    return 0
end
local count = tonumber(redis.call('hget', key, ARGV[2]))
local known = tonumber(ARGV[4])
if count == nil or count <= known then
    return 0
end
if known > 0 then
    redis.call('hincrby', key, ARGV[2], known - count)
    return count - known
end
redis.call('hdel', key, ARGV[2])
if redis.call('hlen', key) == 1 then
    redis.call('del', key)
    for command in string.gmatch(ARGV[3], '%S+') do
        redis.pcall(command, KEYS[2], ARGV[1])
    end
else
    redis.call('hset', key, 'mode', 'read')
end
return count
