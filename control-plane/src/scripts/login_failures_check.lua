-- Log-in throttling: how many failures KEYS[1] (a sorted set of failure times, ms) holds within
-- the last ARGV[1] ms, and, when that is at least ARGV[2], in how many ms the oldest failure that
-- keeps it there leaves the window. Returns {count, retry_ms} (retry_ms 0 when under the limit).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local n = redis.call('ZCARD', KEYS[1])
if n < limit then
  return {n, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], n - limit, n - limit, 'WITHSCORES')
return {n, math.max(1, tonumber(oldest[2]) + window - now)}
