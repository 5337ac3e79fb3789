-- ack.lua: acknowledges deliveries: the message is deleted.
-- KEYS: the twelve queue keys (common.lua).
-- ARGV: now_ms, utc_day, count, then per receipt 3 values: stream id, message id, delivery number.
-- Returns one integer per receipt: 1 acknowledged, 0 lease lost (the delivery is no longer the
-- current one: redelivered, released by a nack, acknowledged, dead-lettered or purged).
-- A lease that expired but was not yet redelivered is still accepted: nobody else holds it.
local now, day, count = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local out, acked, freed = {}, 0, 0
local has_stream = redis.call('EXISTS', K_STREAM) == 1
for i = 0, count - 1 do
  local sid, mid, delivery = ARGV[4 + i * 3], ARGV[5 + i * 3], tonumber(ARGV[6 + i * 3])
  local e = has_stream and entry(K_STREAM, sid)
  local ok = e and e.id == mid and deliveries(sid, e) == delivery and not redis.call('ZSCORE', K_BACKOFF, sid)
  if ok then
    redis.call('XACK', K_STREAM, 'g', sid)
    redis.call('XDEL', K_STREAM, sid)
    redis.call('ZREM', K_LEASE, sid)
    redis.call('HDEL', K_ERRORS, sid)
    release_idem(e, now)
    freed = freed + tonumber(e.sz)
    acked = acked + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
if freed > 0 then redis.call('HINCRBY', K_STATS, 'bytes', -freed) end
bump('ack:', day, acked)
return out
