-- rate.lua: prepended to every script a request may be charged to (scripts.rs): the token rate
-- limits, held here for the whole deployment rather than per replica (engine/rate.rs).
--
-- A charged call passes the token's bucket as its LAST key (NS:rl:{q:ID}:<token>:<class>, the
-- queue's hash slot) and opens ARGV with four values: 'rl', the budget (requests), the interval
-- (ms per request: the budget refills one request per interval) and now_ms. This prelude takes
-- those four off, so each script reads its own ARGV from 1 whether it is charged or not; an
-- uncharged call (the sweeper, push dispatchers, the console) passes neither.
--
-- The clock is the caller's now_ms, as for every other deadline in these scripts (they never read
-- the clock): no TIME command on the hot path, and replicas are NTP-synchronised, so a skew of
-- s ms moves a bucket's edge by s ms (at most s extra requests in the 1-per-ms class).
--
-- GCRA: the bucket holds the theoretical arrival time (TAT, ms); each admitted request moves it
-- one interval on from max(TAT, now). A request is admitted while the new TAT lies at most
-- budget x interval ahead of now: `budget` requests at once from a full bucket, then one per
-- interval. The key expires when the bucket is full again, so idle buckets cost nothing.
local ARGV = ARGV
local RATE = nil
if ARGV[1] == 'rl' then
  RATE = { KEYS[#KEYS], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]) }
  ARGV = { unpack(ARGV, 5) }
end

-- Each charged script's first statement: `local refused = rate_refused() if refused then return
-- refused end`, so a refused request changes nothing but is answered
-- {'rate_limited', ms until one is admitted, budget, window ms}.
local function rate_refused()
  if not RATE then return nil end
  local key, budget, interval, now = RATE[1], RATE[2], RATE[3], RATE[4]
  local tat = tonumber(redis.call('GET', key) or '0')
  if tat < now then tat = now end
  tat = tat + interval
  local wait = tat - budget * interval - now
  if wait > 0 then return { 'rate_limited', wait, budget, budget * interval } end
  redis.call('SET', key, tat, 'PX', tat - now)
  return nil
end
