-- ack.lua: acknowledges deliveries: the message is deleted.
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, utc_day, count, then a run these receipts acknowledge whole ('' '' 0 when none;
--       see delete_acked): its first and last stream ids and how many entries it holds, then per
--       receipt 6 values: stream id, message id, delivery number, then the receipt's hint
--       (version 2 and 3 receipts, HMAC'd with the rest): the entry's delivery base n ('' = no
--       hint: read the entry), accounted bytes sz, has an idempotency key (1/0).
-- Returns one integer per receipt: 1 acknowledged, 0 lease lost (the delivery is no longer the
-- current one: redelivered, released by a nack, acknowledged, dead-lettered or purged).
-- A lease that expired but was not yet redelivered is still accepted: nobody else holds it.
--
-- The hot path reads no entry: a stream id is never reused (XADD ids only grow, a purge or replay
-- writes a new id), so the lease of the receipt's stream id, its tries and the hint's base are the
-- whole check; a lease leaves the lease zset in the same script that deletes its entry, so a
-- lease means the entry is there. Writes are one command per kind for the whole batch.
-- Each acknowledged message's publish -> ack time (now - the stream id's milliseconds: when the
-- entry entered the stream) goes into the minute's histogram (count_latency, minutes.lua; the
-- sweeper folds it into the day's): what the Overview's latency graphs read.
local refused = rate_refused() if refused then return refused end
local now, day, count = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local run_first, run_last, run_len = ARGV[4], ARGV[5], tonumber(ARGV[6])
-- Where the receipts' values start.
local FIRST = 7
local out = {}
if count == 0 then return out end
if redis.call('EXISTS', K_STREAM) == 0 then
  for i = 1, count do out[i] = 0 end
  return out
end

-- The receipts of a batch repeat the same few texts (delivery numbers, sizes, a stream id's
-- milliseconds): numbers.lua's num converts each once.
local find, sub = string.find, string.sub
-- A stream id's milliseconds and sequence number, or its milliseconds alone when `ms_only`.
local function parse_sid(sid, ms_only)
  local dash = find(sid, '-', 1, true)
  local ms = num(sub(sid, 1, dash - 1))
  if ms_only then return ms end
  return ms, num(sub(sid, dash + 1))
end
-- Whether the stream id of milliseconds am and sequence as comes before that of bm and bs.
local function earlier(am, as, bm, bs)
  return am < bm or (am == bm and as < bs)
end

-- Which receipts name a lease, and its tries: one ZMSCORE for the batch, and the tries only when
-- some lease of the queue was delivered more than once (`tries` exists).
local sid_args = {}
for i = 0, count - 1 do sid_args[i + 1] = ARGV[FIRST + i * 6] end
local leased = redis.call('ZMSCORE', K_LEASE, unpack(sid_args))
local tries = {}
if redis.call('EXISTS', K_TRIES) == 1 then tries = redis.call('HMGET', K_TRIES, unpack(sid_args)) end
-- Leases made by an earlier version keep their counter in the consumer group's PEL until they are
-- settled (common.lua's tries_of): asked for only while the PEL holds any.
local legacy = redis.call('XPENDING', K_STREAM, 'g')[1] > 0
-- Whether each acknowledged stream id must be placed against the named run (delete_acked): not
-- when there is no run, nor when the receipts are its entries and nothing else. The caller names a
-- run only when every one of its entries has a receipt here (HMAC'd with the run consume gave it,
-- so inside it), so as many receipts as entries are exactly those: a consume + ack loop's usual
-- call, where placing each id cost the ack about a sixth of its Redis time (docs/performance.md,
-- What is left to cut in Redis).
local place_in_run = run_len > 0 and run_len ~= count
-- Each stream id's milliseconds, parsed once: when the entry entered the stream (the latency
-- histogram); with its sequence number only when it must be placed against the run.
local added_at, seq_of = {}, {}
for i = 0, count - 1 do
  added_at[i], seq_of[i] = parse_sid(sid_args[i + 1], not place_in_run)
