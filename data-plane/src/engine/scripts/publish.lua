-- publish.lua: stores one message or a batch, atomically (all or none). The hot path: keep it to
-- the fewest commands (HMGET meta, XADD, two HINCRBYs, PUBLISH for a plain message).
-- KEYS: the twelve queue keys (common.lua), then KEYS[13..]: the idempotency keys of the entries
--       that have one.
-- ARGV: now_ms, utc_day, count, then per message 9 values:
--       message id, body, content type, attributes JSON, group id ('' = none),
--       KEYS index of its idempotency key (0 = none), payload fingerprint ('' without a key),
--       delay ms, accounted bytes.
-- Returns {'ok', then per message: duplicate (0/1), id, published ms, available ms}
--      or  {'no_queue'} | {'paused'} | {'storage'} | {'too_large', index} | {'conflict', index}
--      (index 0-based).
local now, day, count = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local meta = redis.call('HMGET', K_META, 'v', 'paused', 'payload_limit', 'storage_limit')
if not meta[1] then return { 'no_queue' } end
if meta[2] == '1' then return { 'paused' } end
local payload_limit, storage_limit = tonumber(meta[3]), tonumber(meta[4])

-- Pass 1: validate everything and resolve idempotency keys; nothing is written yet, so a refusal
-- of any entry leaves the queue untouched.
local dups, records, new_bytes = {}, {}, 0
for i = 0, count - 1 do
  local base = 4 + i * 9
  if #ARGV[base + 1] > payload_limit then return { 'too_large', i } end
  local key_index = tonumber(ARGV[base + 5])
  local dup = nil
  if key_index > 0 then
    local key = KEYS[key_index]
    -- Record: id:fingerprint:published:available.
    local rec = records[key] or redis.call('GET', key)
    if rec then
      local id, fp, pa, av = string.match(rec, '^(%x+):(%x+):(%d+):(%d+)$')
      if fp ~= ARGV[base + 6] then return { 'conflict', i } end
      dup = { id, pa, av }
    else
      records[key] = ARGV[base] .. ':' .. ARGV[base + 6] .. ':' .. now .. ':' .. (now + tonumber(ARGV[base + 7]))
    end
  end
  if dup then dups[i] = dup else new_bytes = new_bytes + tonumber(ARGV[base + 8]) end
end

-- Storage: add first, take back on refusal (one command on the success path). Never evict.
if new_bytes > 0 then
  local bytes = redis.call('HINCRBY', K_STATS, 'bytes', new_bytes)
  if bytes > storage_limit then
    redis.call('HINCRBY', K_STATS, 'bytes', -new_bytes)
    return { 'storage' }
  end
end

-- Pass 2: write.
local out, stored = { 'ok' }, 0
for i = 0, count - 1 do
  local base = 4 + i * 9
  local dup = dups[i]
  if dup then
    out[#out + 1] = 1; out[#out + 1] = dup[1]; out[#out + 1] = dup[2]; out[#out + 1] = dup[3]
  else
    local id, delay, key_index = ARGV[base], tonumber(ARGV[base + 7]), tonumber(ARGV[base + 5])
    local ik = nil
    if key_index > 0 then
      ik = string.sub(KEYS[key_index], #K_IDEM + 1)
      redis.call('SET', KEYS[key_index], records[KEYS[key_index]])
    end
    local e = {
      id = id, b = ARGV[base + 1], ct = ARGV[base + 2], a = ARGV[base + 3], g = ARGV[base + 4],
      pa = ARGV[1], ik = ik, n = '0', sz = ARGV[base + 8],
    }
    if delay > 0 then
      redis.call('HSET', K_DELAYED_M, id, cmsgpack.pack(e))
      redis.call('ZADD', K_DELAYED, now + delay, id)
    else
      xadd_ready(e)
    end
    stored = stored + 1
    out[#out + 1] = 0; out[#out + 1] = id; out[#out + 1] = now; out[#out + 1] = now + delay
  end
end
if stored > 0 then
  bump('pub:', day, stored)
  -- Waiters re-run consume (a ready message) or re-plan their sleep (a delayed one).
  redis.call('PUBLISH', K_WAKE, stored)
end
return out
