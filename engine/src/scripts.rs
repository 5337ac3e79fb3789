//! The Lua scripts, compiled into the binary and loaded lazily: `redis::Script` sends EVALSHA and
//! falls back to loading the script on NOSCRIPT, so a restarted Redis (empty script cache) needs
//! nothing from us. `common.lua` is prepended to each (Lua scripts cannot include each other)
//! except `publish.lua` and `publish_one.lua`, the hot path, which stand alone with only the keys
//! they touch, and `lease.lua` and `flush.lua`, which need none of it. `budget.lua` (storage
//! leases) is prepended to the scripts that grant or check leases: publish, lease, flush, sweep;
//! `minutes.lua` (the last hour per minute) to every script that counts: those with common.lua,
//! publish and flush. `rate.lua` (token rate limits) comes first in every script a request is
//! charged to: the common.lua ones and both publish scripts (it takes its arguments off ARGV
//! before any other code reads ARGV); the rest of such a script runs as a function whose reply
//! `rate_end.lua` answers, so that an admitted charge can say how much it was granted.

use redis::Script;

macro_rules! with_budget {
    ($prelude:expr, $file:literal) => {
        Script::new(concat!(
            $prelude,
            include_str!("scripts/budget.lua"),
            "\n",
            include_str!(concat!("scripts/", $file))
        ))
    };
}

/// `rate.lua`, then `parts` as the body of a function that `rate_end.lua` closes and calls, so
/// that a charged call's reply can say how many requests it was granted (see rate.lua).
macro_rules! charged {
    ($($part:expr),+ $(,)?) => {
        Script::new(concat!(
            include_str!("scripts/rate.lua"),
            "\nlocal function script()\n",
            $($part, "\n",)+
            include_str!("scripts/rate_end.lua")
        ))
    };
}

macro_rules! script {
    ($file:literal) => {
        charged!(
            include_str!("scripts/minutes.lua"),
            include_str!("scripts/common.lua"),
            include_str!(concat!("scripts/", $file))
        )
    };
}

pub struct Scripts {
    pub publish: Script,
    pub publish_one: Script,
    pub lease: Script,
    pub flush: Script,
    pub consume: Script,
    pub ack: Script,
    pub nack: Script,
    pub bury: Script,
    pub release: Script,
    pub stats: Script,
    pub peek: Script,
    pub purge: Script,
    pub sweep: Script,
    pub dlq_list: Script,
    pub dlq_replay: Script,
    pub dlq_purge: Script,
    pub held_leases: Script,
    pub drop_queue: Script,
    pub extend: Script,
    pub browse: Script,
}

impl Scripts {
    pub fn new() -> Self {
        Self {
            publish: charged!(
                include_str!("scripts/minutes.lua"),
                include_str!("scripts/budget.lua"),
                include_str!("scripts/publish.lua")
            ),
            publish_one: charged!(include_str!("scripts/publish_one.lua")),
            lease: with_budget!("", "lease.lua"),
            flush: with_budget!(concat!(include_str!("scripts/minutes.lua"), "\n"), "flush.lua"),
            consume: script!("consume.lua"),
            ack: script!("ack.lua"),
            nack: script!("nack.lua"),
            bury: script!("bury.lua"),
            release: script!("release.lua"),
            stats: script!("stats.lua"),
            peek: script!("peek.lua"),
            purge: script!("purge.lua"),
            sweep: with_budget!(
                concat!(include_str!("scripts/minutes.lua"), "\n", include_str!("scripts/common.lua"), "\n"),
                "sweep.lua"
            ),
            dlq_list: script!("dlq_list.lua"),
            dlq_replay: script!("dlq_replay.lua"),
            dlq_purge: script!("dlq_purge.lua"),
            held_leases: script!("held_leases.lua"),
            drop_queue: script!("drop_queue.lua"),
            extend: script!("extend.lua"),
            browse: script!("browse.lua"),
        }
    }

    /// Every script with its name (its file's stem): for loading them all at start-up (`SCRIPT
    /// LOAD` catches a Lua syntax error before the first request does) and the script metrics.
    pub fn named(&self) -> [(&Script, &'static str); 20] {
        [
            (&self.publish, "publish"),
            (&self.publish_one, "publish_one"),
            (&self.lease, "lease"),
            (&self.flush, "flush"),
            (&self.consume, "consume"),
            (&self.ack, "ack"),
            (&self.nack, "nack"),
            (&self.bury, "bury"),
            (&self.release, "release"),
            (&self.stats, "stats"),
            (&self.peek, "peek"),
            (&self.purge, "purge"),
            (&self.sweep, "sweep"),
            (&self.dlq_list, "dlq_list"),
            (&self.dlq_replay, "dlq_replay"),
            (&self.dlq_purge, "dlq_purge"),
            (&self.held_leases, "held_leases"),
            (&self.drop_queue, "drop_queue"),
            (&self.extend, "extend"),
            (&self.browse, "browse"),
        ]
    }

    /// Whether `script` writes what a client's 2xx vouches for (a message, a lease, an ack, a
    /// removal), so that with replica acks its answer waits for the replicas. The storage leases,
    /// the ledger's flush and the sweeper answer no client; the reads write only rate budgets.
    pub fn acknowledged(&self, script: &Script) -> bool {
        const WRITES: &[&str] = &[
            "publish",
            "publish_one",
            "consume",
            "ack",
            "nack",
            "bury",
            "release",
            "extend",
            "purge",
            "dlq_replay",
            "dlq_purge",
            "drop_queue",
        ];
        WRITES.contains(&self.name_of(script))
    }

    /// The name of one of these scripts, for the script metrics.
    pub fn name_of(&self, script: &Script) -> &'static str {
        self.named().iter().find(|(s, _)| std::ptr::eq(*s, script)).map_or("other", |(_, name)| name)
    }
}

impl Default for Scripts {
    fn default() -> Self {
        Self::new()
    }
}
