-- dlq_replay.lua: moves dead letters back to the queue with their attempts reset: same message
-- id, a new stream entry. Stored bytes do not change.
-- KEYS: the twelve queue keys (common.lua).
-- ARGV: 'all' and a requested chunk size (the oldest dead letters; Rust calls again while a call
--       handles a full chunk), or 'ids' followed by message ids.
-- Returns {replayed, chunk size used}.
local LIMIT = 0
if ARGV[1] == 'all' then LIMIT = chunk_size(tonumber(ARGV[2])) end

local function dlq_targets()
  local targets = {}
  if ARGV[1] == 'all' then
    for _, item in ipairs(redis.call('XRANGE', K_DLQ, '-', '+', 'COUNT', LIMIT)) do
      targets[#targets + 1] = item[1]
    end
  else
    for i = 2, #ARGV do
      local dsid = redis.call('HGET', K_DLQ_IX, ARGV[i])
      if dsid then targets[#targets + 1] = dsid end
    end
  end
  return targets
end

local n = 0
for _, dsid in ipairs(dlq_targets()) do
  local e = entry(K_DLQ, dsid)
  if e then
    e.n = '0'
    -- Back in the stream before it leaves the DLQ: never in neither place.
    xadd_ready(e)
    redis.call('XDEL', K_DLQ, dsid)
    redis.call('HDEL', K_DLQ_IX, e.id)
    n = n + 1
  end
end
if n > 0 then redis.call('PUBLISH', K_WAKE, n) end
return { n, LIMIT }
