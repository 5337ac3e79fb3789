end
-- rate_end.lua: closes the function scripts.rs opens after rate.lua around a script's own text,
-- and answers its reply through rate.lua's rate_reply.
return rate_reply(script())
