-- Delete a fair lock whoever holds it and wake the head of its queue
-- (Redisson FairLock forceUnlock).
-- KEYS[1] lock hash, KEYS[2] queue list, KEYS[3] timeout sorted set,
-- KEYS[4] lock channel
-- ARGV[1] unlock message, ARGV[2] now (wall clock, ms), ARGV[3] publish
-- commands (space-separated, as in lock_release.lua)
-- Reply: 1 if a lock was deleted, 3 if it was but the unlock message was
-- refused (caught, as in lock_release.lua), else 0.
local queue, timeouts = KEYS[2], KEYS[3]
local now = tonumber(ARGV[2])
while true do
    local head = redis.call('lindex', queue, 0)
    if head == false then
        break
    end
    local due = redis.call('zscore', timeouts, head)
    if due == false or tonumber(due) > now then
        break
    end
    redis.call('zrem', timeouts, head)
    redis.call('lpop', queue)
end
if redis.call('del', KEYS[1]) == 1 then
    local head = redis.call('lindex', queue, 0)
    local told = true
    if head ~= false then
        for command in string.gmatch(ARGV[3], '%S+') do
            local sent = redis.pcall(command, KEYS[4] .. ':' .. head, ARGV[1])
            told = told and (type(sent) ~= 'table' or sent.err == nil)
        end
    end
    return told and 1 or 3
end
return 0
