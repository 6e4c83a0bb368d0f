-- Leave an orderly RLock's queue (rlock-only keys, see
-- lock_acquire_queued.lua) when the wait ends without the lock; a leaving
-- head tells the next waiter, whose turn it is now.
-- KEYS[1] queue list, KEYS[2] sorted set of when queued waiters go stale
-- ARGV[1] owner tag, ARGV[2] the lock channel (a waiter's own channel is
-- it + ":" + its owner tag), ARGV[3] publish commands (space-separated;
-- empty: tell nobody)
-- Reply: 1 when the caller was queued, else 0.
local head = redis.call('lindex', KEYS[1], 0)
local left = redis.call('lrem', KEYS[1], 0, ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
if head == ARGV[1] then
    local next = redis.call('lindex', KEYS[1], 0)
    if next ~= false then
        for command in string.gmatch(ARGV[3], '%S+') do
            redis.pcall(command, ARGV[2] .. ':' .. next, '0')
        end
    end
end
return left > 0 and 1 or 0
