-- sweep.lua: the timers of one queue, run about once a second by every data-plane replica (safe
-- concurrently: each call is atomic and idempotent).
-- KEYS: the standard queue keys (common.lua), then the budget (budget.lua is prepended too).
-- ARGV: now_ms, limit per kind, prune_before_day (YYYYMMDD; '0' = do not prune; pruning also drops
--       per-minute fields older than an hour, minutes.lua), utc_day (YYYYMMDD of now).
-- The first sweep of each minute (any replica's) samples the oldest waiting message's age into the
-- minutes hash and the day's largest sample into stats (minutes.lua); the others pay one HEXISTS.
-- Returns {promoted, dead_lettered, depth (stream + delayed), dead letters, slug} or {'no_queue'}:
-- the last three feed the per-queue metrics at no extra round trip.
local now, limit, prune_before, day = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local meta = read_meta()
if not meta then return { 'no_queue' } end

local promoted = promote_due(now, limit)
wake(promoted, now)

-- Expired leases that used every attempt are dead letters, not redeliveries. The others wait for
-- the next consume, which redelivers them. The tries alone are a lower bound of the attempts
-- (the entry's base `n` is never negative), so the entry (and its body) is read only for a
-- message that is certainly due for the DLQ; consume, which reads every entry it claims, makes
-- the exact decision for the rest.
local dead = 0
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', now, 'LIMIT', 0, limit)) do
  if not redis.call('ZSCORE', K_BACKOFF, sid) then
    local tries = tries_of(sid)
    if tries and tries >= meta.max_attempts then
      local e = entry(K_STREAM, sid)
      if e then
        dead_letter(sid, e, 'visibility timeout expired', deliveries(sid, e), now)
        dead = dead + 1
      end
    end
  end
end
count_minute(K_MINUTES, now, 0, 0, 0, dead)

-- The age of the stream's head (ready or in flight, as the stats' oldest message), once a minute.
-- Nothing waiting writes nothing, so an idle queue's hash still expires.
local age_field = 'o' .. math.floor(now / MINUTE_MS)
if redis.call('HEXISTS', K_MINUTES, age_field) == 0 then
  local first = redis.call('XRANGE', K_STREAM, '-', '+', 'COUNT', 1)
  if first[1] then
    local age = math.max(0, now - tonumber(record(first[1][1], first[1][2]).pa))
    redis.call('HSET', K_MINUTES, age_field, age)
    redis.call('PEXPIRE', K_MINUTES, MINUTES_KEEP_MS)
    local day_field = 'age:' .. day
    if age > tonumber(redis.call('HGET', K_STATS, day_field) or '-1') then
      redis.call('HSET', K_STATS, day_field, age)
    end
  end
end

-- Idempotency records that expired leave the index too.
local expired = redis.call('ZRANGEBYSCORE', K_IDEM_IX, '-inf', now, 'LIMIT', 0, limit)
if #expired > 0 then redis.call('ZREM', K_IDEM_IX, unpack(expired)) end

if prune_before > 0 then
  for _, field in ipairs(redis.call('HKEYS', K_STATS)) do
    local d = string.match(field, '^%w+:(%d+)$')
    if d and tonumber(d) < prune_before then redis.call('HDEL', K_STATS, field) end
  end
  prune_minutes(K_MINUTES, K_STATS, now)
end
-- Leases of replicas that stopped renewing become stored bytes (budget.lua), and stored bytes are
-- exact again once the queue holds nothing and no lease is out: what an expired lease added beyond
-- what was stored is forgotten there. (No bytes held means no lease out: set_lease deletes an
-- empty one.)
local K_BUDGET = KEYS[STANDARD_KEYS + 1]
if leases_held(K_BUDGET, K_STATS, now, '') == 0 and redis.call('XLEN', K_STREAM) == 0
    and redis.call('ZCARD', K_DELAYED) == 0 and redis.call('XLEN', K_DLQ) == 0 then
  local bytes = redis.call('HGET', K_STATS, 'bytes')
  if bytes and bytes ~= '0' then redis.call('HSET', K_STATS, 'bytes', 0) end
end
local depth = redis.call('XLEN', K_STREAM) + redis.call('ZCARD', K_DELAYED)
return { promoted, dead, depth, redis.call('XLEN', K_DLQ), redis.call('HGET', K_META, 'slug') or '' }
