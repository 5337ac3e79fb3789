-- ack.lua: acknowledges deliveries: the message is deleted.
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, utc_day, count, then per receipt 6 values: stream id, message id, delivery number,
--       then the receipt's hint (version 2 receipts, HMAC'd with the rest): the entry's delivery
--       base n ('' = no hint: read the entry), accounted bytes sz, has an idempotency key (1/0).
-- Returns one integer per receipt: 1 acknowledged, 0 lease lost (the delivery is no longer the
-- current one: redelivered, released by a nack, acknowledged, dead-lettered or purged).
-- A lease that expired but was not yet redelivered is still accepted: nobody else holds it.
--
-- The hot path reads no entry: a stream id is never reused (XADD ids only grow, a purge or replay
-- writes a new id), so the PEL record of the receipt's stream id plus the hint's base is the whole
-- check; an entry leaves the PEL (XACK) in the same script that deletes it, so a PEL record means
-- the entry is there. Writes are one command per kind for the whole batch.
-- Each acknowledged message's publish -> ack time (now - the stream id's milliseconds: when the
-- entry entered the stream) goes into the minute's histogram (count_latency, minutes.lua; the
-- sweeper folds it into the day's): what the Overview's latency graphs read.
local refused = rate_refused() if refused then return refused end
local now, day, count = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local out = {}
if count == 0 then return out end
if redis.call('EXISTS', K_STREAM) == 0 then
  for i = 1, count do out[i] = 0 end
  return out
end

-- The receipts of a batch repeat the same few texts (delivery numbers, sizes, a stream id's
-- milliseconds): numbers.lua's num converts each once.
local find, sub = string.find, string.sub
local function parse_sid(sid)
  local dash = find(sid, '-', 1, true)
  return num(sub(sid, 1, dash - 1)), num(sub(sid, dash + 1))
end
-- Whether the stream id of milliseconds am and sequence as comes before that of bm and bs.
local function earlier(am, as, bm, bs)
  return am < bm or (am == bm and as < bs)
end
local function sid_less(a, b)
  local am, as = parse_sid(a)
  local bm, bs = parse_sid(b)
  return earlier(am, as, bm, bs)
end

-- PEL delivery counters of the batch: one XPENDING over the batch's id range (usually one
-- consume's batch, so the range holds little else); ids past a truncated answer are asked alone.
-- Each id is parsed once here: parsing is most of this loop's cost.
local lo, hi, lo_ms, lo_seq, hi_ms, hi_seq = nil, nil, 0, 0, 0, 0
local added_at, seq_of = {}, {}
for i = 0, count - 1 do
  local sid = ARGV[4 + i * 6]
  local ms, seq = parse_sid(sid)
  added_at[i], seq_of[i] = ms, seq
  if not lo or earlier(ms, seq, lo_ms, lo_seq) then lo, lo_ms, lo_seq = sid, ms, seq end
  if not hi or earlier(hi_ms, hi_seq, ms, seq) then hi, hi_ms, hi_seq = sid, ms, seq end
end
local limit = count * 2 + 16
local pel, last = {}, nil
local range = redis.call('XPENDING', K_STREAM, 'g', lo, hi, limit)
for _, p in ipairs(range) do pel[p[1]] = p[4] end
if #range == limit then last = range[#range][1] end
local function pending(sid)
  local c = pel[sid]
  if c or not last or not sid_less(last, sid) then return c end
  local p = redis.call('XPENDING', K_STREAM, 'g', sid, sid, 1)
  if #p == 0 then return nil end
  return p[1][4]
end

local any_backoff = redis.call('ZCARD', K_BACKOFF) > 0
local sids, mids, seen, acked, freed, latency = {}, {}, {}, 0, 0, {}
-- The newest acknowledged stream id, as its two numbers (see delete_acked).
local top_ms, top_seq = -1, -1
for i = 0, count - 1 do
  local base = 4 + i * 6
  local sid, mid, delivery, n = ARGV[base], ARGV[base + 1], num(ARGV[base + 2]), ARGV[base + 3]
  local sz, has_ik = ARGV[base + 4], ARGV[base + 5] == '1'
  local counter = not seen[sid] and pending(sid)
  local e = nil
  if counter and (n == '' or has_ik) then
    -- No hint (a version 1 receipt), or an idempotency record to release: read the entry.
    e = entry(K_STREAM, sid)
    if e and e.id == mid then
      n, sz = e.n, e.sz
    else
      counter = nil
    end
  end
  local ok = counter and num(n) + counter == delivery and not (any_backoff and redis.call('ZSCORE', K_BACKOFF, sid))
  if ok then
    seen[sid] = true
    sids[#sids + 1] = sid
    mids[#mids + 1] = mid
    if e then release_idem(e, now) end
    freed = freed + num(sz)
    acked = acked + 1
    local ms, seq = added_at[i], seq_of[i]
    if earlier(top_ms, top_seq, ms, seq) then top_ms, top_seq = ms, seq end
    -- A replica's clock a little behind Redis's counts as 0 ms (bucket 0), never negative.
    time_latency(latency, now - added_at[i])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
-- Deletes the acknowledged entries, already out of the PEL. XDEL seeks each id inside its stream
-- node (1 to 2 µs an id, more than the rest of the ack's commands together). But when no entry
-- older than the newest acknowledged one is still leased, the acknowledged entries are all the
-- stream holds up to it: entries are only added after the newest, everything up to the group's
-- last-delivered id was delivered, and a delivered entry leaves the PEL only in the script that
-- deletes it (here, dead_letter, purge, delete_message). Then one XTRIM MINID removes them, whole
-- nodes at a time. Consumers acknowledging in about the order they consumed take that path.
local function delete_acked()
  local oldest = redis.call('XPENDING', K_STREAM, 'g', '-', '+', 1)[1]
  if oldest then
    local ms, seq = parse_sid(oldest[1])
    if earlier(ms, seq, top_ms, top_seq) then
      redis.call('XDEL', K_STREAM, unpack(sids))
      return
    end
  end
  redis.call('XTRIM', K_STREAM, 'MINID', string.format('%d-%d', top_ms, top_seq + 1))
end

if acked > 0 then
  redis.call('XACK', K_STREAM, 'g', unpack(sids))
  delete_acked()
  redis.call('ZREM', K_LEASE, unpack(sids))
  redis.call('HDEL', K_ERRORS, unpack(sids))
  -- The receipt's message id is HMAC'd with its stream id: it names the entry just deleted.
  forget_large(mids)
end
if freed > 0 then redis.call('HINCRBY', K_STATS, 'bytes', -freed) end
bump('ack:', day, acked)
count_minute(K_MINUTES, now, 0, 0, acked, 0)
count_latency(K_MINUTES, now, latency)
return out
