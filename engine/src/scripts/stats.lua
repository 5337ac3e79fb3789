-- stats.lua: the numbers behind GET /stats, read in one atomic snapshot (read only).
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, utc_day.
-- Returns {'ok', stream length, leases, due leases, future backoffs, delayed, stored bytes,
--          oldest published ms or '', published today, delivered today, acked today, dead letters,
--          storage limit, paused (0/1)} or {'no_queue'}.
local refused = rate_refused() if refused then return refused end
local now, day = tonumber(ARGV[1]), ARGV[2]
local meta = read_meta()
if not meta then return { 'no_queue' } end
local oldest = ''
if redis.call('EXISTS', K_STREAM) == 1 then
  local first = redis.call('XRANGE', K_STREAM, '-', '+', 'COUNT', 1)
  if first[1] then oldest = record(first[1][1], first[1][2]).pa end
end
local counts = redis.call('HMGET', K_STATS, 'bytes', 'pub:' .. day, 'del:' .. day, 'ack:' .. day)
return {
  'ok',
  redis.call('XLEN', K_STREAM),
  redis.call('ZCARD', K_LEASE),
  redis.call('ZCOUNT', K_LEASE, '-inf', now),
  redis.call('ZCOUNT', K_BACKOFF, '(' .. now, '+inf'),
  redis.call('ZCARD', K_DELAYED),
  tonumber(counts[1] or '0'),
  oldest,
  tonumber(counts[2] or '0'),
  tonumber(counts[3] or '0'),
  tonumber(counts[4] or '0'),
  redis.call('XLEN', K_DLQ),
  meta.storage_limit,
  meta.paused and 1 or 0,
}
