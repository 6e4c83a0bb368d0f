-- Whether one side of a read-write lock is held by anyone (Redisson
-- ReadLock/WriteLock isLocked).
-- KEYS[1] lock hash
-- ARGV[1] "read" or "write"
-- Reply: 1 or 0. A write holder that also reads makes the read side held.
local mode = redis.call('hget', KEYS[1], 'mode')
if ARGV[1] == 'write' then
    return mode == 'write' and 1 or 0
end
if mode == 'read' or
    (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then
    return 1
end
return 0
