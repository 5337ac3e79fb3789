-- release.lua: hands leased deliveries back untouched, as if they had never been made: the
-- delivery is not counted (its tries go back by one) and the message is due at once. A
-- push dispatcher stopped between leasing and sending uses it, so a changed target gets the
-- message now, with the attempts it had, instead of after the lease runs out with one more.
-- KEYS: the standard queue keys (common.lua).
-- ARGV: now_ms, utc_day, count, then per receipt 3 values: stream id, message id, delivery number.
-- Returns one integer per receipt: 1 handed back, 0 lease lost.
local now, day, count = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local out, released = {}, 0
local has_stream = redis.call('EXISTS', K_STREAM) == 1
for i = 0, count - 1 do
  local sid, mid, delivery = ARGV[4 + i * 3], ARGV[5 + i * 3], tonumber(ARGV[6 + i * 3])
  local e = has_stream and current_entry(K_STREAM, K_BACKOFF, sid, mid, delivery)
  if e then
    -- The next consume adds one back, so the redelivery carries this delivery's number.
    set_tries(sid, delivery - tonumber(e.n) - 1)
    -- Due now; the backoff entry marks the lease as released so this receipt cannot settle it.
    redis.call('ZADD', K_LEASE, now, sid)
    redis.call('ZADD', K_BACKOFF, now, sid)
    released = released + 1
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
-- The deliveries handed back never happened.
bump('del:', day, -released)
count_minute(K_MINUTES, now, 0, -released, 0, 0)
wake(released, now)
return out
