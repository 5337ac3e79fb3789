-- dlq_list.lua: lists dead letters, oldest first, with a body preview, or counts them (read only).
-- A reason filter keeps those whose reason contains the given text (plain, case-sensitive). Every
-- call reads at most one bounded chunk of the dead-letter stream (chunk_size), so a filtered page
-- over a large queue may come back short, with a cursor to go on from.
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: 'list', limit, preview bytes, cursor ('' = from the oldest, else the dead-letter stream id
--       to go on after), reason filter ('' = none)
--   or  'count', cursor, reason filter, requested chunk size.
-- Returns 'list': {'ok', next cursor ('' = nothing follows), then per dead letter 9 values: message
--          id, reason, attempts, dead-at ms, body preview, body bytes, content type, published ms,
--          group id or ''}
--         'count': {'ok', matching, entries read, chunk size used, last entry read or ''}
--      or {'no_queue'}.
local refused = rate_refused() if refused then return refused end
if not read_meta() then return { 'no_queue' } end
local function matches(e, filter)
  return filter == '' or string.find(e.r or '', filter, 1, true) ~= nil
end
local function from(cursor)
  if cursor == '' then return '-' end
  return '(' .. cursor
end

if ARGV[1] == 'count' then
  local filter, chunk = ARGV[3], chunk_size(tonumber(ARGV[4]))
  local items = redis.call('XRANGE', K_DLQ, from(ARGV[2]), '+', 'COUNT', chunk)
  local n = 0
  for _, item in ipairs(items) do
    if matches(to_map(item[2]), filter) then n = n + 1 end
  end
  local last = ''
  if #items > 0 then last = items[#items][1] end
  return { 'ok', n, #items, chunk, last }
end

local limit, preview, cursor, filter = tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local out = { 'ok', '' }
local scan = limit
if filter ~= '' then scan = chunk_size(1000) end
local items = redis.call('XRANGE', K_DLQ, from(cursor), '+', 'COUNT', scan)
local n = 0
for _, item in ipairs(items) do
  local e = record(item[1], item[2])
  if matches(e, filter) then
    for _, p in ipairs({ e.id, e.r, e.at, e.da, string.sub(e.b, 1, preview), #e.b, e.ct, e.pa, e.g or '' }) do
      out[#out + 1] = p
    end
    n = n + 1
    if n == limit then
      out[2] = item[1]
      return out
    end
  end
end
-- A full read that did not fill the page: more may follow.
if #items == scan then out[2] = items[#items][1] end
return out
