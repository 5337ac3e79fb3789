-- minutes.lua: the last hour of a queue per minute (published, delivered, acked, dead-lettered),
-- prepended by scripts.rs to every script that counts. The queue's `minutes` hash (core::keys)
-- holds one field per kind and minute: '<kind><minute>' -> count, kind p (published), d
-- (delivered), a (acked) or x (dead-lettered), minute = now_ms // 60000. A call costs one HINCRBY
-- per kind it counts, plus a PEXPIRE when it opens a field (about once a minute): the key expires
-- an hour after the last minute that counted anything, so an idle queue keeps nothing, and
-- sweep.lua drops fields older than an hour from a busy one (prune_minutes, every ten minutes).
-- The per-day counters stay in the stats hash.
--
-- Beside the counts, in the same two hashes (so the same expiry and pruning bound them, and no
-- key is added to a queue; docs/redis-model.md, "Age and latency"):
-- - publish -> ack time, counted by ack.lua (count_latency): per minute 'l<minute>' (sum of ms)
--   and 'lh<k>:<minute>' (how many took [2^k, 2^(k+1)) ms; k = 0 also holds 0 and 1 ms; k is
--   capped at LATENCY_TOP, so the last bucket holds everything from about 24 days on); per UTC
--   day 'lat:<day>' and 'lh<k>:<day>' in the stats hash. The count is the sum of the buckets.
--   The time runs from the moment the entry entered the stream, which the stream id carries: for
--   a plain publish that is its published-at, for a delayed message the end of its delay, for a
--   replayed dead letter the replay. The ack reads no entry to know it.
-- - the oldest message's age, sampled by sweep.lua once a minute: 'o<minute>' (ms), and the
--   day's largest sample 'age:<day>' in the stats hash. A minute with nothing waiting has none.
local MINUTE_MS = 60000
local MINUTES_KEEP_MS = 3660000
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

-- The histogram bucket of `ms`: floor(log2(ms)) (0 for 0 and 1 ms), at most LATENCY_TOP. frexp is
-- exact where log() / log(2) may round across a power of two.
local function latency_bucket(ms)
  if ms < 2 then return 0 end
  local _, e = math.frexp(ms)
  return math.min(e - 1, LATENCY_TOP)
end

-- Records publish -> ack times (ms, one per acknowledged message) in the current minute's fields
-- of `minutes` and the day's fields of `stats`: one HINCRBY per sum and per bucket touched, the
-- buckets grouped first (a batch of similar ages touches one or two). The minute's fields open
-- with its 'a' count in the same call, whose count_minute extends the key's life.
local function count_latency(minutes, stats, now, day, times)
  if #times == 0 then return end
  local minute = math.floor(now / MINUTE_MS)
  local sum, buckets = 0, {}
  for i = 1, #times do
    local ms = times[i]
    sum = sum + ms
    local k = latency_bucket(ms)
    buckets[k] = (buckets[k] or 0) + 1
  end
  redis.call('HINCRBY', minutes, 'l' .. minute, sum)
  redis.call('HINCRBY', stats, 'lat:' .. day, sum)
  for k, n in pairs(buckets) do
    redis.call('HINCRBY', minutes, 'lh' .. k .. ':' .. minute, n)
    redis.call('HINCRBY', stats, 'lh' .. k .. ':' .. day, n)
  end
end

-- Drops the fields of minutes more than an hour before `now` (every field ends with its minute).
local function prune_minutes(key, now)
  local before = math.floor(now / MINUTE_MS) - MINUTES_KEPT
  for _, field in ipairs(redis.call('HKEYS', key)) do
    local minute = tonumber(string.match(field, '(%d+)$'))
    if minute and minute < before then redis.call('HDEL', key, field) end
  end
end
