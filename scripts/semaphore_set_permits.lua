-- Set a semaphore's permits if it has none set yet (Redisson RSemaphore
-- trySetPermits(permits), and trySetPermits(permits, timeToLive) when
-- ARGV[3] is above 0: the key then expires after ARGV[3] ms), and tell its
-- waiters the count.
-- KEYS[1] semaphore key, KEYS[2] its channel
-- ARGV[1] permits, ARGV[2] publish commands (space-separated), ARGV[3]
-- time to live in ms (0: none)
-- Reply: 1 (set) or 0 (the key exists: nothing written).
if redis.call('exists', KEYS[1]) == 1 then
    return 0
end
if tonumber(ARGV[3]) > 0 then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
else
    redis.call('set', KEYS[1], ARGV[1])
end
for command in string.gmatch(ARGV[2], '%S+') do
    redis.pcall(command, KEYS[2], ARGV[1])
end
return 1
