-- Delete a lock whoever holds it and wake its waiters (Redisson forceUnlock).
-- KEYS[1] lock hash, KEYS[2] unlock channel
-- ARGV[1] unlock message, ARGV[2] publish command (empty: none, as
-- Redisson's SpinLock)
-- Reply: 1 if a lock was deleted, 3 if it was but the unlock message was
-- refused (caught, as in lock_release.lua), else 0.
if redis.call('del', KEYS[1]) == 1 then
    if ARGV[2] ~= '' then
        local sent = redis.pcall(ARGV[2], KEYS[2], ARGV[1])
        if type(sent) == 'table' and sent.err ~= nil then
            return 3
        end
    end
    return 1
end
return 0
