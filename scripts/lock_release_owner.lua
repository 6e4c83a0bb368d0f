-- Release every hold one owner has on a lock, as its last unlock would:
-- used when a client shuts down with locks still held.
-- KEYS[1] lock hash, KEYS[2] unlock channel
-- ARGV[1] unlock message, ARGV[2] owner tag, ARGV[3] publish commands
-- (space-separated, as in lock_release.lua; empty: none)
-- A refused PUBLISH (an ACL user without +publish, a renamed command) is
-- caught, as in lock_drop.lua: the lock is deleted all the same, and the
-- reply still says so.
-- Reply: 1 if the owner held the lock and it was released, else 0.
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('del', KEYS[1])
    for command in string.gmatch(ARGV[3], '%S+') do
        redis.pcall(command, KEYS[2], ARGV[1])
    end
    return 1
end
return 0
