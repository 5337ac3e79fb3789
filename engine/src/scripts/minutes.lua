-- minutes.lua: the last hour of a queue per minute (published, delivered, acked, dead-lettered),
-- prepended by scripts.rs to every script that counts. The queue's `minutes` hash (core::keys)
-- holds one field per kind and minute: '<kind><minute>' -> count, kind p (published), d
-- (delivered), a (acked) or x (dead-lettered), minute = now_ms // 60000. A call costs one HINCRBY
-- per kind it counts, plus a PEXPIRE when it opens a field (about once a minute): the key expires
-- two hours after the last minute that counted anything, so an idle queue keeps nothing, and
-- sweep.lua drops fields older than an hour from a busy one (prune_minutes, every ten minutes).
-- The per-day counters stay in the stats hash.
--
-- Beside the counts, in the same two hashes (so the same expiry and pruning bound them, and no
-- key is added to a queue; docs/redis-model.md, "Age and latency"):
-- - publish -> ack time, counted by ack.lua (count_latency) as a histogram per minute:
--   'lh<k>:<minute>' -> how many took [2^k, 2^(k+1)) ms (k = 0 also holds 0 and 1 ms; k is capped
--   at LATENCY_TOP, so the last bucket holds everything from about 24 days on). One HINCRBY per
--   bucket a call touches (usually one), and nothing else: no sum, and no per-day write on the
--   ack path. The days are folded by the sweeper instead: prune_minutes adds each minute's
--   buckets to its UTC day's 'lh<k>:<day>' in the stats hash in the same call that deletes them,
--   so a minute counts in exactly one place, and a reader of a day adds the minutes not yet folded
--   (engine/src/stats.rs). The key lives two hours, so a minute is folded before it can expire.
--   The time runs from the moment the entry entered the stream, which the stream id carries: for
--   a plain publish that is its published-at, for a delayed message the end of its delay, for a
--   replayed dead letter the replay. The ack reads no entry to know it.
-- - the oldest message's age, sampled by sweep.lua once a minute: 'o<minute>' (ms), and the
--   day's largest sample 'age:<day>' in the stats hash. A minute with nothing waiting has none.
local MINUTE_MS = 60000
local MINUTES_KEEP_MS = 7260000
local MINUTES_KEPT = 60

local function count_kind(key, kind, minute, by)
  -- A new field (its count is what this call added) extends the key's life.
  return by ~= 0 and redis.call('HINCRBY', key, kind .. minute, by) == by
end

-- Adds to the current minute's counters; a call that counts nothing costs nothing.
local function count_minute(key, now, published, delivered, acked, dead)
  local minute = math.floor(now / MINUTE_MS)
  local opened = count_kind(key, 'p', minute, published)
  opened = count_kind(key, 'd', minute, delivered) or opened
  opened = count_kind(key, 'a', minute, acked) or opened
  opened = count_kind(key, 'x', minute, dead) or opened
  if opened then redis.call('PEXPIRE', key, MINUTES_KEEP_MS) end
end

local LATENCY_TOP = 31
local frexp = math.frexp

-- Counts one publish -> ack time (ms) in `buckets` (bucket -> count), for count_latency: bucket
-- floor(log2(ms)) (0 for 0 and 1 ms), at most LATENCY_TOP. frexp is exact where log() / log(2)
-- may round across a power of two.
local function time_latency(buckets, ms)
  local k = 0
  if ms >= 2 then
    local _, e = frexp(ms)
    k = e <= LATENCY_TOP and e - 1 or LATENCY_TOP
  end
  buckets[k] = (buckets[k] or 0) + 1
end

-- Adds `buckets` (time_latency's) to the current minute's histogram: one HINCRBY per bucket, and
-- a batch of similar times touches one or two. The minute's fields open with its 'a' count in the
-- same call, whose count_minute extends the key's life.
local function count_latency(key, now, buckets)
  local minute = ':' .. math.floor(now / MINUTE_MS)
  for k, n in pairs(buckets) do redis.call('HINCRBY', key, 'lh' .. k .. minute, n) end
end

-- YYYYMMDD (UTC) of the day `ms` falls in (days from civil, H. Hinnant's algorithm): Lua in Redis
-- has no date functions.
local function utc_day_of(ms)
  local z = math.floor(ms / 86400000) + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  return y * 10000 + m * 100 + d
end

-- Drops the fields of minutes more than an hour before `now` (every field ends with its minute),
-- first adding their latency buckets to their days' in `stats`.
local function prune_minutes(key, stats, now)
  local before = math.floor(now / MINUTE_MS) - MINUTES_KEPT
  local flat = redis.call('HGETALL', key)
  local days = {}
  for i = 1, #flat, 2 do
    local field = flat[i]
    local minute = tonumber(string.match(field, '(%d+)$'))
    if minute and minute < before then
      local k = string.match(field, '^lh(%d+):')
      if k then
        local day_field = 'lh' .. k .. ':' .. utc_day_of(minute * MINUTE_MS)
        days[day_field] = (days[day_field] or 0) + tonumber(flat[i + 1])
      end
      redis.call('HDEL', key, field)
    end
  end
  for field, n in pairs(days) do redis.call('HINCRBY', stats, field, n) end
end
