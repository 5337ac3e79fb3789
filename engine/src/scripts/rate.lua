-- rate.lua: prepended to every script a request may be charged to (scripts.rs): the token rate
-- limits, held here for the whole deployment rather than per replica (engine/src/rate.rs).
--
-- A charged call passes the token's bucket as its LAST key (NS:rl:{q:ID}:<token>:<class>, the
-- queue's hash slot) and opens ARGV with five values: 'rl', the budget (requests), the interval
-- (ms per request: the budget refills one request per interval), now_ms and the claim (how many
-- requests the calling replica asks for at once, 1 or more: engine/src/slices.rs). This prelude takes
-- those five off, so each script reads its own ARGV from 1 whether it is charged or not; an
-- uncharged call (the sweeper, push dispatchers, the console, a request the replica admitted from
-- a slice it already holds) passes neither.
--
-- The clock is the caller's now_ms, as for every other deadline in these scripts (they never read
-- the clock): no TIME command on the hot path, and replicas are NTP-synchronised, so a skew of
-- s ms moves a bucket's edge by s ms (at most s extra requests in the 1-per-ms class).
--
-- GCRA: the bucket holds the theoretical arrival time (TAT, ms); each admitted request moves it
-- one interval on from max(TAT, now). A request is admitted while the new TAT lies at most
-- budget x interval ahead of now: `budget` requests at once from a full bucket, then one per
-- interval. A claim of n takes up to n requests at once (at least 1, or the request is refused)
-- and the reply says how many it got. The key expires when the bucket is full again, so idle
-- buckets cost nothing.
local ARGV = ARGV
local RATE = nil
if ARGV[1] == 'rl' then
  RATE = { KEYS[#KEYS], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]) }
  ARGV = { unpack(ARGV, 6) }
end
local GRANTED = nil

-- Each charged script's first statement: `local refused = rate_refused() if refused then return
-- refused end`, so a refused request changes nothing but is answered
-- {'rate_limited', ms until one is admitted, budget, window ms}.
local function rate_refused()
  if not RATE then return nil end
  local key, budget, interval, now, claim = RATE[1], RATE[2], RATE[3], RATE[4], RATE[5]
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  local room = math.floor((now + budget * interval - tat) / interval)
  if room < 1 then return { 'rate_limited', tat + interval - budget * interval - now, budget, budget * interval } end
  GRANTED = math.min(claim, room)
  tat = tat + GRANTED * interval
  redis.call('SET', key, tat, 'PX', tat - now)
  return nil
end

-- Every script that has this prelude runs as a function whose reply goes through here
-- (scripts.rs): a charged call that was admitted answers {'granted', n, reply}, so the replica
-- knows how many requests it now holds (engine/src/slices.rs); every other call answers the reply.
local function rate_reply(reply)
  if GRANTED then return { 'granted', GRANTED, reply } end
  return reply
end
