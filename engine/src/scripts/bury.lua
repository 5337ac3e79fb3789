-- bury.lua: dead-letters deliveries at once, whatever their attempts (a push handler's answer that
-- no retry can change, such as a 400).
-- KEYS: the fifteen queue keys (common.lua).
-- ARGV: now_ms, reason, count, then per receipt 3 values: stream id, message id, delivery number.
-- Returns one integer per receipt: 2 dead-lettered, 0 lease lost.
local now, reason, count = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local out = {}
local has_stream = redis.call('EXISTS', K_STREAM) == 1
for i = 0, count - 1 do
  local sid, mid, delivery = ARGV[4 + i * 3], ARGV[5 + i * 3], tonumber(ARGV[6 + i * 3])
  local e = has_stream and entry(K_STREAM, sid)
  local ok = e and e.id == mid and deliveries(sid, e) == delivery and not redis.call('ZSCORE', K_BACKOFF, sid)
  if ok then
    dead_letter(sid, e, reason, delivery, now)
    out[#out + 1] = 2
  else
    out[#out + 1] = 0
  end
end
count_minute(K_MINUTES, now, 0, 0, 0, dead_lettered)
return out