end
local function pending(i, sid)
  if not leased[i + 1] then return nil end
  local t = tries[i + 1]
  if t then return num(t) end
  if legacy then
    local p = redis.call('XPENDING', K_STREAM, 'g', sid, sid, 1)
    if #p > 0 then return p[1][4] end
  end
  return 1
end

local any_backoff = redis.call('ZCARD', K_BACKOFF) > 0
local sids, mids, seen, acked, freed, latency = {}, {}, {}, 0, 0, {}
-- The receipt index of each acknowledged stream id (sids[k] is receipt at_index[k]'s).
local at_index = {}
-- The acknowledged leases that have a field in `tries`: HDEL of a missing field scans a small
-- hash (a listpack) whole, so only these are deleted.
local tried = {}
for i = 0, count - 1 do
  local base = FIRST + i * 6
  local sid, mid, delivery, n = ARGV[base], ARGV[base + 1], num(ARGV[base + 2]), ARGV[base + 3]
  local sz, has_ik = ARGV[base + 4], ARGV[base + 5] == '1'
  local counter = not seen[sid] and pending(i, sid)
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
    at_index[#sids] = i
    mids[#mids + 1] = mid
    if tries[i + 1] then tried[#tried + 1] = sid end
    if e then release_idem(e, now) end
    freed = freed + num(sz)
    acked = acked + 1
    -- A replica's clock a little behind Redis's counts as 0 ms (bucket 0), never negative.
    time_latency(latency, now - added_at[i])
    out[#out + 1] = 1
  else
    out[#out + 1] = 0
  end
end
-- Deletes the acknowledged entries. XDEL seeks each id inside its stream node (1 to 2 µs an id,
-- more than the rest of the ack's commands together); XTRIM MINID removes whole nodes at the
-- stream's head. It may remove only what this call acknowledged, and the stream says no more than
-- its first entry cheaply. So the trim needs a run (consume.lua): entries one XREADGROUP read
-- together, consecutive in the stream with nothing else between them then or ever (stream ids only
-- grow). The caller names the run only when these receipts are all of its entries (they are
-- HMAC'd, so a receipt's run is the one consume gave it); if every one of them was acknowledged
-- here and the run is the stream's head, everything up to its last entry is this call's, and
-- goes in one XTRIM. Consumers that acknowledge what they consumed, in about that order, take
-- that path; the rest of the batch, and every other ack, deletes by id.
local function delete_acked()
  local rest = sids
  if run_len > 0 then
    local fm, fs = parse_sid(run_first)
    local lm, ls = parse_sid(run_last)
    local in_run = 0
    rest = {}
    if place_in_run then
      for k, sid in ipairs(sids) do
        local m, q = added_at[at_index[k]], seq_of[at_index[k]]
        if earlier(m, q, fm, fs) or earlier(lm, ls, m, q) then rest[#rest + 1] = sid else in_run = in_run + 1 end
      end
    else
      -- Every acknowledged id is the run's (a receipt named twice counts once in sids, so a
      -- duplicate leaves the run short and nothing is trimmed).
      in_run = #sids
    end
    local head = in_run == run_len and redis.call('XRANGE', K_STREAM, '-', '+', 'COUNT', 1)[1]
    if head and head[1] == run_first then
      redis.call('XTRIM', K_STREAM, 'MINID', string.format('%d-%d', lm, ls + 1))
    else
      rest = sids
    end
  end
  if #rest > 0 then redis.call('XDEL', K_STREAM, unpack(rest)) end
end

if acked > 0 then
  if legacy then redis.call('XACK', K_STREAM, 'g', unpack(sids)) end
  delete_acked()
  redis.call('ZREM', K_LEASE, unpack(sids))
  redis.call('HDEL', K_ERRORS, unpack(sids))
  if #tried > 0 then redis.call('HDEL', K_TRIES, unpack(tried)) end
  -- The receipt's message id is HMAC'd with its stream id: it names the entry just deleted.
  forget_large(mids)
end
if freed > 0 then redis.call('HINCRBY', K_STATS, 'bytes', -freed) end
bump('ack:', day, acked)
count_minute(K_MINUTES, now, 0, 0, acked, 0)
count_latency(K_MINUTES, now, latency)
return out
