-- Set a count-down latch's count when it has none (Redisson
-- RCountDownLatch.trySetCount), telling waiters the latch is closed again.
-- KEYS[1] the latch (a string holding the count), KEYS[2] its channel
-- ARGV[1] the message, "1" (Redisson's NEW_COUNT_MESSAGE), ARGV[2] the
-- count, ARGV[3] publish commands (space-separated, as in lock_release.lua:
-- PUBLISH, SPUBLISH or both)
-- Reply: 1 when the count was set, 0 when the latch already had one.
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('set', KEYS[1], ARGV[2])
    for command in string.gmatch(ARGV[3], '%S+') do
        redis.call(command, KEYS[2], ARGV[1])
    end
    return 1
end
return 0
