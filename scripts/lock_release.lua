-- Release one hold of a reentrant lock (Redisson RLock unlock, with the
-- unlock latch that makes a retried call answer as the first one did).
-- KEYS[1] lock hash, KEYS[2] unlock channel, KEYS[3] unlock latch key
-- ARGV[1] unlock message, ARGV[2] lease to restore when holds remain,
-- ARGV[3] owner tag, ARGV[4] publish commands, space-separated (one, as
-- Redisson's ARGV[4]; "SPUBLISH PUBLISH" for a cluster's mixed fleet; empty:
-- publish nothing, as Redisson's SpinLock), ARGV[5] latch lifetime in ms,
-- ARGV[6] (rlock's, optional) "1": say whether anyone heard the message
-- Reply: nil (not held by owner), 0 (still held), 1 (released), 3
-- (released, but the unlock message was refused); with ARGV[6], 5 for
-- released when a subscriber heard the message (someone waits for the
-- lock). The latch keeps Redisson's 1 for every release: a retried call
-- learns only that it released.
-- A refused PUBLISH (an ACL user without +publish, a renamed command) is
-- caught, so that the writes are done as Redisson's and the reply says the
-- waiters were not told (3 instead of 1).
local latched = redis.call('get', KEYS[3])
if latched ~= false then
    return tonumber(latched)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if left > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
local told, heard = true, false
for command in string.gmatch(ARGV[4], '%S+') do
    local sent = redis.pcall(command, KEYS[2], ARGV[1])
    told = told and (type(sent) ~= 'table' or sent.err == nil)
    heard = heard or (type(sent) == 'number' and sent > 0)
end
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
if not told then
    return 3
end
return (heard and ARGV[6] == '1') and 5 or 1
