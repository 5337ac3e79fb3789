-- common.lua: prepended to every script by scripts.rs (Lua scripts cannot include each other).
--
-- Every queue script but publish.lua and publish_one.lua (which stand alone, see their headers)
-- receives the same standard queue keys, in this order (Engine::invocation passes core::keys'
-- QueueKeys::standard, the one list of them); a script may ignore some. All share the hash tag
-- {q:ID}.
--   KEYS[1]  meta       hash   projected settings, and 'w': until when (ms) a long poll may wait
--                              (publishes PUBLISH on wake only until then; see mark_waiting)
--   KEYS[2]  stream     stream ready and leased messages, consumer group 'g', one consumer 'c'
--                              (read with NOACK: the group is only the never-delivered cursor)
--   KEYS[3]  lease      zset   stream id -> lease deadline ms: exactly the leased entries
--   KEYS[4]  backoff    zset   stream id -> due ms, leases released by a nack (a subset of lease)
--   KEYS[5]  delayed    zset   message id -> due ms
--   KEYS[6]  delayed:m  hash   message id -> cmsgpack'd entry
--   KEYS[7]  dlq        stream dead letters
--   KEYS[8]  dlq:ix     hash   message id -> dlq stream id
--   KEYS[9]  errors     hash   stream id -> last nack error
--   KEYS[10] stats      hash   'bytes' and per-UTC-day counters 'pub:YYYYMMDD', 'del:…', 'ack:…'
--                              (and the day's latency histogram and oldest age, minutes.lua)
--   KEYS[11] wake       channel PUBLISHed whenever a consumer may find something new (payload: how
--                       many messages, `n`; wake.rs wakes that many waiters; the publish scripts
--                       send `n:replica`, and that replica skips it: it woke its own already)
--   KEYS[12] idem:      prefix of the idempotency keys (the user's key is appended)
--   KEYS[13] idem_ix    zset   idempotency key -> when its record expires (ms; inf while its
--                              message is stored): how deleting the queue finds its records
--   KEYS[14] large      zset   message id -> body bytes, only for stored bodies over 1 MiB: what a
--                              payload-size downgrade must wait for. A message keeps its member
--                              while it moves (stream, delayed, dlq); every delete removes it
--                              (forget_large), asking once per call whether the zset exists, so
--                              queues of small messages pay one EXISTS per delete script.
--   KEYS[15] minutes    hash   the last hour per minute (minutes.lua, prepended): each script that
--                              counts calls count_minute once, at its end
--   KEYS[16] tries      hash   stream id -> deliveries since the entry was written, for a lease
--                              past its first delivery (no field: the first). Queues leased before
--                              this model may still hold consumer-group PEL records: see tries_of.
-- Entries (stream, delayed, dlq) are version 1 records: v, id, b (body), ct, a (attributes JSON),
-- g (group id, optional), pa (published ms), ik (idempotency key, optional), n (deliveries before
-- this entry was written: tries restart with every XADD), sz (accounted bytes).
-- Publishes leave out what can be derived (see `complete`); every reader goes through `record`.
local K_META, K_STREAM, K_LEASE, K_BACKOFF = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local K_DELAYED, K_DELAYED_M, K_DLQ, K_DLQ_IX = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local K_ERRORS, K_STATS, K_WAKE, K_IDEM = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local K_IDEM_IX, K_LARGE, K_MINUTES, K_TRIES = KEYS[13], KEYS[14], KEYS[15], KEYS[16]
-- How many they are: a script's own keys come after them.
local STANDARD_KEYS = 16
local IDEM_MS = 86400000
local WAIT_GRACE_MS = 1000

local function read_meta()
  local m = redis.call('HMGET', K_META, 'v', 'paused', 'visibility_ms', 'max_attempts', 'payload_limit', 'storage_limit',
    'suspended', 'w')
  if not m[1] then return nil end
  return {
    paused = m[2] == '1',
    -- The queue's team is suspended (the operator's reason is the value): it delivers nothing.
    suspended = m[7] ~= false and m[7] ~= '',
    visibility_ms = tonumber(m[3]),
    max_attempts = tonumber(m[4]),
    payload_limit = tonumber(m[5]),
    storage_limit = tonumber(m[6]),
    -- Until when a long poll may wait (see mark_waiting), 0 when none has.
    waiting_until = tonumber(m[8] or '0'),
  }
end

local function to_map(flat)
  local t = {}
  for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
  return t
end

-- Fills in the fields a publish leaves out: n 0, content type application/json, no attributes,
-- published at the stream id's milliseconds, accounted bytes #b + #a.
local function complete(sid, e)
  e.n = e.n or '0'
  e.ct = e.ct or 'application/json'
  e.a = e.a or ''
  e.pa = e.pa or string.match(sid, '^%d+')
  e.sz = e.sz or tostring(#e.b + #e.a)
  return e
end

-- A stream entry (id and flat field list, as XRANGE and XREADGROUP give them) as a whole record.
local function record(sid, flat)
  return complete(sid, to_map(flat))
end

-- One stream entry as a record, or nil when it is gone.
local function entry(stream, sid)
  local r = redis.call('XRANGE', stream, sid, sid)
  if #r == 0 then return nil end
  return record(sid, r[1][2])
end

-- Tells this queue's long polls that `n` messages may be ready: only while one may be waiting.
local function wake(n, now)
  if n > 0 and tonumber(redis.call('HGET', K_META, 'w') or '0') >= now then
    redis.call('PUBLISH', K_WAKE, n)
  end
end

-- A consume that found nothing and whose poll will wait until `until_ms`: moves the waiting mark
-- (read_meta's `waiting_until` of `meta`) up to then, never back, so publishes PUBLISH. The grace
-- covers replica clock skew.
local function mark_waiting(meta, until_ms)
  local mark = until_ms + WAIT_GRACE_MS
  if meta.waiting_until < mark then redis.call('HSET', K_META, 'w', mark) end
end

-- How many times the entry `sid` was delivered since it was written, nil when it is not leased.
-- A lease's first delivery has no field in `tries` (XREADGROUP with NOACK writes no PEL record, so
-- a consume writes one command per batch, not one XCLAIM per entry into the AOF and to replicas).
-- A lease made before that (a queue leased by an earlier version) still has its PEL record, whose
-- counter is the answer until set_tries moves it here.
local function tries_of(sid)
  if not redis.call('ZSCORE', K_LEASE, sid) then return nil end
  local t = redis.call('HGET', K_TRIES, sid)
  if t then return tonumber(t) end
  local p = redis.call('XPENDING', K_STREAM, 'g', sid, sid, 1)
  if #p > 0 then return p[1][4] end
  return 1
end

-- Records that the leased entry `sid` was delivered `count` times since it was written, and drops
-- its PEL record if an earlier version left one (XACK of an id outside the PEL does nothing).
local function set_tries(sid, count)
  redis.call('HSET', K_TRIES, sid, count)
  redis.call('XACK', K_STREAM, 'g', sid)
end

-- Deliveries so far of the stream entry `e` (stream id `sid`): the base carried in the entry plus
-- its tries; nil when it is not leased.
local function deliveries(sid, e)
  local t = tries_of(sid)
  if not t then return nil end
  return tonumber(e.n) + t
end

-- The entry of a receipt's delivery (stream id `sid`, message `mid`, delivery number `delivery`)
-- while that delivery is the current one: its entry is the receipt's message, delivered that many
-- times, and a nack has not released its lease (`backoff`). nil: the lease is lost. The check of
-- every script that settles a delivery by reading its entry (nack, bury, release); ack and extend
-- make the same check from the receipt's hint without reading the entry.
local function current_entry(stream, backoff, sid, mid, delivery)
  local e = entry(stream, sid)
  if e and e.id == mid and deliveries(sid, e) == delivery and not redis.call('ZSCORE', backoff, sid) then
    return e
  end
  return nil
end

-- The group is created (with MKSTREAM, from id 0) before the first XADD, so no entry can ever be
-- added behind the group's back and skipped by XREADGROUP.
local function create_group()
  redis.call('XGROUP', 'CREATE', K_STREAM, 'g', '0', 'MKSTREAM')
end

local function entry_args(e)
  local args = { 'v', '1', 'id', e.id, 'b', e.b, 'ct', e.ct, 'a', e.a, 'pa', e.pa, 'n', e.n, 'sz', e.sz }
  if e.g and e.g ~= '' then args[#args + 1] = 'g'; args[#args + 1] = e.g end
  if e.ik and e.ik ~= '' then args[#args + 1] = 'ik'; args[#args + 1] = e.ik end
  return args
end

-- NOMKSTREAM: the common case (the stream exists, so does its group) costs one command; only the
-- queue's very first message creates the stream and the group, before adding itself.
local function xadd_ready(e)
  local args = entry_args(e)
  local sid = redis.call('XADD', K_STREAM, 'NOMKSTREAM', '*', unpack(args))
  if sid then return sid end
  create_group()
  return redis.call('XADD', K_STREAM, '*', unpack(args))
end

local function bump(prefix, day, by)
  if by ~= 0 then redis.call('HINCRBY', K_STATS, prefix .. day, by) end
end

-- The message left storage: its idempotency record lives on until 24 h after publish.
local function release_idem(e, now)
  if not e.ik or e.ik == '' then return end
  local key = K_IDEM .. e.ik
  local rec = redis.call('GET', key)
  -- Only the record that names this message: never shorten another message's record.
  if not rec or string.sub(rec, 1, 32) ~= e.id then return end
  local left = tonumber(e.pa) + IDEM_MS - now
  if left > 0 then
    redis.call('PEXPIRE', key, left)
    redis.call('ZADD', K_IDEM_IX, now + left, e.ik)
  else
    redis.call('DEL', key)
    redis.call('ZREM', K_IDEM_IX, e.ik)
  end
end

-- The messages `ids` left storage: they no longer hold the queue to a large payload size.
local function forget_large(ids)
  if #ids > 0 and redis.call('EXISTS', K_LARGE) == 1 then redis.call('ZREM', K_LARGE, unpack(ids)) end
end

-- Deletes the stream entry `sid` with every trace of its lease: deadline, backoff, last error,
-- tries, and the PEL record an earlier version may have left.
local function remove_entry(sid)
  redis.call('XACK', K_STREAM, 'g', sid)
  redis.call('XDEL', K_STREAM, sid)
  redis.call('ZREM', K_LEASE, sid)
  redis.call('ZREM', K_BACKOFF, sid)
  redis.call('HDEL', K_ERRORS, sid)
  redis.call('HDEL', K_TRIES, sid)
end

-- Moves a leased stream entry to the dead-letter queue. Its bytes stay counted; the caller counts
-- the dead letter (count_minute).
local function dead_letter(sid, e, reason, attempts, now)
  -- Written to the DLQ before it leaves the stream: the message is never in neither place.
  local args = entry_args(e)
  args[#args + 1] = 'r'; args[#args + 1] = reason
  args[#args + 1] = 'at'; args[#args + 1] = tostring(attempts)
  args[#args + 1] = 'da'; args[#args + 1] = tostring(now)
  local dsid = redis.call('XADD', K_DLQ, '*', unpack(args))
  redis.call('HSET', K_DLQ_IX, e.id, dsid)
  remove_entry(sid)
end

-- Moves up to `limit` delayed messages that are due into the stream; returns how many.
local function promote_due(now, limit)
  local due = redis.call('ZRANGEBYSCORE', K_DELAYED, '-inf', now, 'LIMIT', 0, limit)
  for _, mid in ipairs(due) do
    local packed = redis.call('HGET', K_DELAYED_M, mid)
    -- Added to the stream before it leaves the delayed hash: never in neither place.
    if packed then xadd_ready(cmsgpack.unpack(packed)) end
    redis.call('HDEL', K_DELAYED_M, mid)
    redis.call('ZREM', K_DELAYED, mid)
  end
  return #due
end

-- The group's last-delivered id: entries after it were never delivered, entries up to it are
-- leased (acknowledged ones are deleted).
local function last_delivered()
  if redis.call('EXISTS', K_STREAM) == 0 then return nil end
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', K_STREAM)) do
    local t = to_map(g)
    if t['name'] == 'g' then return t['last-delivered-id'] end
  end
  return nil
end

-- How many messages one chunked call (purge, replay, DLQ purge) may touch: each is read whole by
-- XRANGE, so the chunk shrinks as the queue's payload limit grows (64 MiB of bodies at most).
local function chunk_size(requested)
  local meta = read_meta()
  local payload = (meta and meta.payload_limit) or 1048576
  return math.max(1, math.min(requested, math.floor(67108864 / payload)))
end

-- The dead letters a replay or purge acts on. ARGV[at] is 'all' (then ARGV[at + 1] is the
-- requested chunk size: the oldest dead letters, one chunk per call), 'match' (then the requested
-- chunk size, a cursor: '' or the dlq stream id to read on after, and a text: of the next chunk
-- read, those whose reason contains the text) or 'ids' (then message ids follow). Returns the
-- dlq stream ids that exist, the chunk size used (0 for 'ids'), how many entries were read and
-- the last one read ('' when none).
local function dead_letter_targets(at)
  local targets, limit = {}, 0
  if ARGV[at] == 'all' then
    limit = chunk_size(tonumber(ARGV[at + 1]))
    for _, item in ipairs(redis.call('XRANGE', K_DLQ, '-', '+', 'COUNT', limit)) do
      targets[#targets + 1] = item[1]
    end
    return targets, limit, #targets, ''
  elseif ARGV[at] == 'match' then
    limit = chunk_size(tonumber(ARGV[at + 1]))
    local from, text = '-', ARGV[at + 3]
    if ARGV[at + 2] ~= '' then from = '(' .. ARGV[at + 2] end
    local items = redis.call('XRANGE', K_DLQ, from, '+', 'COUNT', limit)
    for _, item in ipairs(items) do
      if string.find(to_map(item[2]).r or '', text, 1, true) then targets[#targets + 1] = item[1] end
    end
    local last = ''
    if #items > 0 then last = items[#items][1] end
    return targets, limit, #items, last
  else
    for i = at + 1, #ARGV do
      local dsid = redis.call('HGET', K_DLQ_IX, ARGV[i])
      if dsid then targets[#targets + 1] = dsid end
    end
  end
  return targets, limit, #targets, ''
end

