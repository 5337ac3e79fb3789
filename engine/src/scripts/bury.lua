-- bury.lua: dead-letters deliveries at once, whatever their attempts (a push handler's answer that
-- no retry can change, such as a 400).
-- KEYS: the standard queue keys (common.lua).
-- ARGV: now_ms, reason, count, then per receipt 3 values: stream id, message id, delivery number.
-- Returns one integer per receipt: 2 dead-lettered, 0 lease lost.
local now, reason, count = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local out, dead = {}, 0
local has_stream = redis.call('EXISTS', K_STREAM) == 1
for i = 0, count - 1 do
  local sid, mid, delivery = ARGV[4 + i * 3], ARGV[5 + i * 3], tonumber(ARGV[6 + i * 3])
  local e = has_stream and current_entry(K_STREAM, K_BACKOFF, sid, mid, delivery)
  if e then
    dead_letter(sid, e, reason, delivery, now)
    dead = dead + 1
    out[#out + 1] = 2
  else
    out[#out + 1] = 0
  end
end
count_minute(K_MINUTES, now, 0, 0, 0, dead)
return out
