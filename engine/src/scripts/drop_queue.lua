-- drop_queue.lua: deletes a deleted queue's storage: every message and every key of the queue, the
-- idempotency records in bounded chunks (found through idem_ix, never by scanning the keyspace).
-- Called by Rust until it returns 0; safe to call again after an interruption.
-- KEYS: the fifteen queue keys (common.lua), then KEYS[16] budget, KEYS[17] tokens_used,
--       KEYS[18] push, KEYS[19] push:log.
-- ARGV: how many idempotency records one call deletes at most.
-- Returns how many idempotency records are left (0: no key of the queue remains).
local limit = tonumber(ARGV[1])
-- The meta goes first: from this call on no publish is accepted, so no new record appears.
redis.call('UNLINK', K_META)
local records = redis.call('ZRANGE', K_IDEM_IX, 0, limit - 1)
if #records > 0 then
  local keys = {}
  for i, ik in ipairs(records) do keys[i] = K_IDEM .. ik end
  redis.call('UNLINK', unpack(keys))
  redis.call('ZREM', K_IDEM_IX, unpack(records))
end
local left = redis.call('ZCARD', K_IDEM_IX)
if left > 0 then return left end
redis.call('UNLINK', K_STREAM, K_LEASE, K_BACKOFF, K_DELAYED, K_DELAYED_M, K_DLQ, K_DLQ_IX, K_ERRORS, K_STATS,
  K_IDEM_IX, K_LARGE, K_MINUTES, KEYS[16], KEYS[17], KEYS[18], KEYS[19])
return 0
