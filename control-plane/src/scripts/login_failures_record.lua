-- Log-in throttling: records one failure now in KEYS[1] (a sorted set of failure times, ms),
-- keeps only the last ARGV[2] of them (all a check needs, so an attack cannot grow the key) and
-- lets the key expire ARGV[1] ms after the last failure. Returns the failures in the window.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local cap = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, t[1] .. '.' .. t[2] .. '.' .. redis.call('ZCARD', KEYS[1]))
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(cap + 1))
redis.call('PEXPIRE', KEYS[1], window)
return redis.call('ZCARD', KEYS[1])
