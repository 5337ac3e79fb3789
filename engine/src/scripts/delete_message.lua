-- delete_message.lua: deletes one message the console points at (its detail page's "Delete"): a
-- ready or retrying stream entry, or a delayed message. A message under a live lease is refused
-- (its consumer holds a receipt and is working on it: deleting it under them would turn their ack
-- into a lease_lost they cannot explain); dead letters have their own purge (dlq_purge.lua).
-- KEYS: the standard queue keys (common.lua), then the token's rate bucket when charged (rate.lua:
--       it also opens ARGV, and a refusal returns {'rate_limited', ...} before anything changes).
-- ARGV: now_ms, where ('s' a stream entry, 'd' a delayed message), stream id or message id.
-- Returns {'ok', 'deleted', message id}, {'ok', 'leased', lease deadline ms}, {'ok', 'gone'} (no
--         longer there), or {'no_queue'}.
local refused = rate_refused() if refused then return refused end
local now, where, ref = tonumber(ARGV[1]), ARGV[2], ARGV[3]
if not read_meta() then return { 'no_queue' } end
local e
if where == 's' then
  e = redis.call('EXISTS', K_STREAM) == 1 and entry(K_STREAM, ref)
  if not e then return { 'ok', 'gone' } end
  local deadline = redis.call('ZSCORE', K_LEASE, ref)
  -- A lease a nack released (backoff) is no consumer's any more: its receipt is already stale.
  if deadline and tonumber(deadline) > now and not redis.call('ZSCORE', K_BACKOFF, ref) then
    return { 'ok', 'leased', tonumber(deadline) }
  end
  remove_entry(ref)
elseif where == 'd' then
  local packed = redis.call('HGET', K_DELAYED_M, ref)
  if not packed then return { 'ok', 'gone' } end
  e = cmsgpack.unpack(packed)
  redis.call('HDEL', K_DELAYED_M, ref)
  redis.call('ZREM', K_DELAYED, ref)
else
  return { 'ok', 'gone' }
end
release_idem(e, now)
redis.call('HINCRBY', K_STATS, 'bytes', -tonumber(e.sz))
forget_large({ e.id })
return { 'ok', 'deleted', e.id }
