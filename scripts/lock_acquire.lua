-- Take or re-enter a reentrant lock (Redisson RLock acquire), or take a
-- non-reentrant one (Redisson 4.4's RedissonNonReentrantLock acquire).
-- KEYS[1] lock hash
-- ARGV[1] lease in ms, ARGV[2] owner tag "<uuid>:<thread id>",
-- ARGV[3] a non-reentrant lock's error for a holder's second acquire
-- (empty or left out: reentrant)
-- Reply: nil when the caller now holds the lock, else the lock's PTTL; for
-- a non-reentrant lock the holder gets the error reply ARGV[3] instead.
local key = KEYS[1]
local owner = ARGV[2]
if redis.call('exists', key) == 0 then
    redis.call('hincrby', key, owner, 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
if redis.call('hexists', key, owner) == 1 then
    if ARGV[3] ~= nil and ARGV[3] ~= '' then
        return redis.error_reply(ARGV[3])
    end
    redis.call('hincrby', key, owner, 1)
    redis.call('pexpire', key, ARGV[1])
    return nil
end
return redis.call('pttl', key)
