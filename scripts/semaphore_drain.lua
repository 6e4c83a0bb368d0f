-- Take every available permit of a semaphore (Redisson RSemaphore
-- drainPermits): the count becomes 0 (SET: a time to live is dropped, as
-- Redisson's) and nobody is told, since nothing was freed.
-- KEYS[1] semaphore key
-- Reply: the count there was (0 when the key did not exist).
local was = redis.call('get', KEYS[1])
if was == false then
    return 0
end
redis.call('set', KEYS[1], 0)
return tonumber(was)
