-- budget.lua: storage budget leases, prepended by scripts.rs to the scripts that grant, check or
-- settle them (lease.lua, flush.lua, publish.lua, sweep.lua).
--
-- A single publish must not pay for a write of the queue's stored bytes (with its AOF record, a
-- quarter of the script's Redis time), yet the storage limit stays exact. So each replica leases a
-- slice of the queue's free storage, draws its single publishes from it in process
-- (engine/src/ledger.rs), and adds what it drew to `stats.bytes` at the next flush (flush.lua). The
-- budget hash holds every live lease, replica id -> 'bytes:expires_ms'. Admission everywhere is
--   bytes + every live lease + what is being added <= storage_limit
-- and `bytes` + Σ leases is never less than what is stored, as a replica draws only within its
-- lease and gives back (shrinks its lease) only what it has not drawn.
--
-- A replica short of lease gives back its undrawn rest before asking for more, so its refusal is
-- judged on what is stored. Near the limit a grant is only what the publish needs, so undrawn
-- leases there are rare and short-lived (drawn, or given back when idle): one replica's lease
-- seldom refuses another's publish that would fit. When the limit is lowered under what is
-- stored and leased, the next flush (flush.lua) stops the replica drawing on its lease.
--
-- A replica that stops renewing (a crash) leaves a lease that expires. It is then counted as
-- stored bytes in full, since part of it may be: never less than what is stored, at worst more by
-- the undrawn rest, which sweep.lua forgets once the queue holds nothing.
local LEASE_TTL_MS = 30000

-- Bytes the live leases hold, except `me`'s; expired leases become stored bytes (see above).
local function leases_held(k_budget, k_stats, now, me)
  local held, all = 0, redis.call('HGETALL', k_budget)
  for i = 1, #all, 2 do
    local bytes, expires = string.match(all[i + 1], '^(%d+):(%d+)$')
    if tonumber(expires) < now then
      redis.call('HDEL', k_budget, all[i])
      redis.call('HINCRBY', k_stats, 'bytes', bytes)
    elseif all[i] ~= me then
      held = held + tonumber(bytes)
    end
  end
  return held
end

local function set_lease(k_budget, me, bytes, now)
  if bytes > 0 then
    redis.call('HSET', k_budget, me, bytes .. ':' .. (now + LEASE_TTL_MS))
  else
    redis.call('HDEL', k_budget, me)
  end
end

-- What one lease grant aims at: a sixteenth of the limit, at most 1 MiB (a few hundred
-- milliseconds of a fast publisher's small messages), or `want` when more, up to an eighth.
local function lease_size(limit, want)
  return math.max(math.min(1048576, math.floor(limit / 16)), math.min(want, math.floor(limit / 8)))
end

-- Free storage for `me`, whose lease is taken to be `mine`.
local function room_for(k_budget, k_stats, now, me, mine, limit)
  local bytes = tonumber(redis.call('HGET', k_stats, 'bytes') or '0')
  return limit - bytes - leases_held(k_budget, k_stats, now, me) - mine
end
