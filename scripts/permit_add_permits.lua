-- Add permits to a permit-expirable semaphore (negative: take them away),
-- creating it at 0 first (Redisson RPermitExpirableSemaphore addPermits).
-- Unlike RSemaphore's, the message is the number added, and only when it
-- is above 0.
-- KEYS[1] permit count, KEYS[2] channel
-- ARGV[1] permits to add, ARGV[2] publish commands (space-separated)
-- Reply: the new count.
local now = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[1])
redis.call('set', KEYS[1], now)
if tonumber(ARGV[1]) > 0 then
    for command in string.gmatch(ARGV[2], '%S+') do
        redis.pcall(command, KEYS[2], ARGV[1])
    end
end
return now
