-- dlq_purge.lua: deletes dead letters for good.
-- KEYS: the twelve queue keys (common.lua).
-- ARGV: now_ms, then 'all' and a requested chunk size (Rust calls again while a call handles a
--       full chunk), or 'ids' followed by message ids.
-- Returns {deleted, chunk size used}.
local now = tonumber(ARGV[1])
local limit = 0
if ARGV[2] == 'all' then limit = chunk_size(tonumber(ARGV[3])) end
local targets = {}
if ARGV[2] == 'all' then
  for _, item in ipairs(redis.call('XRANGE', K_DLQ, '-', '+', 'COUNT', limit)) do
    targets[#targets + 1] = item[1]
  end
else
  for i = 3, #ARGV do
    local dsid = redis.call('HGET', K_DLQ_IX, ARGV[i])
    if dsid then targets[#targets + 1] = dsid end
  end
end
local n, freed = 0, 0
for _, dsid in ipairs(targets) do
  local e = entry(K_DLQ, dsid)
  if e then
    redis.call('XDEL', K_DLQ, dsid)
    redis.call('HDEL', K_DLQ_IX, e.id)
    release_idem(e, now)
    freed = freed + tonumber(e.sz)
    n = n + 1
  end
end
if freed > 0 then redis.call('HINCRBY', K_STATS, 'bytes', -freed) end
return { n, limit }
