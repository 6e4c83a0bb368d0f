-- Give permits back to a semaphore and tell its waiters how many there
-- are now (Redisson RSemaphore release(permits), and releaseIfExists with
-- ARGV[3] "1"): INCRBY, then the new count as the message on its channel,
-- which Redisson's waiters read as the number of them that may try.
-- KEYS[1] semaphore key, KEYS[2] its channel "redisson_sc:{N}"
-- ARGV[1] permits (> 0), ARGV[2] publish commands, space-separated
-- (PUBLISH, SPUBLISH, or both for a cluster's mixed fleet), ARGV[3] "1":
-- only when the semaphore exists
-- Reply: 1 (released) or 0 (ARGV[3] "1" and no such key: nothing written).
-- A refused publish (an ACL without it) is caught: the permits are back
-- either way, and waiters find them at their next re-check.
if ARGV[3] == '1' and redis.call('exists', KEYS[1]) == 0 then
    return 0
end
local now = redis.call('incrby', KEYS[1], ARGV[1])
for command in string.gmatch(ARGV[2], '%S+') do
    redis.pcall(command, KEYS[2], now)
end
return 1
