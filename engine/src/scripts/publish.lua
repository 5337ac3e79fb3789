-- publish.lua: stores a batch, or one message with an idempotency key or a delay, atomically (all
-- or none); one plain message goes to publish_one.lua. A hot path too, so it runs without
-- common.lua (whose fifteen KEYS and helpers cost more than this body) and takes only the keys it
-- touches; budget.lua, minutes.lua and numbers.lua are prepended.
-- KEYS[1] meta, KEYS[2] stream, KEYS[3] delayed, KEYS[4] delayed:m, KEYS[5] stats, KEYS[6] wake
--       (as in common.lua), KEYS[7] budget, KEYS[8] idem_ix, KEYS[9] large (common.lua's KEYS[13]
--       and KEYS[14]), KEYS[10] minutes (common.lua's KEYS[15]; minutes.lua is prepended), then
--       KEYS[11..]: the idempotency keys of the entries that have one, then the token's rate
--       bucket when charged (rate.lua, prepended: it also opens ARGV, and a refusal returns
--       {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, utc_day, count, length of the idempotency key prefix, replica id, this replica's
--       storage lease when it gives part of it back first ('' = as recorded), then per message:
--       message id, body, and how many values follow (0 or 7):
--       7: content type, attributes JSON, group id ('' = none), KEYS index of its idempotency
--          key (0 = none), payload fingerprint ('' without a key), delay ms, accounted bytes;
--       0: a bare message: application/json, no attributes, no group, no key, no delay, its
--          body's length accounted. Every argument costs Redis time to turn into a Lua string, and
--          most messages are bare.
-- Returns {'ok', then per message: duplicate (0/1), id, published ms, available ms}
--      or  {'no_queue'} | {'paused'} | {'storage'} | {'too_large', index} | {'conflict', index}
--      (index 0-based).
-- Stream entries leave out what common.lua's `complete` derives (v, n, sz, pa, and ct and a at
-- their defaults), as publish_one.lua's do: a message published to the stream is published at its
-- stream id's milliseconds, which the reply and its idempotency record give too. Delayed ones are
-- whole records (common.lua's entry_args), published now.
local refused = rate_refused() if refused then return refused end
local K_META, K_STREAM, K_DELAYED, K_DELAYED_M, K_STATS, K_WAKE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local K_BUDGET, K_IDEM_IX, K_LARGE, K_MINUTES = KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local LARGE = 1048576
local now, day, count, idem_prefix = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local me, my_lease = ARGV[5], ARGV[6]
local meta = redis.call('HMGET', K_META, 'v', 'paused', 'payload_limit', 'storage_limit', 'w')
if not meta[1] then return { 'no_queue' } end
-- Recorded whatever the outcome: the caller takes it as this replica's lease from now on.
if my_lease ~= '' then set_lease(K_BUDGET, me, tonumber(my_lease), now) end
if meta[2] == '1' then return { 'paused' } end
local payload_limit, storage_limit = tonumber(meta[3]), tonumber(meta[4])

-- Storage: what is stored plus every live lease (budget.lua) leaves room for `bytes`, counting
-- this replica's lease as it now gives it when it does. Never evict.
local function reserve(bytes)
  local room
  if my_lease ~= '' then
    room = room_for(K_BUDGET, K_STATS, now, me, tonumber(my_lease), storage_limit)
  elseif bytes == 0 then
    return true
  else
    room = room_for(K_BUDGET, K_STATS, now, '', 0, storage_limit)
  end
  if room < bytes then return false end
  if bytes > 0 then redis.call('HINCRBY', K_STATS, 'bytes', bytes) end
  return true
end

-- XADD with NOMKSTREAM: the common case costs one command; only the queue's very first message
-- creates the stream and its group (from id 0, before adding itself, so XREADGROUP never skips
-- an entry added behind the group's back). Same as common.lua's xadd_ready.
local function xadd_ready(args)
  local sid = redis.call('XADD', K_STREAM, 'NOMKSTREAM', '*', unpack(args))
  if sid then return sid end
  redis.call('XGROUP', 'CREATE', K_STREAM, 'g', '0', 'MKSTREAM')
  return redis.call('XADD', K_STREAM, '*', unpack(args))
end

local function stored(n)
  redis.call('HINCRBY', K_STATS, 'pub:' .. day, n)
  count_minute(K_MINUTES, now, n, 0, 0, 0)
  -- Waiters re-run consume (a ready message) or re-plan their sleep (a delayed one); the payload
  -- is how many waiters are worth waking, and who sent it (that replica woke its own already;
  -- wake.rs). Only while one may wait (common.lua's mark_waiting).
  if meta[5] and tonumber(meta[5]) >= now then redis.call('PUBLISH', K_WAKE, n .. ':' .. me) end
end

-- Pass 1: validate everything and resolve idempotency keys; nothing is written yet, so a refusal
-- of any entry leaves the queue untouched. It also finds where each message's values start in
-- ARGV (the layout in the header) and whether it is bare, for pass 2.
local at, bare = {}, {}
local dups, records, new_bytes = {}, {}, 0
local pos = 7
for i = 0, count - 1 do
  local base = pos
  at[i], bare[i] = base, ARGV[base + 2] == '0'
  pos = pos + (bare[i] and 3 or 10)
  local body = ARGV[base + 1]
  if #body > payload_limit then return { 'too_large', i } end
  local key_index = bare[i] and 0 or num(ARGV[base + 6])
  local dup = nil
  if key_index > 0 then
    local key, fingerprint = KEYS[key_index], ARGV[base + 7]
    local mine = records[key]
    if mine then
      -- A key an earlier entry of this batch stores: that entry's reply, once it is written.
      if mine.fp ~= fingerprint then return { 'conflict', i } end
      dup = mine
    else
      -- Record: id:fingerprint:published:available.
      local rec = redis.call('GET', key)
      if rec then
        local id, fp, pa, av = string.match(rec, '^(%x+):(%x+):(%d+):(%d+)$')
        if fp ~= fingerprint then return { 'conflict', i } end
        dup = { id = id, pa = pa, av = av }
      else
        records[key] = { id = ARGV[base], fp = fingerprint }
      end
    end
  end
  if dup then dups[i] = dup else new_bytes = new_bytes + (bare[i] and #body or num(ARGV[base + 9])) end
end

if not reserve(new_bytes) then return { 'storage' } end

-- Pass 2: write.
local out, written = { 'ok' }, 0
for i = 0, count - 1 do
  local base = at[i]
  local dup = dups[i]
  if dup then
    out[#out + 1] = 1; out[#out + 1] = dup.id; out[#out + 1] = dup.pa; out[#out + 1] = dup.av
  else
    local id, body = ARGV[base], ARGV[base + 1]
    local ct, a, g, key_index, delay = 'application/json', '', '', 0, 0
    if not bare[i] then
      ct, a, g, key_index, delay = ARGV[base + 3], ARGV[base + 4], ARGV[base + 5], num(ARGV[base + 6]), num(ARGV[base + 8])
    end
    local ik = key_index > 0 and string.sub(KEYS[key_index], idem_prefix + 1) or nil
    local pa
    if delay > 0 then
      pa = ARGV[1]
      local e = { id = id, b = body, ct = ct, a = a, g = g, pa = pa, ik = ik, n = '0', sz = ARGV[base + 9] }
      redis.call('HSET', K_DELAYED_M, id, cmsgpack.pack(e))
      redis.call('ZADD', K_DELAYED, now + delay, id)
    else
      local args = { 'id', id, 'b', body }
      if ct ~= 'application/json' then args[#args + 1] = 'ct'; args[#args + 1] = ct end
      if a ~= '' then args[#args + 1] = 'a'; args[#args + 1] = a end
      if g ~= '' then args[#args + 1] = 'g'; args[#args + 1] = g end
      if ik then args[#args + 1] = 'ik'; args[#args + 1] = ik end
      pa = string.match(xadd_ready(args), '^%d+')
    end
    local av = num(pa) + delay
    if ik then
      local rec = records[KEYS[key_index]]
      rec.pa, rec.av = pa, av
      redis.call('SET', KEYS[key_index], id .. ':' .. rec.fp .. ':' .. pa .. ':' .. av)
      redis.call('ZADD', K_IDEM_IX, 'inf', ik)
    end
    -- Counted while stored, wherever it moves, so a payload downgrade can wait for it (common.lua).
    if #body > LARGE then redis.call('ZADD', K_LARGE, #body, id) end
    written = written + 1
    out[#out + 1] = 0; out[#out + 1] = id; out[#out + 1] = pa; out[#out + 1] = av
  end
end
if written > 0 then stored(written) end
return out
