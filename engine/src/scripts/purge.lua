-- purge.lua: deletes up to `limit` waiting ready messages: due leases (expired, or released by a
-- nack and due) and never-delivered entries. Messages under a live lease and delayed messages stay.
-- Called repeatedly by Rust while it deletes a full chunk, so Redis is never blocked long.
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, requested chunk size.
-- Returns {deleted, chunk size used}.
local refused = rate_refused() if refused then return refused end
local now, limit = tonumber(ARGV[1]), chunk_size(tonumber(ARGV[2]))
local last = last_delivered()
if not last then return { 0, limit } end
local n, freed, ids = 0, 0, {}
local function drop(sid, e)
  remove_entry(sid)
  release_idem(e, now)
  freed = freed + tonumber(e.sz)
  n = n + 1
  ids[n] = e.id
end
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', now, 'LIMIT', 0, limit)) do
  local e = entry(K_STREAM, sid)
  if e then drop(sid, e) else redis.call('ZREM', K_LEASE, sid); redis.call('HDEL', K_TRIES, sid) end
end
if n < limit then
  for _, item in ipairs(redis.call('XRANGE', K_STREAM, '(' .. last, '+', 'COUNT', limit - n)) do
    drop(item[1], record(item[1], item[2]))
  end
end
if freed > 0 then redis.call('HINCRBY', K_STATS, 'bytes', -freed) end
forget_large(ids)
return { n, limit }
