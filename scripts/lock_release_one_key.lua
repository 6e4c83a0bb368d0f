-- Release one hold of a reentrant lock naming only the lock hash: the
-- work of lock_release.lua without the unlock latch, for a cluster slot
-- that migrates. Redis answers TRYAGAIN to a script whose keys are not all
-- on one node until the migration ends, and the latch (or the channel,
-- declared as a key by Redisson's layout) never is; this script is served
-- through ASK like Redisson's one-key acquire.
-- KEYS[1] lock hash
-- ARGV[1] unlock channel, ARGV[2] unlock message, ARGV[3] lease to restore
-- when holds remain, ARGV[4] owner tag, ARGV[5] publish commands
-- (space-separated, as in lock_release.lua), ARGV[6] "1": say whether
-- anyone heard the message
-- Reply: as lock_release.lua's.
if redis.call('hexists', KEYS[1], ARGV[4]) == 0 then
    return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[4], -1)
if left > 0 then
    redis.call('pexpire', KEYS[1], ARGV[3])
    return 0
end
redis.call('del', KEYS[1])
local told, heard = true, false
for command in string.gmatch(ARGV[5], '%S+') do
    local sent = redis.pcall(command, ARGV[1], ARGV[2])
    told = told and (type(sent) ~= 'table' or sent.err == nil)
    heard = heard or (type(sent) == 'number' and sent > 0)
end
if not told then
    return 3
end
return (heard and ARGV[6] == '1') and 5 or 1
