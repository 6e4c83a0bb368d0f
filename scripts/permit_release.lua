-- Give back one permit of a permit-expirable semaphore by its id, from any
-- process (Redisson RPermitExpirableSemaphore tryRelease(id)): the id
-- leaves the leases, the count goes up by one and the new count is
-- announced. A permit whose lease had ended by the caller's clock is given
-- back all the same, but the reply says it was no longer held.
-- KEYS[1] permit count, KEYS[2] channel, KEYS[3] leases
-- ARGV[1] the id in hex, ARGV[2] the caller's clock in ms, ARGV[3] publish
-- commands (space-separated)
-- Reply: 1 (released), 0 (no such id, or its lease had ended).
local id = ARGV[1]:gsub('%x%x', function(h)
    return string.char(tonumber(h, 16))
end)
local lease_end = redis.call('zscore', KEYS[3], id)
if redis.call('zrem', KEYS[3], id) ~= 1 then
    return 0
end
local value = redis.call('incrby', KEYS[1], 1)
for command in string.gmatch(ARGV[3], '%S+') do
    redis.pcall(command, KEYS[2], value)
end
if tonumber(lease_end) <= tonumber(ARGV[2]) then
    return 0
end
return 1
