-- The permits available in a permit-expirable semaphore (Redisson
-- RPermitExpirableSemaphore availablePermits), after giving back every
-- permit whose lease had ended by the caller's clock (announced with the
-- new count when it is above 0).
-- KEYS[1] permit count, KEYS[2] leases, KEYS[3] channel
-- ARGV[1] the caller's clock in ms, ARGV[2] publish commands
-- Reply: the count (0 when the semaphore does not exist).
local ended = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1)
if #ended > 0 then
    redis.call('zrem', KEYS[2], unpack(ended))
    local value = redis.call('incrby', KEYS[1], #ended)
    if value > 0 then
        for command in string.gmatch(ARGV[2], '%S+') do
            redis.pcall(command, KEYS[3], value)
        end
    end
    return value
end
return tonumber(redis.call('get', KEYS[1]) or '0')
