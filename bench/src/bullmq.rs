//! BullMQ's results, read from the JSON lines `bench/peers/bullmq/bench.mjs` prints
//! (`{"peer":"bullmq","scenario":"add_bulk_100","messages":N,"seconds":s,"msgs_per_s":r}`);
//! `infra/bench` runs it on the same Redis before the AQS scenarios.

use serde::Deserialize;
use std::collections::HashMap;

#[derive(Debug, Clone, Default)]
pub struct BullmqResults {
    /// msgs/s per scenario: `add`, `add_bulk_100`, `worker_100`.
    pub msgs_per_s: HashMap<String, f64>,
}

#[derive(Deserialize)]
struct Line {
    peer: String,
    scenario: String,
    msgs_per_s: f64,
}

impl BullmqResults {
    /// Reads every line that is a BullMQ result and skips the rest (npm noise, warnings).
    pub fn parse(output: &str) -> Self {
        let msgs_per_s = output
            .lines()
            .filter_map(|l| serde_json::from_str::<Line>(l.trim()).ok())
            .filter(|l| l.peer == "bullmq")
            .map(|l| (l.scenario, l.msgs_per_s))
            .collect();
        Self { msgs_per_s }
    }

    pub fn get(&self, scenario: &str) -> Option<f64> {
        self.msgs_per_s.get(scenario).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bench_mjs_lines() {
        let out = "\n> npm warn something\n\
            {\"peer\":\"bullmq\",\"scenario\":\"add\",\"messages\":30000,\"seconds\":0.73,\"msgs_per_s\":41096}\n\
            {\"peer\":\"bullmq\",\"scenario\":\"add_bulk_100\",\"messages\":30000,\"seconds\":0.93,\"msgs_per_s\":32258}\n\
            {\"peer\":\"bullmq\",\"scenario\":\"worker_100\",\"messages\":60000,\"seconds\":2.3,\"msgs_per_s\":26087}\n";
        let r = BullmqResults::parse(out);
        assert_eq!(r.get("add_bulk_100"), Some(32258.0));
        assert_eq!(r.get("worker_100"), Some(26087.0));
        assert_eq!(r.get("nope"), None);
    }
}
