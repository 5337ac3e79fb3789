-- browse.lua: the console's view of a queue's messages in every state (read only): a page of them,
-- or one whole. Pages run through the stream (ready and leased messages) in stream order, then
-- through the delayed messages by due time; the cursor says where the last page stopped.
-- KEYS: the standard queue keys (common.lua).
-- ARGV: now_ms, 'page', limit, preview bytes, cursor ('' = from the start, 's<stream id>' = the
--       stream after that entry, 'd<due ms>:<message id>' = the delayed messages after that one)
--   or  now_ms, 'one', where ('s' stream, 'd' delayed, 'x' dead letter), stream id or message id.
--   or  now_ms, 'find', 'm' (a message id) or 'k' (an idempotency key), the id or key, stream
--       cursor ('' = first call: also looks in the delayed messages and the dead letters), chunk:
--       one message by what its publisher knows of it. Message ids are not indexed in the stream,
--       so each call reads at most `chunk` stream entries before the cursor, newest first; a key resolves through
--       its idempotency record to its message id, and only while its message is stored.
-- Returns {'ok', next cursor ('' when nothing follows; for 'find', the stream entry to search
--          before when this chunk did not hold it), then per message 13 values: state, at ms,
--          stream id ('' unless in the stream), message id, body (the first preview bytes on a
--          page, whole for 'one'), body bytes, content type, attributes, group id or '',
--          published ms, deliveries so far, reason ('' unless dead), idempotency key or ''}
--          ('one' of a message no longer there: no values), or {'no_queue'}.
-- States and their `at`: 'ready' (ready since: published, or when its lease ran out),
-- 'in_flight' (the lease deadline, which an extend moves), 'retry' (released by a nack: when it
-- is due again), 'delayed' (published with a delay: when it is due), 'dead' (dead since).
local now, mode = tonumber(ARGV[1]), ARGV[2]
if not read_meta() then return { 'no_queue' } end
local out = { 'ok', '' }
local preview = nil

local function sid_after(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am > bm or (am == bm and as > bs)
end

local function add(state, at, sid, e, attempts, reason)
  local body = e.b
  if preview then body = string.sub(body, 1, preview) end
  for _, v in ipairs({ state, at, sid, e.id, body, #e.b, e.ct, e.a, e.g or '', e.pa, attempts, reason or '', e.ik or '' }) do
    out[#out + 1] = v
  end
end

-- A stream entry's state: never delivered (after the group's last-delivered id), else by its lease.
local function add_stream(sid, e, last)
  if not last or sid_after(sid, last) then return add('ready', e.pa, sid, e, e.n) end
  local deadline = redis.call('ZSCORE', K_LEASE, sid)
  local done = deliveries(sid, e) or tonumber(e.n)
  if not deadline then return add('ready', e.pa, sid, e, done) end
  deadline = tonumber(deadline)
  if deadline <= now then return add('ready', deadline, sid, e, done) end
  if redis.call('ZSCORE', K_BACKOFF, sid) then return add('retry', deadline, sid, e, done) end
  add('in_flight', deadline, sid, e, done)
end

local function delayed_record(mid)
  local packed = redis.call('HGET', K_DELAYED_M, mid)
  if not packed then return nil end
  return cmsgpack.unpack(packed)
end

if mode == 'one' then
  local where, ref = ARGV[3], ARGV[4]
  if where == 's' then
    local e = redis.call('EXISTS', K_STREAM) == 1 and entry(K_STREAM, ref)
    if e then add_stream(ref, e, last_delivered()) end
  elseif where == 'd' then
    local due = redis.call('ZSCORE', K_DELAYED, ref)
    local e = due and delayed_record(ref)
    if e then add('delayed', due, '', e, e.n) end
  else
    local dsid = redis.call('HGET', K_DLQ_IX, ref)
    local e = dsid and entry(K_DLQ, dsid)
    if e then add('dead', e.da, '', e, e.at, e.r) end
  end
  return out
end

if mode == 'find' then
  local kind, mid, from, chunk = ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
  if kind == 'k' then
    -- +inf in idem_ix: the key's message is still stored (ack and purge give it an expiry).
    if redis.call('ZSCORE', K_IDEM_IX, mid) ~= 'inf' then return out end
    mid = string.match(redis.call('GET', K_IDEM .. mid) or '', '^(%x+):')
    if not mid then return out end
  end
  if from == '' then
    local due = redis.call('ZSCORE', K_DELAYED, mid)
    local e = due and delayed_record(mid)
    if e then add('delayed', due, '', e, e.n); return out end
    local dsid = redis.call('HGET', K_DLQ_IX, mid)
    e = dsid and entry(K_DLQ, dsid)
    if e then add('dead', e.da, '', e, e.at, e.r); return out end
  end
  if redis.call('EXISTS', K_STREAM) == 0 then return out end
  -- Newest first: the message looked up is most often one just sent.
  local start = '+'
  if from ~= '' then start = '(' .. from end
  local items = redis.call('XREVRANGE', K_STREAM, start, '-', 'COUNT', chunk)
  for _, item in ipairs(items) do
    local flat = item[2]
    for i = 1, #flat, 2 do
      if flat[i] == 'id' then
        if flat[i + 1] == mid then
          add_stream(item[1], record(item[1], flat), last_delivered())
          return out
        end
        break
      end
    end
  end
  if #items == chunk then out[2] = items[#items][1] end
  return out
end

local limit, cursor = tonumber(ARGV[3]), ARGV[5]
preview = tonumber(ARGV[4])
local n = 0
if cursor == '' or string.sub(cursor, 1, 1) == 's' then
  if redis.call('EXISTS', K_STREAM) == 1 then
    local from = '-'
    if cursor ~= '' then from = '(' .. string.sub(cursor, 2) end
    local last = last_delivered()
    for _, item in ipairs(redis.call('XRANGE', K_STREAM, from, '+', 'COUNT', limit)) do
      add_stream(item[1], record(item[1], item[2]), last)
      n = n + 1
      if n == limit then out[2] = 's' .. item[1] end
    end
  end
  if n == limit then return out end
  cursor = ''
end
-- The delayed messages after the cursor (ties on the due time go by message id, as in the zset).
local after_due, after_id = -1, ''
if cursor ~= '' then
  local due, mid = string.match(cursor, '^d(%d+):(%x+)$')
  if due then after_due, after_id = tonumber(due), mid end
end
local offset = 0
while n < limit do
  local batch = redis.call('ZRANGEBYSCORE', K_DELAYED, math.max(after_due, 0), '+inf', 'WITHSCORES', 'LIMIT', offset, limit)
  if #batch == 0 then break end
  offset = offset + #batch / 2
  for i = 1, #batch, 2 do
    local mid, due = batch[i], tonumber(batch[i + 1])
    if n < limit and (due > after_due or mid > after_id) then
      local e = delayed_record(mid)
      if e then
        add('delayed', due, '', e, e.n)
        n = n + 1
        if n == limit then out[2] = 'd' .. due .. ':' .. mid end
      end
    end
  end
end
return out
