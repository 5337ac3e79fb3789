-- dlq_purge.lua: deletes dead letters for good.
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, then 'all' and a requested chunk size (Rust calls again while a call handles a
--       full chunk), 'match', a requested chunk size, a cursor and a reason text (Rust calls again
--       from the last entry read while a call reads a full chunk), or 'ids' followed by message ids
--       (common.lua's dead_letter_targets).
-- Returns {deleted, chunk size used, entries read, last entry read or ''}.
local refused = rate_refused() if refused then return refused end
local now = tonumber(ARGV[1])
local targets, limit, read, last = dead_letter_targets(2)
local n, freed, ids = 0, 0, {}
for _, dsid in ipairs(targets) do
  local e = entry(K_DLQ, dsid)
  if e then
    redis.call('XDEL', K_DLQ, dsid)
    redis.call('HDEL', K_DLQ_IX, e.id)
    release_idem(e, now)
    freed = freed + tonumber(e.sz)
    n = n + 1
    ids[n] = e.id
  end
end
if freed > 0 then redis.call('HINCRBY', K_STATS, 'bytes', -freed) end
forget_large(ids)
return { n, limit, read, last }
