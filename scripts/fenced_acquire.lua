-- Take or re-enter a fenced lock and draw its next token (Redisson
-- FencedLock, the token-returning form).
-- KEYS[1] lock hash, KEYS[2] token counter
-- ARGV[1] lease in ms, ARGV[2] owner tag
-- Reply: {-1, token} when the caller now holds the lock, else {PTTL, -1}.
local key = KEYS[1]
if redis.call('exists', key) == 0
    or redis.call('hexists', key, ARGV[2]) == 1 then
    local token = redis.call('incr', KEYS[2])
    redis.call('hincrby', key, ARGV[2], 1)
    redis.call('pexpire', key, ARGV[1])
    return {-1, token}
end
return {redis.call('pttl', key), -1}
