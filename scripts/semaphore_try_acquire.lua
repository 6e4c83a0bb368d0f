-- Take permits from a semaphore when it has that many (Redisson
-- RSemaphore tryAcquire(permits)): the permit count is a plain string key
-- that DECRBY lowers; a missing key has no permits.
-- KEYS[1] semaphore key
-- ARGV[1] permits wanted (> 0)
-- Reply: 1 (taken) or 0 (too few available; nothing written).
local available = redis.call('get', KEYS[1])
if available == false or tonumber(available) < tonumber(ARGV[1]) then
    return 0
end
redis.call('decrby', KEYS[1], ARGV[1])
return 1
