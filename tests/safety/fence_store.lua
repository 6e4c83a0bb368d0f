-- fence_store.lua: the safety harness's fencing store (tests/safety).
--
-- A storage system that guards itself with a fenced lock's tokens: it
-- remembers the highest token any access to a counter has carried, and
-- refuses an access (read or write alike) that carries a lower one. So a
-- holder that paused past its lease cannot read or overwrite the counter
-- once the next holder (a higher token) has touched it. Equal tokens pass:
-- a holder reads, then writes, with the same token.
--
-- KEYS[1] the counter, KEYS[2] the highest token seen for it
-- ARGV[1] "read" or "write", ARGV[2] the token, ARGV[3] the value to write
-- Returns the counter (read; nil when unset) or "OK" (write), or the error
-- "FENCED <highest>" when the token is too old.
local token = tonumber(ARGV[2])
local highest = tonumber(redis.call('GET', KEYS[2]) or '0')
if token < highest then
    return redis.error_reply('FENCED ' .. highest)
end
if token > highest then
    redis.call('SET', KEYS[2], ARGV[2])
end
if ARGV[1] == 'write' then
    redis.call('SET', KEYS[1], ARGV[3])
    return redis.status_reply('OK')
end
return redis.call('GET', KEYS[1])
