//! The Lua scripts, compiled into the binary and loaded lazily: `redis::Script` sends EVALSHA and
//! falls back to loading the script on NOSCRIPT, so a restarted Redis (empty script cache) needs
//! nothing from us. `common.lua` is prepended to each (Lua scripts cannot include each other)
//! except `publish.lua` and `publish_one.lua`, the hot path, which stand alone with only the keys
//! they touch, and `lease.lua` and `flush.lua`, which need none of it. `budget.lua` (storage
//! leases) is prepended to the scripts that grant or check leases: publish, lease, flush, sweep;
//! `minutes.lua` (the last hour per minute) to every script that counts: those with common.lua,
//! publish and flush. `numbers.lua` (`num`: text to a number once per distinct text) to the
//! scripts that read numbers per message in a batch: the chargeable common.lua ones and publish.
//! `rate.lua` (token rate limits) comes first in every script a request is
//! charged to: the common.lua ones and both publish scripts (it takes its arguments off ARGV
//! before any other code reads ARGV); the rest of such a script runs as a function whose reply
//! goes through rate.lua's `rate_reply` ([`charged!`] writes both ends of that function), so that
//! an admitted charge can say how much it was granted.
//!
//! A prelude's locals (`K_META`, `IDEM_MS`, …) are what the scripts after it read: a test checks
//! that every such name a script uses is declared by its own text or its preludes, because an
//! undeclared one would only fail when the script runs (a global lookup Redis refuses).
//!
//! Every script is named once, in the table at the bottom ([`scripts!`]): the `Scripts` struct,
//! loading them all, the script metrics' labels and which writes wait for replica acks all come
//! from it. A new operation is one `.lua` file, one line there and its method on `Engine`.

use redis::Script;

macro_rules! with_budget {
    ($prelude:expr, $file:literal) => {
        concat!($prelude, include_str!("scripts/budget.lua"), "\n", include_str!(concat!("scripts/", $file)))
    };
}

/// `rate.lua`, then `parts` as the body of a function whose reply goes through `rate_reply`, so
/// that a charged call's reply can say how many requests it was granted (see rate.lua).
macro_rules! charged {
    ($($part:expr),+ $(,)?) => {
        concat!(
            include_str!("scripts/rate.lua"),
            "\nlocal function script()\n",
            $($part, "\n",)+
            "end\nreturn rate_reply(script())\n"
        )
    };
}

/// A queue script: the standard keys and helpers (`common.lua`), chargeable.
macro_rules! script {
    ($file:literal) => {
        charged!(
            include_str!("scripts/minutes.lua"),
            include_str!("scripts/numbers.lua"),
            include_str!("scripts/common.lua"),
            include_str!(concat!("scripts/", $file))
        )
    };
}

