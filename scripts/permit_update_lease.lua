-- Give a permit of a permit-expirable semaphore a new lease end (Redisson
-- RPermitExpirableSemaphore updateLeaseTime), after giving back every
-- permit whose lease had ended by the caller's clock (announced with the
-- new count when it is above 0).
-- KEYS[1] permit count, KEYS[2] leases, KEYS[3] channel
-- ARGV[1] the id in hex, ARGV[2] its new lease end (the caller's clock
-- plus the lease, or the "no lease" score), ARGV[3] the caller's clock in
-- ms, ARGV[4] publish commands (space-separated)
-- Reply: 1 (updated) or 0 (no such id: released, or reclaimed just now).
local ended = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1)
if #ended > 0 then
    redis.call('zrem', KEYS[2], unpack(ended))
    local value = redis.call('incrby', KEYS[1], #ended)
    if value > 0 then
        for command in string.gmatch(ARGV[4], '%S+') do
            redis.pcall(command, KEYS[3], value)
        end
    end
end
local id = ARGV[1]:gsub('%x%x', function(h)
    return string.char(tonumber(h, 16))
end)
if redis.call('zscore', KEYS[2], id) == false then
    return 0
end
redis.call('zadd', KEYS[2], ARGV[2], id)
return 1
