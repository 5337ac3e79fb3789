-- consume.lua: leases up to max messages: due leases first (expired or released by a nack), then
-- never-delivered entries. Expired leases that used every attempt go to the DLQ instead.
-- KEYS: the twelve queue keys (common.lua).
-- ARGV: now_ms, utc_day, max messages, lease ms (0 = the queue's visibility timeout).
-- Returns {'ok', lease ms, next due ms or '', then per message 8 values:
--          stream id, message id, body, content type, attributes, group id or '', published ms, attempts}
--      or {'no_queue'} | {'paused'}.
local now, day, max, lease_ms = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local meta = read_meta()
if not meta then return { 'no_queue' } end
if meta.paused then return { 'paused' } end
if lease_ms == 0 then lease_ms = meta.visibility_ms end
local deadline = now + lease_ms

-- Delays that fell due since the sweeper last ran become ready now, not up to a second later.
promote_due(now, 100)

local out, delivered = { 'ok', lease_ms, '' }, 0
local function deliver(sid, e, attempts)
  local parts = { sid, e.id, e.b, e.ct, e.a, e.g or '', e.pa, attempts }
  for _, p in ipairs(parts) do out[#out + 1] = p end
  delivered = delivered + 1
end

-- 1. Due leases. Each pass removes what it saw from the due range (claimed leases move to the new
-- deadline, dead letters and stale leases leave), so the loop ends.
for _ = 1, 20 do
  if delivered >= max then break end
  local due = redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', now, 'LIMIT', 0, max - delivered)
  if #due == 0 then break end
  for _, sid in ipairs(due) do
    local e = entry(K_STREAM, sid)
    local done = e and deliveries(sid, e)
    if not done then
      -- A lease without its entry or PEL record cannot be delivered: drop the lease.
      redis.call('ZREM', K_LEASE, sid)
      redis.call('ZREM', K_BACKOFF, sid)
      redis.call('HDEL', K_ERRORS, sid)
    elseif done >= meta.max_attempts then
      local reason = 'visibility timeout expired'
      if redis.call('ZSCORE', K_BACKOFF, sid) then
        reason = redis.call('HGET', K_ERRORS, sid) or 'nacked'
      end
      dead_letter(sid, e, reason, done, now)
    else
      -- XCLAIM with min-idle 0 increments the PEL delivery counter: that is the attempt count.
      redis.call('XCLAIM', K_STREAM, 'g', 'c', 0, sid)
      redis.call('ZADD', K_LEASE, deadline, sid)
      redis.call('ZREM', K_BACKOFF, sid)
      deliver(sid, e, done + 1)
    end
  end
end

-- 2. Never-delivered entries. The lease is written in the same script as the PEL entry, so the
-- lease zset and the PEL never disagree.
if delivered < max and redis.call('EXISTS', K_STREAM) == 1 then
  local r = redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', max - delivered, 'STREAMS', K_STREAM, '>')
  if r then
    for _, item in ipairs(r[1][2]) do
      local sid, e = item[1], to_map(item[2])
      redis.call('ZADD', K_LEASE, deadline, sid)
      deliver(sid, e, tonumber(e.n) + 1)
    end
  end
end

bump('del:', day, delivered)
out[3] = next_due()
return out
