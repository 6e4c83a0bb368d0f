-- Renew a batch of watched locks (Redisson's batched watchdog, 3.44+).
-- KEYS[i] lock hash i
-- ARGV[1] new lease in ms, ARGV[i + 1] owner tag expected in KEYS[i]
-- Reply: one integer per key: 1 renewed; 0 the lock is gone; 2 someone
-- else holds it now (the two are told apart for the lost-lock callback).
local renewed = {}
for i = 1, #KEYS do
    if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        renewed[i] = 1
    elseif redis.call('exists', KEYS[i]) == 1 then
        renewed[i] = 2
    else
        renewed[i] = 0
    end
end
return renewed