/// Builds `Scripts` from one table of `name: acknowledged, source;` (the name is the file's stem
/// and the metrics' label; `acknowledged`: whether it writes what a client's 2xx vouches for).
macro_rules! scripts {
    ($($name:ident: $acknowledged:literal, $source:expr;)+) => {
        pub struct Scripts {
            $(pub $name: Script,)+
        }

        impl Scripts {
            /// Every script's name, in the table's order.
            pub const NAMES: [&'static str; [$(stringify!($name)),+].len()] = [$(stringify!($name)),+];

            /// Every script's whole text as sent to Redis, in the table's order.
            #[cfg(test)]
            const SOURCES: [&'static str; Self::NAMES.len()] = [$($source),+];

            pub fn new() -> Self {
                Self { $($name: Script::new($source),)+ }
            }

            /// Every script with its name and whether it is acknowledged.
            fn table(&self) -> [(&Script, &'static str, bool); Self::NAMES.len()] {
                [$((&self.$name, stringify!($name), $acknowledged),)+]
            }
        }
    };
}

scripts! {
    publish: true, charged!(
        include_str!("scripts/minutes.lua"),
        include_str!("scripts/budget.lua"),
        include_str!("scripts/numbers.lua"),
        include_str!("scripts/publish.lua")
    );
    publish_one: true, charged!(include_str!("scripts/publish_one.lua"));
    lease: false, with_budget!("", "lease.lua");
    flush: false, with_budget!(concat!(include_str!("scripts/minutes.lua"), "\n"), "flush.lua");
    consume: true, script!("consume.lua");
    ack: true, script!("ack.lua");
    nack: true, script!("nack.lua");
    bury: true, script!("bury.lua");
    release: true, script!("release.lua");
    stats: false, script!("stats.lua");
    peek: false, script!("peek.lua");
    purge: true, script!("purge.lua");
    sweep: false, with_budget!(
        concat!(include_str!("scripts/minutes.lua"), "\n", include_str!("scripts/common.lua"), "\n"),
        "sweep.lua"
    );
    dlq_list: false, script!("dlq_list.lua");
    dlq_replay: true, script!("dlq_replay.lua");
    dlq_purge: true, script!("dlq_purge.lua");
    held_leases: false, script!("held_leases.lua");
    drop_queue: true, script!("drop_queue.lua");
    extend: true, script!("extend.lua");
    browse: false, script!("browse.lua");
    delete_message: true, script!("delete_message.lua");
}

impl Scripts {
    /// Every script with its name (its file's stem): for loading them all at start-up (`SCRIPT
    /// LOAD` catches a Lua syntax error before the first request does).
    pub fn named(&self) -> impl Iterator<Item = (&Script, &'static str)> {
        self.table().into_iter().map(|(script, name, _)| (script, name))
    }

    /// Whether `script` writes what a client's 2xx vouches for (a message, a lease, an ack, a
    /// removal), so that with replica acks its answer waits for the replicas. The storage leases,
    /// the ledger's flush and the sweeper answer no client; the reads write only rate budgets.
    pub fn acknowledged(&self, script: &Script) -> bool {
        self.table().iter().any(|(s, _, acknowledged)| *acknowledged && std::ptr::eq(*s, script))
    }

    /// The name of one of these scripts, for the script metrics.
    pub fn name_of(&self, script: &Script) -> &'static str {
        self.table().iter().find(|(s, _, _)| std::ptr::eq(*s, script)).map_or("other", |(_, name, _)| name)
    }
}

impl Default for Scripts {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Scripts;

    /// The upper-case names (`K_STREAM`, `IDEM_MS`) a Lua text uses, outside strings and comments,
    /// each with whether its first use is a `local` declaration.
    fn constants(source: &str) -> Vec<(String, bool)> {
        let mut seen: Vec<(String, bool)> = Vec::new();
        for line in source.lines() {
            let code = without_strings_and_comments(line);
            let declares = code.trim_start().starts_with("local ");
            for word in code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                let constant = word.len() > 1
                    && word.starts_with(|c: char| c.is_ascii_uppercase())
                    && word.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                if constant && !matches!(word, "KEYS" | "ARGV") && !seen.iter().any(|(name, _)| name == word) {
                    seen.push((word.to_owned(), declares));
                }
            }
        }
        seen
    }

    fn without_strings_and_comments(line: &str) -> String {
        let mut code = String::new();
        let mut quote = None;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) if c == '\\' => {
                    chars.next();
                }
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == '-' && chars.peek() == Some(&'-') => break,
                None => code.push(c),
            }
        }
        code
    }

    #[test]
    fn every_constant_a_script_reads_is_declared_before_it_by_the_script_or_its_preludes() {
        for (name, source) in Scripts::NAMES.iter().zip(Scripts::SOURCES) {
            for (constant, declared) in constants(source) {
                assert!(declared, "{name}: {constant} is used before (or without) a `local` declaring it");
            }
        }
        // The check itself finds an undeclared one, and ignores strings and comments.
        assert_eq!(
            constants("local K_A = 1\nreturn K_A + K_B -- K_C\nredis.call('SET')"),
            [("K_A".to_owned(), true), ("K_B".to_owned(), false)]
        );
    }

    #[test]
    fn every_script_is_named_by_its_file_and_found_by_its_name() {
        let scripts = Scripts::new();
        assert_eq!(scripts.named().count(), Scripts::NAMES.len());
        for (script, name) in scripts.named() {
            assert_eq!(scripts.name_of(script), name);
        }
        assert!(scripts.acknowledged(&scripts.publish_one) && !scripts.acknowledged(&scripts.sweep));
    }
}
