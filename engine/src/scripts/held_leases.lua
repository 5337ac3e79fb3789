-- held_leases.lua: how many leases consumers hold now: deadlines still ahead, less the leases a
-- nack released (those wait in backoff and no consumer holds them).
-- KEYS: the standard queue keys (common.lua).
-- ARGV: now_ms.
-- Returns an integer.
local after_now = '(' .. ARGV[1]
return redis.call('ZCOUNT', K_LEASE, after_now, '+inf') - redis.call('ZCOUNT', K_BACKOFF, after_now, '+inf')
