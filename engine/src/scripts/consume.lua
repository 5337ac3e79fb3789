-- consume.lua: leases up to max messages: due leases first (expired or released by a nack), then
-- never-delivered entries. Expired leases that used every attempt go to the DLQ instead.
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, utc_day, max messages, lease ms (0 = the queue's visibility timeout), the ms until
--       which the caller will wait for messages if this finds none (0 = it will not wait).
-- Returns {'ok', lease ms, next due ms or '', run, then per message: stream id, message id, body,
--          and how many values follow (0 or 8):
--          8: content type, attributes, group id or '', published ms, attempts, delivery base n,
--             accounted bytes sz, has an idempotency key (1/0) (the last three go into the receipt,
--             so that ack need not read the entry);
--          0: a first delivery of an entry as publish_one.lua writes it, every one of those at
--             common.lua's `complete` defaults (application/json, no attributes, no group,
--             published at the stream id's ms, attempt 1, n 0, sz the body's length, no key).
--          Each value costs Redis time to copy out of Lua, and most messages are plain.
--          run: how many of the messages, the last ones, are first deliveries read by one
--          XREADGROUP: consecutive entries of the stream, with no other entry between them then
--          or ever (stream ids only grow). Their receipts say so, and an ack of all of them may
--          trim them from the stream's head instead of deleting them one by one (ack.lua).
--      or {'no_queue'} | {'paused'} (paused, or its team suspended).
local refused = rate_refused() if refused then return refused end
local now, day, max, lease_ms = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local wait_until = tonumber(ARGV[5])
local meta = read_meta()
if not meta then return { 'no_queue' } end
-- A suspended team's queue leases nothing, as if paused: its tokens are refused before any script
-- runs, so this stops its push dispatchers, which resume once the suspension is lifted.
if meta.paused or meta.suspended then return { 'paused' } end
if lease_ms == 0 then lease_ms = meta.visibility_ms end
local deadline = now + lease_ms

-- The first lease and the first delay to fall due (ms; nil when there is none), read once: they
-- say whether anything is due now, and then when the caller should look again (the reply's next
-- due), without a range query for each.
local function earliest(key)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return first[2] and tonumber(first[2])
end
local lease_due, delay_due = earliest(K_LEASE), earliest(K_DELAYED)

-- Delays that fell due since the sweeper last ran become ready now, not up to a second later.
if delay_due and delay_due <= now then
  promote_due(now, 100)
  delay_due = earliest(K_DELAYED)
end

local out, delivered, dead = { 'ok', lease_ms, '', 0 }, 0, 0
-- Appends one delivery to the reply, whole (the layout in the header above).
local function put(sid, id, b, ct, a, g, pa, attempts, n, sz, ik)
  local o = #out
  out[o + 1] = sid; out[o + 2] = id; out[o + 3] = b; out[o + 4] = 8
  out[o + 5] = ct; out[o + 6] = a; out[o + 7] = g or ''; out[o + 8] = pa; out[o + 9] = attempts
  out[o + 10] = n; out[o + 11] = sz; out[o + 12] = (ik and ik ~= '') and 1 or 0
  delivered = delivered + 1
end

-- Appends the first delivery of an entry whose every other field is at its default.
local function put_plain(sid, id, b)
  local o = #out
  out[o + 1] = sid; out[o + 2] = id; out[o + 3] = b; out[o + 4] = 0
  delivered = delivered + 1
end

local function deliver(sid, e, attempts)
  put(sid, e.id, e.b, e.ct, e.a, e.g, e.pa, attempts, e.n, e.sz, e.ik)
end

-- deliver() of a never-delivered entry straight from its field list (XREADGROUP's), with
-- common.lua's `complete` defaults: making a record of each entry first (a table filled one field
-- at a time) cost a consume more than the XREADGROUP did. Its attempt is its first since it was
-- written, n + 1. The accounted bytes go out as a number (an integer reply) unless recorded.
local function deliver_fields(sid, flat)
  local id, b, ct, a, g, pa, n, sz, ik
  for i = 1, #flat, 2 do
    local f, v = flat[i], flat[i + 1]
    if f == 'b' then b = v
    elseif f == 'id' then id = v
    elseif f == 'pa' then pa = v
    elseif f == 'ct' then ct = v
    elseif f == 'a' then a = v
    elseif f == 'g' then g = v
    elseif f == 'n' then n = v
    elseif f == 'sz' then sz = v
    elseif f == 'ik' then ik = v
    end
  end
  if not (ct or a or g or pa or n or sz or ik) then return put_plain(sid, id, b) end
  a = a or ''
  put(sid, id, b, ct or 'application/json', a, g, pa or string.match(sid, '^%d+'), n and tonumber(n) + 1 or 1, n or 0,
    sz or #b + #a, ik)
end

-- 1. Due leases. Each pass removes what it saw from the due range (claimed leases move to the new
-- deadline, dead letters and stale leases leave), so the loop ends.
if lease_due and lease_due <= now then
  for _ = 1, 20 do
    if delivered >= max then break end
    local due = redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', now, 'LIMIT', 0, max - delivered)
    if #due == 0 then break end
    for _, sid in ipairs(due) do
      local e = entry(K_STREAM, sid)
      local done = e and deliveries(sid, e)
      if not done then
        -- A lease without its entry cannot be delivered: drop the lease.
        redis.call('ZREM', K_LEASE, sid)
        redis.call('ZREM', K_BACKOFF, sid)
        redis.call('HDEL', K_ERRORS, sid)
        redis.call('HDEL', K_TRIES, sid)
      elseif done >= meta.max_attempts then
        local reason = 'visibility timeout expired'
        if redis.call('ZSCORE', K_BACKOFF, sid) then
          reason = redis.call('HGET', K_ERRORS, sid) or 'nacked'
        end
        dead_letter(sid, e, reason, done, now)
        dead = dead + 1
      else
        set_tries(sid, done - tonumber(e.n) + 1)
        redis.call('ZADD', K_LEASE, deadline, sid)
        redis.call('ZREM', K_BACKOFF, sid)
        deliver(sid, e, done + 1)
      end
    end
  end
  lease_due = earliest(K_LEASE)
end

-- 2. Never-delivered entries. NOACK: the group only moves its cursor (one XGROUP SETID in the AOF
-- and to replicas for the batch, where a PEL record would be one XCLAIM per entry); the lease zset
-- is the record of the lease, written in the same script. One ZADD for the whole batch.
if delivered < max and redis.call('EXISTS', K_STREAM) == 1 then
  local r = redis.call('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', max - delivered, 'NOACK', 'STREAMS', K_STREAM, '>')
  if r and #r[1][2] > 0 then
    -- The deadline as text once: Redis would format a number argument once per message.
    local leases, at = {}, string.format('%d', deadline)
    for _, item in ipairs(r[1][2]) do
      local sid = item[1]
      leases[#leases + 1] = at; leases[#leases + 1] = sid
      deliver_fields(sid, item[2])
    end
    redis.call('ZADD', K_LEASE, unpack(leases))
    out[4] = #r[1][2]
    if not lease_due or deadline < lease_due then lease_due = deadline end
  end
end

bump('del:', day, delivered)
count_minute(K_MINUTES, now, 0, delivered, 0, dead)
if delivered == 0 and wait_until > now then mark_waiting(meta, wait_until) end
local due = lease_due
if delay_due and (not due or delay_due < due) then due = delay_due end
out[3] = due and tostring(due) or ''
return out
