-- Take or re-enter the write side of a read-write lock (Redisson
-- WriteLock). A reentry adds the lease to what is left, as Redisson does.
-- KEYS[1] lock hash
-- ARGV[1] lease in ms, ARGV[2] writer owner tag ("<uuid>:<tid>:write")
-- Reply: nil when the caller now holds the write lock, else the PTTL.
local key = KEYS[1]
local mode = redis.call('hget', key, 'mode')
if mode == false then
    redis.call('hset', key, 'mode', 'write')
    redis.call('hset', key, ARGV[2], 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
if mode == 'write' and redis.call('hexists', key, ARGV[2]) == 1 then
    redis.call('hincrby', key, ARGV[2], 1)
    local left = redis.call('pttl', key)
    redis.call('pexpire', key, left + tonumber(ARGV[1]))
    return nil
end
return redis.call('pttl', key)
