-- publish_one.lua: stores one plain message (no idempotency key, no delay): most of the traffic,
-- so it stands alone (no common.lua), takes only the keys it touches and writes the shortest entry
-- common.lua's `complete` can read back: `id` and `b`, plus `ct`, `a` and `g` only when they differ
-- from their defaults. Published ms comes from the stream id, `n` is 0, `sz` is #b + #a.
-- Every command, argument and field costs Redis time on the hot path (Lua conversion, the command,
-- and again when the effects are written to the AOF), hence the terse shape: one HMGET of the
-- settings and the waiting mark, XADD, and PUBLISH only while a long poll may be waiting. The
-- caller has already drawn the message's bytes from its storage lease (budget.lua) and counts it
-- (engine/src/ledger.rs): neither the storage limit nor today's count costs a write here.
-- KEYS[1] meta, KEYS[2] stream, KEYS[3] wake (as in common.lua), then KEYS[4] the token's rate
--       bucket when charged (rate.lua, prepended: it also opens ARGV; a refusal returns
--       {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, replica id (named in the wake-up: that replica woke its own waiters; wake.rs),
--       message id, body, then optional field/value pairs: 'ct' content type, 'a' attributes
--       JSON, 'g' group id.
-- Returns the stream id (its milliseconds are the published time),
--      or 'no_queue' | 'paused' | 'too_large'.
local refused = rate_refused() if refused then return refused end
local K_META, K_STREAM, K_WAKE = KEYS[1], KEYS[2], KEYS[3]
local meta = redis.call('HMGET', K_META, 'paused', 'payload_limit', 'w')
if not meta[2] then return 'no_queue' end
if meta[1] == '1' then return 'paused' end
local body = ARGV[4]
if #body > tonumber(meta[2]) then return 'too_large' end

local sid = redis.call('XADD', K_STREAM, 'NOMKSTREAM', '*', 'id', ARGV[3], 'b', body, unpack(ARGV, 5))
if not sid then
  -- The queue's first message: the group before the entry (see common.lua's create_group).
  redis.call('XGROUP', 'CREATE', K_STREAM, 'g', '0', 'MKSTREAM')
  sid = redis.call('XADD', K_STREAM, '*', 'id', ARGV[3], 'b', body, unpack(ARGV, 5))
end
-- Only while a long poll may be waiting (common.lua's mark_waiting): most publishes wake nobody.
if meta[3] and tonumber(meta[3]) >= tonumber(ARGV[1]) then redis.call('PUBLISH', K_WAKE, '1:' .. ARGV[2]) end
return sid
