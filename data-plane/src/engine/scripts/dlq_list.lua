-- dlq_list.lua: lists dead letters, oldest first, with a body preview (read only).
-- KEYS: the fourteen queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: limit, preview bytes.
-- Returns {'ok', then per dead letter 9 values: message id, reason, attempts, dead-at ms,
--          body preview, body bytes, content type, published ms, group id or ''} or {'no_queue'}.
local refused = rate_refused() if refused then return refused end
local limit, preview = tonumber(ARGV[1]), tonumber(ARGV[2])
if not read_meta() then return { 'no_queue' } end
local out = { 'ok' }
for _, item in ipairs(redis.call('XRANGE', K_DLQ, '-', '+', 'COUNT', limit)) do
  local e = record(item[1], item[2])
  for _, p in ipairs({ e.id, e.r, e.at, e.da, string.sub(e.b, 1, preview), #e.b, e.ct, e.pa, e.g or '' }) do
    out[#out + 1] = p
  end
end
return out
