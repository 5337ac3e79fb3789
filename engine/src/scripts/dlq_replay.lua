-- dlq_replay.lua: moves dead letters back to the queue with their attempts reset: same message
-- id, a new stream entry. Stored bytes do not change.
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: 'all' and a requested chunk size (the oldest dead letters; Rust calls again while a call
--       handles a full chunk), 'match', a requested chunk size, a cursor and a reason text (Rust
--       calls again from the last entry read while a call reads a full chunk), or 'ids' followed by
--       message ids (common.lua's dead_letter_targets).
-- Returns {replayed, chunk size used, entries read, last entry read or ''}.
local refused = rate_refused() if refused then return refused end
local targets, limit, read, last = dead_letter_targets(1)

local n = 0
for _, dsid in ipairs(targets) do
  local e = entry(K_DLQ, dsid)
  if e then
    e.n = '0'
    -- Back in the stream before it leaves the DLQ: never in neither place.
    xadd_ready(e)
    redis.call('XDEL', K_DLQ, dsid)
    redis.call('HDEL', K_DLQ_IX, e.id)
    n = n + 1
  end
end
-- No clock here (replays are rare): a mark at any time counts, so this always wakes.
wake(n, 0)
return { n, limit, read, last }
