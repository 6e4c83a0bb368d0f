-- Take or re-enter a reentrant lock (Redisson RLock acquire).
-- KEYS[1] lock hash
-- ARGV[1] lease in ms, ARGV[2] owner tag "<uuid>:<thread id>"
-- Reply: nil when the caller now holds the lock, else the lock's PTTL.
local key = KEYS[1]
local owner = ARGV[2]
if redis.call('exists', key) == 0
    or redis.call('hexists', key, owner) == 1 then
    redis.call('hincrby', key, owner, 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
return redis.call('pttl', key)
