-- Delete a lock whoever holds it and wake its waiters (Redisson forceUnlock).
-- KEYS[1] lock hash, KEYS[2] unlock channel
-- ARGV[1] unlock message, ARGV[2] publish command (empty: none, as
-- Redisson's SpinLock)
-- Reply: 1 if a lock was deleted, else 0.
if redis.call('del', KEYS[1]) == 1 then
    if ARGV[2] ~= '' then
        redis.call(ARGV[2], KEYS[2], ARGV[1])
    end
    return 1
end
return 0
