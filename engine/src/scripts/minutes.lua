-- minutes.lua: the last hour of a queue per minute (published, delivered, acked, dead-lettered),
-- prepended by scripts.rs to every script that counts. The queue's `minutes` hash (core::keys)
-- holds one field per kind and minute: '<kind><minute>' -> count, kind p (published), d
-- (delivered), a (acked) or x (dead-lettered), minute = now_ms // 60000. A call costs one HINCRBY
-- per kind it counts, plus a PEXPIRE when it opens a field (about once a minute): the key expires
-- an hour after the last minute that counted anything, so an idle queue keeps nothing, and
-- sweep.lua drops fields older than an hour from a busy one (prune_minutes, every ten minutes).
-- The per-day counters stay in the stats hash.
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

-- Drops the fields of minutes more than an hour before `now`.
local function prune_minutes(key, now)
  local before = math.floor(now / MINUTE_MS) - MINUTES_KEPT
  for _, field in ipairs(redis.call('HKEYS', key)) do
    local minute = tonumber(string.sub(field, 2))
    if minute and minute < before then redis.call('HDEL', key, field) end
  end
end
