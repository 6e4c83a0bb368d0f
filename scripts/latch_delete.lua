-- Delete a count-down latch (Redisson RCountDownLatch.delete), telling
-- waiters with Redisson's NEW_COUNT_MESSAGE, which wakes none of
-- Redisson's (rlock's find the count gone when they re-check).
-- KEYS[1] the latch, KEYS[2] its channel
-- ARGV[1] the message, "1", ARGV[2] publish commands (space-separated)
-- Reply: 1 when there was a latch, else 0.
if redis.call('del', KEYS[1]) == 1 then
    for command in string.gmatch(ARGV[2], '%S+') do
        redis.call(command, KEYS[2], ARGV[1])
    end
    return 1
end
return 0
