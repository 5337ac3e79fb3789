-- drop_queue.lua: deletes a deleted queue's storage: every message and every key of the queue, the
-- idempotency records in bounded chunks (found through idem_ix, never by scanning the keyspace).
-- Called by Rust until it returns 0; safe to call again after an interruption.
-- KEYS: the standard queue keys (common.lua), then every key the queue stores (core::keys'
--       QueueKeys::stored, the one inventory): what is unlinked once no idempotency record is left.
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
redis.call('UNLINK', unpack(KEYS, STANDARD_KEYS + 1))
return 0
