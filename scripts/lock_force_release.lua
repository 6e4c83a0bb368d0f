-- Delete a lock whoever holds it and wake its waiters (Redisson forceUnlock).
-- KEYS[1] lock hash, KEYS[2] unlock channel
-- ARGV[1] unlock message, ARGV[2] publish commands (space-separated, as in
-- lock_release.lua; empty: none, as Redisson's SpinLock)
-- Reply: 1 if a lock was deleted, 3 if it was but the unlock message was
-- refused (caught, as in lock_release.lua), else 0.
if redis.call('del', KEYS[1]) == 1 then
    local told = true
    for command in string.gmatch(ARGV[2], '%S+') do
        local sent = redis.pcall(command, KEYS[2], ARGV[1])
        told = told and (type(sent) ~= 'table' or sent.err == nil)
    end
    return told and 1 or 3
end
return 0
