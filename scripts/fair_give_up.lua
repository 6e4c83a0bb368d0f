-- Leave a fair lock's queue after the wait ran out (Redisson FairLock's
-- acquire-failed step): those behind move up by the leaver's slack.
-- KEYS[1] queue list, KEYS[2] timeout sorted set
-- ARGV[1] owner tag, ARGV[2] wait in ms
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
    i = i + 1
end
for k = i + 1, #queue do
    redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[k])
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return 0
