-- Take or re-enter the read side of a read-write lock (Redisson ReadLock).
-- Each read hold k has its own lease key "<timeout prefix>:k", so a reader
-- that dies takes only its own holds with it.
-- KEYS[1] lock hash, KEYS[2] timeout prefix "{N}:<owner>:rwlock_timeout"
-- ARGV[1] lease in ms, ARGV[2] reader owner tag, ARGV[3] the same owner's
-- write tag (a writer may also read)
-- Reply: nil when the caller now holds a read lock, else the lock's PTTL.
local key = KEYS[1]
local mode = redis.call('hget', key, 'mode')
if mode == false then
    redis.call('hset', key, 'mode', 'read')
    redis.call('hset', key, ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1)
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
    redis.call('pexpire', key, ARGV[1])
    return nil
end
if mode == 'read' or
    (mode == 'write' and redis.call('hexists', key, ARGV[3]) == 1) then
    local count = redis.call('hincrby', key, ARGV[2], 1)
    local timeout = KEYS[2] .. ':' .. count
    redis.call('set', timeout, 1)
    redis.call('pexpire', timeout, ARGV[1])
    local left = redis.call('pttl', key)
    redis.call('pexpire', key, math.max(left, tonumber(ARGV[1])))
    return nil
end
return redis.call('pttl', key)
