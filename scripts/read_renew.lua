-- Renew a batch of read holds (Redisson 4.4+ read renewal: each owner
-- renews its own lease keys, then the hash).
-- KEYS[2i-1] lock hash i, KEYS[2i] the owner's timeout prefix for it
-- ARGV[1] new lease in ms, ARGV[i + 1] reader owner tag i
-- Reply: one integer per lock: 1 renewed; 0 the lock is gone; 2 the lock
-- is there but the owner holds no read lock in it.
local renewed = {}
for i = 1, #KEYS / 2 do
    local key, prefix = KEYS[2 * i - 1], KEYS[2 * i]
    local holds = tonumber(redis.call('hget', key, ARGV[i + 1]))
    if holds ~= nil then
        for k = 1, holds do
            redis.call('pexpire', prefix .. ':' .. k, ARGV[1])
        end
        redis.call('pexpire', key, ARGV[1])
        renewed[i] = 1
    elseif redis.call('exists', key) == 1 then
        renewed[i] = 2
    else
        renewed[i] = 0
    end
end
return renewed
