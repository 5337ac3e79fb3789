-- nack.lua: returns deliveries to the queue after a delay, or dead-letters them when they used
-- their last attempt.
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, utc_day, error ('' = none), count, then per receipt 4 values: stream id, message
--       id, delivery number, delay ms (a consumer's nack gives every receipt the same delay; a push
--       dispatcher's retries each have their own backoff).
-- Returns one integer per receipt: 1 returned to the queue, 2 dead-lettered, 0 lease lost.
local refused = rate_refused() if refused then return refused end
local now, err, count = tonumber(ARGV[1]), ARGV[3], tonumber(ARGV[4])
local meta = read_meta()
local max_attempts = meta and meta.max_attempts or 1
local out, returned, dead = {}, 0, 0
local has_stream = redis.call('EXISTS', K_STREAM) == 1
for i = 0, count - 1 do
  local at = 5 + i * 4
  local sid, mid, delivery, delay = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2]), tonumber(ARGV[at + 3])
  local e = has_stream and current_entry(K_STREAM, K_BACKOFF, sid, mid, delivery)
  if not e then
    out[#out + 1] = 0
  elseif delivery >= max_attempts then
    local reason = err
    if reason == '' then reason = 'nacked' end
    dead_letter(sid, e, reason, delivery, now)
    dead = dead + 1
    out[#out + 1] = 2
  else
    -- The message stays leased; moving its lease deadline is what makes it due again, and the
    -- backoff entry marks the lease as released so this receipt cannot ack or nack it twice.
    redis.call('ZADD', K_LEASE, now + delay, sid)
    redis.call('ZADD', K_BACKOFF, now + delay, sid)
    if err ~= '' then redis.call('HSET', K_ERRORS, sid, err) end
    returned = returned + 1
    out[#out + 1] = 1
  end
end
wake(returned, now)
count_minute(K_MINUTES, now, 0, 0, 0, dead)
return out
