-- Release every hold one owner has on a lock, as its last unlock would:
-- used when a client shuts down with locks still held.
-- KEYS[1] lock hash, KEYS[2] unlock channel
-- ARGV[1] unlock message, ARGV[2] owner tag, ARGV[3] publish command (empty:
-- none)
-- Reply: 1 if the owner held the lock and it was released, else 0.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('del', KEYS[1])
    if ARGV[3] ~= '' then
        redis.call(ARGV[3], KEYS[2], ARGV[1])
    end
    return 1
end
return 0
