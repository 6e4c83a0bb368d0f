-- Add permits to a semaphore (a negative count takes them away), creating
-- it at 0 first, and tell its waiters the new count (Redisson RSemaphore
-- addPermits). As Redisson's, the key is written with SET, which drops a
-- time to live trySetPermits gave it.
-- KEYS[1] semaphore key, KEYS[2] its channel
-- ARGV[1] permits to add, ARGV[2] publish commands (space-separated)
-- Reply: the new permit count.
local now = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[1])
redis.call('set', KEYS[1], now)
for command in string.gmatch(ARGV[2], '%S+') do
    redis.pcall(command, KEYS[2], now)
end
return now
