-- extend.lua: moves the lease deadline of current deliveries (a consumer's heartbeat).
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, lease ms, count, then per receipt 4 values: stream id, message id, delivery
--       number, and the entry's delivery base n from the receipt's hint ('' = no hint: read the
--       entry).
-- Returns one integer per receipt: 1 extended (its deadline is now now_ms + lease ms), 0 lease
-- lost (the delivery is no longer the current one: redelivered, released by a nack, acknowledged,
-- dead-lettered or purged). As with ack, a lease that expired but was not yet redelivered is
-- still the receipt's: nobody else holds it, so it is extended.
--
-- The check is ack.lua's: the tries of the receipt's stream id plus the entry's base must
-- equal the receipt's delivery number (a stream id is never reused, so the hint's base stays true),
-- and a lease a nack released (in backoff) is no longer the receipt's.
local refused = rate_refused() if refused then return refused end
local now, lease_ms, count = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
if redis.call('EXISTS', K_STREAM) == 0 then
  for i = 1, count do out[i] = 0 end
  return out
end

local deadline = now + lease_ms
local shortened = 0
for i = 0, count - 1 do
  local at = 4 + i * 4
  local sid, mid, delivery, n = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), ARGV[at + 3]
  local counter = tries_of(sid)
  if counter and n == '' then
    -- A version 1 receipt: the base comes from the entry, which must still be the receipt's.
    local e = entry(K_STREAM, sid)
    if e and e.id == mid then n = e.n else counter = nil end
  end
  if counter and tonumber(n) + counter == delivery and not redis.call('ZSCORE', K_BACKOFF, sid) then
    local old = tonumber(redis.call('ZSCORE', K_LEASE, sid))
    if old and deadline < old then shortened = shortened + 1 end
    redis.call('ZADD', K_LEASE, deadline, sid)
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
-- A long poll sleeps until the earliest deadline it saw; one that moved earlier must wake it, so
-- that it looks again and sleeps until the new one.
wake(shortened, now)
return out
