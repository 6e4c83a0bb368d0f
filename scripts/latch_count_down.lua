-- Count a count-down latch down by one (Redisson RCountDownLatch.countDown):
-- at zero the latch is deleted and its waiters are told it opened.
-- KEYS[1] the latch, KEYS[2] its channel
-- ARGV[1] the message, "0" (Redisson's ZERO_COUNT_MESSAGE), ARGV[2] publish
-- commands (space-separated)
-- Reply: nil, as Redisson's. A latch without a count stays without one
-- (DECR makes it -1, deleted at once) and nobody is told.
local v = redis.call('decr', KEYS[1])
if v <= 0 then
    redis.call('del', KEYS[1])
end
if v == 0 then
    for command in string.gmatch(ARGV[2], '%S+') do
        redis.call(command, KEYS[2], ARGV[1])
    end
end
