-- Take permits of a permit-expirable semaphore, each under an id with a
-- lease (Redisson RPermitExpirableSemaphore tryAcquire). First, as every
-- Redisson call on it does, up to ARGV[1] permits whose lease ran out by
-- the caller's clock (ARGV[3]) go back to the count, announced with the new
-- count when it is above 0. The ids are stored as Redisson stores them:
-- the raw bytes of the hex the caller sends (Redisson sends 16 random
-- bytes and shows them as 32 hex digits).
-- KEYS[1] permit count, KEYS[2] leases "{N}:timeout" (a sorted set: id ->
-- lease end in ms, ARGV[4] for none), KEYS[3] channel "redisson_sc:{N}"
-- ARGV[1] permits wanted, ARGV[2] lease end of the new ids (the caller's
-- clock plus the lease, or ARGV[4]), ARGV[3] the caller's clock in ms,
-- ARGV[4] the "no lease" score 922337203685477, ARGV[5] publish commands
-- (space-separated), ARGV[6..] the ids in hex
-- Reply: 0 (taken); the earliest lease end there is when too few permits
-- are left and some lease will end (Redisson's ":<score>"); -1 when none
-- will (Redisson's nil).
local function publish(value)
    for command in string.gmatch(ARGV[5], '%S+') do
        redis.pcall(command, KEYS[3], value)
    end
end
local ended = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0,
                         ARGV[1])
if #ended > 0 then
    redis.call('zrem', KEYS[2], unpack(ended))
    local value = redis.call('incrby', KEYS[1], #ended)
    if value > 0 then
        publish(value)
    end
end
local available = redis.call('get', KEYS[1])
if available ~= false and tonumber(available) >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1])
    for i = 6, #ARGV do
        local id = ARGV[i]:gsub('%x%x', function(h)
            return string.char(tonumber(h, 16))
        end)
        redis.call('zadd', KEYS[2], ARGV[2], id)
    end
    local ttl = redis.call('pttl', KEYS[1])
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl)
    end
    return 0
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] ~= nil and first[2] ~= ARGV[4] then
    return tonumber(first[2])
end
return -1
