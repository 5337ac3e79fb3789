-- Writes a token record unless the token was revoked: a revoked token's record is a tombstone
-- (`revoke_token.lua`), and a mint's write that lands after the revocation must not bring the
-- token back to life.
-- KEYS[1]: the token record (`NS:token:<sha256>`)
-- ARGV: field/value pairs (every field of the record)
-- returns: 1 written, 0 revoked
if redis.call('HEXISTS', KEYS[1], 'revoked') == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
