-- count.lua: adds the publish counts a process gathered (engine/publish_counts.rs) to today's
-- counters, unless the queue is gone meanwhile (a deleted queue's stats are not brought back).
-- KEYS[1] meta, KEYS[2] stats (as in common.lua).
-- ARGV: pairs of utc_day and count.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 1, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[2], 'pub:' .. ARGV[i], ARGV[i + 1])
end
return 1
