-- Delete a read-write lock held in the given mode, whoever holds it, and
-- wake its waiters (Redisson ReadLock/WriteLock forceUnlock).
-- KEYS[1] lock hash, KEYS[2] rwlock channel
-- ARGV[1] unlock message, ARGV[2] mode ("read" or "write"), ARGV[3]
-- publish command
-- Reply: 1 if the lock was deleted, 3 if it was but the unlock message was
-- refused (caught, as in lock_release.lua), else 0.
if redis.call('hget', KEYS[1], 'mode') == ARGV[2] then
    redis.call('del', KEYS[1])
    local sent = redis.pcall(ARGV[3], KEYS[2], ARGV[1])
    if type(sent) == 'table' and sent.err ~= nil then
        return 3
    end
    return 1
end
return 0
