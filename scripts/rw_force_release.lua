-- Delete a read-write lock held in the given mode, whoever holds it, and
-- wake its waiters (Redisson ReadLock/WriteLock forceUnlock).
-- KEYS[1] lock hash, KEYS[2] rwlock channel
-- ARGV[1] unlock message, ARGV[2] mode ("read" or "write"), ARGV[3]
-- publish commands (space-separated, as in lock_release.lua)
-- Reply: 1 if the lock was deleted, 3 if it was but the unlock message was
-- refused (caught, as in lock_release.lua), else 0.
if redis.call('hget', KEYS[1], 'mode') == ARGV[2] then
    redis.call('del', KEYS[1])
    local told = true
    for command in string.gmatch(ARGV[3], '%S+') do
        local sent = redis.pcall(command, KEYS[2], ARGV[1])
        told = told and (type(sent) ~= 'table' or sent.err == nil)
    end
    return told and 1 or 3
end
return 0
