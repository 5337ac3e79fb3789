-- lease.lua: grows this replica's storage lease (budget.lua) so that a single publish of `need`
-- bytes fits; the replica has already given back the part it had not drawn (`held` is what it
-- keeps: exactly what it drew since its last flush).
-- KEYS[1] meta, KEYS[2] stats, KEYS[3] budget.
-- ARGV: now_ms, replica id, held, need.
-- Returns the new lease in bytes (held + need at least; more while the queue is far from its limit),
--      or 'storage' (the lease is then `held`),
--      or 'no_queue'.
local K_META, K_STATS, K_BUDGET = KEYS[1], KEYS[2], KEYS[3]
local now, me, held, need = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local limit = redis.call('HGET', K_META, 'storage_limit')
if not limit then return 'no_queue' end
limit = tonumber(limit)
local room = room_for(K_BUDGET, K_STATS, now, me, held, limit)
if room < need then
  set_lease(K_BUDGET, me, held, now)
  return 'storage'
end
-- Near the limit, only what this publish needs: an undrawn lease there could refuse another
-- replica's publish that fits.
local size = lease_size(limit, need)
local lease = held + need
if room - need >= 2 * size then lease = held + math.max(need, size) end
set_lease(K_BUDGET, me, lease, now)
return lease
