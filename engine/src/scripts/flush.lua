-- flush.lua: writes what a replica published since its last flush (engine/src/ledger.rs): the bytes
-- it drew from its storage lease become stored bytes, today's publish counts are added, and the
-- lease is renewed at what remains, topped up while the replica is publishing or given back
-- when it is idle (budget.lua). Nothing is written for a queue deleted meanwhile.
-- KEYS[1] meta, KEYS[2] stats, KEYS[3] budget, KEYS[4] minutes (minutes.lua is prepended: the
--       publishes flushed count in the minute of the flush).
-- ARGV: now_ms, replica id, drawn bytes (negative when a drawn publish was refused after its
--       bytes were flushed), lease kept, bytes wanted before the next flush (0 = no top-up),
--       then pairs of utc_day and count.
-- Returns {the lease recorded in bytes, 1 when stored bytes and leases exceed the storage limit
-- (it was lowered: the replica then stops drawing on its lease, and the next flush gives back
-- the undrawn rest), else 0}, or -1 when the queue is gone.
local K_META, K_STATS, K_BUDGET = KEYS[1], KEYS[2], KEYS[3]
local now, me, drawn, lease, want = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local limit = redis.call('HGET', K_META, 'storage_limit')
if not limit then return -1 end
if drawn ~= 0 then redis.call('HINCRBY', K_STATS, 'bytes', drawn) end
local flushed = 0
for i = 6, #ARGV, 2 do
  if ARGV[i + 1] ~= '0' then redis.call('HINCRBY', K_STATS, 'pub:' .. ARGV[i], ARGV[i + 1]) end
  flushed = flushed + tonumber(ARGV[i + 1])
end
count_minute(KEYS[4], now, flushed, 0, 0, 0)
limit = tonumber(limit)
local room = room_for(K_BUDGET, K_STATS, now, me, lease, limit)
if want > 0 then
  local target = lease_size(limit, want)
  -- Not near the limit (see lease.lua): there, publishes lease what each needs.
  if lease < target and room >= 2 * target then lease = target end
end
set_lease(K_BUDGET, me, lease, now)
return { lease, room < 0 and 1 or 0 }
