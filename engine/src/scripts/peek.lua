-- peek.lua: reads up to `limit` ready messages without leasing them, in the order consume would
-- deliver them: due leases first, then never-delivered entries (read only).
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, limit.
-- Returns {'ok', then per message 8 values: stream id, message id, body, content type, attributes,
--          group id or '', published ms, deliveries so far} or {'no_queue'}.
local refused = rate_refused() if refused then return refused end
local now, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
if not read_meta() then return { 'no_queue' } end
local out, n = { 'ok' }, 0
local function add(sid, e, attempts)
  for _, p in ipairs({ sid, e.id, e.b, e.ct, e.a, e.g or '', e.pa, attempts }) do out[#out + 1] = p end
  n = n + 1
end
local last = last_delivered()
if not last then return out end
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', now, 'LIMIT', 0, limit)) do
  local e = entry(K_STREAM, sid)
  local done = e and deliveries(sid, e)
  if done then add(sid, e, done) end
end
if n < limit then
  for _, item in ipairs(redis.call('XRANGE', K_STREAM, '(' .. last, '+', 'COUNT', limit - n)) do
    local e = record(item[1], item[2])
    add(item[1], e, tonumber(e.n))
  end
end
return out
