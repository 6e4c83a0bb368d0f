-- Renew a batch of watched locks (Redisson's batched watchdog, 3.44+).
-- KEYS[i] lock hash i
-- ARGV[1] new lease in ms, ARGV[i + 1] owner tag expected in KEYS[i]
-- Reply: one integer per key, 1 if renewed, 0 if the owner no longer holds it.
local renewed = {}
for i = 1, #KEYS do
    if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
