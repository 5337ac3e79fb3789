-- Replaces a token record with a tombstone, {revoked = 1}, kept for ARGV[1] seconds: the data
-- plane reads it as no token (it has no record version), and put_token.lua skips it. An existing
-- tombstone is left as it is, its expiry included.
-- KEYS[1]: the token record (`NS:token:<sha256>`)
-- returns: 1 revoked now, 0 already revoked
if redis.call('HEXISTS', KEYS[1], 'revoked') == 1 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'revoked', 1)
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
