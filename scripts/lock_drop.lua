-- Remove what a lost acquire may have added to one owner's field: every
-- hold above the count the owner is known to have there (plain, fenced and
-- spin locks share the field), as that many releases would. The last one
-- deletes the lock and publishes, as Redisson's unlock does.
-- KEYS[1] lock hash, KEYS[2] unlock channel
-- ARGV[1] unlock message, ARGV[2] owner tag, ARGV[3] publish commands
-- (space-separated, as in lock_release.lua; empty: none, as Redisson's
-- SpinLock), ARGV[4] holds the owner is known to have
-- Reply: the number of holds removed.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
local known = tonumber(ARGV[4])
if count == nil or count <= known then
    return 0
end
if known > 0 then
    redis.call('hincrby', KEYS[1], ARGV[2], known - count)
    return count - known
end
redis.call('del', KEYS[1])
for command in string.gmatch(ARGV[3], '%S+') do
    redis.pcall(command, KEYS[2], ARGV[1])
end
return count
