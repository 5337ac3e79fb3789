//! The rows that put a peer beside AQS, from figures measured in the same run: the peer is the
//! baseline, the ratio `aqs / peer`. Targets (each peer's [`Targets`]): AQS at least as fast on
//! consume + ack, on batched publish by the peer's factor, an end-to-end p99 no worse and, where
//! the peer names it, an end-to-end p50 no worse; single publish and memory are context.

use super::SideFigures;
use crate::scale::Scale;
use crate::scenario_result::{ScenarioResult, Target};

/// A peer as the rows name it.
pub struct Peer<'a> {
    /// `rabbitmq` or `jetstream`: the suffix of its rows' names.
    pub key: &'a str,
    /// Short, for the baseline column, e.g. `rabbitmq quorum queue`.
    pub label: &'a str,
    /// Its version and durability settings, printed with the first row.
    pub settings: String,
    pub targets: Targets,
}

/// What AQS is held to beside a peer, beyond consume + ack ≥ 1× and end-to-end p99 ≤ 1×.
#[derive(Debug, Clone, Copy)]
pub struct Targets {
    /// Batched publish at least this many times the peer's.
    pub publish_batch: f64,
    /// An end-to-end p50 no higher than the peer's.
    pub end_to_end_p50: bool,
}

/// RabbitMQ: level on batched publish.
pub const RABBITMQ: Targets = Targets { publish_batch: 1.0, end_to_end_p50: false };
/// JetStream: ahead by a tenth on batched publish, and a p50 as low as its own.
pub const JETSTREAM: Targets = Targets { publish_batch: 1.1, end_to_end_p50: true };

/// AQS's durability, printed beside each peer's.
pub const AQS_SETTINGS: &str =
    "AQS: Redis AOF appendfsync everysec (acknowledged once written to the AOF; fsync each second)";

pub fn rows(peer: &Peer, aqs: &SideFigures, theirs: &SideFigures, s: &Scale) -> Vec<ScenarioResult> {
    let key = peer.key;
    let single = format!("{} publishers, 1 per confirm", s.single_connections);
    let batch = format!("{} publishers, 100 per confirm", s.batch_connections);
    let consume = format!("{} consumers, {} producers, depth flat", s.consumers, s.producers);
    let mut rows = vec![
        rate_row(&format!("publish_single_vs_{key}"), aqs.publish_single, theirs.publish_single, peer, &single)
            .note(format!("{}; {AQS_SETTINGS}; for context only", peer.settings)),
        rate_row(&format!("publish_batch_100_vs_{key}"), aqs.publish_batch, theirs.publish_batch, peer, &batch)
            .target(Target::RatioAtLeast(peer.targets.publish_batch)),
        rate_row(&format!("consume_ack_100_vs_{key}"), aqs.consume_ack, theirs.consume_ack, peer, &consume)
            .target(Target::RatioAtLeast(1.0)),
    ];

    let mut e2e = figure_row(
        &format!("end_to_end_p99_vs_{key}"),
        aqs.end_to_end.map(|e| e.p99_ms),
        "ms (p99)",
        &format!("{} at half its own peak", peer.label),
        theirs.end_to_end.map(|e| e.p99_ms),
    )
    .target(Target::RatioAtMost(1.0));
    if let Some(a) = aqs.end_to_end {
        e2e = e2e.latency(Some(a.p50_ms), Some(a.p99_ms));
    }
    let side = |name: &str, e: Option<super::EndToEnd>| match e {
        Some(e) => format!(
            "{name} at {:.0}/s: p50 {:.2} ms, p99 {:.2} ms, publish confirmed p50 {} ({} sent, {} received)",
            e.rate,
            e.p50_ms,
            e.p99_ms,
            e.confirmed_p50_ms.map_or("-".into(), |ms| format!("{ms:.2} ms")),
            e.sent,
            e.received
        ),
        None => format!("{name}: no figure"),
    };
    rows.push(e2e.note(format!(
        "open loop, publish → consumer receipt, from the scheduled time; {}; {}",
        side("AQS", aqs.end_to_end),
        side(key, theirs.end_to_end)
    )));
    if peer.targets.end_to_end_p50 {
        rows.push(
            figure_row(
                &format!("end_to_end_p50_vs_{key}"),
                aqs.end_to_end.map(|e| e.p50_ms),
                "ms (p50)",
                &format!("{} at half its own peak", peer.label),
                theirs.end_to_end.map(|e| e.p50_ms),
            )
            .target(Target::RatioAtMost(1.0))
            .note("the same runs as the p99 row"),
        );
    }

    if let Some(a) = aqs.end_to_end {
        rows.push(
            figure_row(
                &format!("end_to_end_p99_same_rate_vs_{key}"),
                Some(a.p99_ms),
                "ms (p99)",
                &format!("{} at AQS's rate", peer.label),
                theirs.end_to_end_at_aqs_rate.map(|e| e.p99_ms),
            )
            .latency(Some(a.p50_ms), Some(a.p99_ms))
            .note(format!(
                "both sides offered the same load; for context; {}",
                side(key, theirs.end_to_end_at_aqs_rate)
            )),
        );
    }

    rows.push(
        figure_row(
            &format!("memory_per_message_vs_{key}"),
            aqs.memory_per_message,
            "B/msg",
            &format!("{} RSS", peer.label),
            theirs.memory_per_message,
        )
        .note("payload included; AQS: Redis used_memory delta; the peer: its server's RSS delta; for context only"),
    );
    rows
}

fn rate_row(name: &str, aqs: Option<f64>, theirs: Option<f64>, peer: &Peer, how: &str) -> ScenarioResult {
    figure_row(name, aqs, "msgs/s", &format!("{} ({how})", peer.label), theirs)
}

/// A row whose AQS figure may be missing (its scenario failed or was not run).
fn figure_row(name: &str, aqs: Option<f64>, unit: &str, baseline: &str, theirs: Option<f64>) -> ScenarioResult {
    let mut row = ScenarioResult::new(name, aqs.unwrap_or_default(), unit).compared(baseline, theirs);
    if aqs.is_none() {
        row.aqs = None;
        row.ratio = None;
    }
    row
}

/// A row per peer scenario that failed, so the table shows the error and the run's check fails.
pub fn error_rows(key: &str, errors: &[(String, anyhow::Error)]) -> Vec<ScenarioResult> {
    errors.iter().map(|(scenario, err)| ScenarioResult::failed(&format!("{key}_{scenario}"), "-", err)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::EndToEnd;

    fn peer() -> Peer<'static> {
        Peer { key: "rabbitmq", label: "rabbitmq quorum queue", settings: "RabbitMQ 3.10".into(), targets: RABBITMQ }
    }

    fn e2e(p99_ms: f64) -> EndToEnd {
        EndToEnd { rate: 1000.0, p50_ms: 1.0, p99_ms, confirmed_p50_ms: None, sent: 10, received: 10 }
    }

    #[test]
    fn rates_are_aqs_over_peer_and_latency_lower_is_better() {
        let aqs = SideFigures {
            publish_single: Some(40_000.0),
            publish_batch: Some(150_000.0),
            consume_ack: Some(45_000.0),
            end_to_end: Some(e2e(6.0)),
            end_to_end_at_aqs_rate: None,
            memory_per_message: Some(170.0),
        };
        let theirs = SideFigures {
            publish_single: Some(20_000.0),
            publish_batch: Some(50_000.0),
            consume_ack: Some(60_000.0),
            end_to_end: Some(e2e(3.0)),
            end_to_end_at_aqs_rate: Some(e2e(2.0)),
            memory_per_message: Some(340.0),
        };
        let rows = rows(&peer(), &aqs, &theirs, &Scale::full());
        let by = |name: &str| rows.iter().find(|r| r.scenario == name).unwrap();
        assert_eq!(by("publish_batch_100_vs_rabbitmq").ratio, Some(3.0));
        assert_eq!(by("publish_batch_100_vs_rabbitmq").met(), Some(true));
        assert_eq!(by("consume_ack_100_vs_rabbitmq").ratio, Some(0.75));
        assert_eq!(by("consume_ack_100_vs_rabbitmq").met(), Some(false));
        let latency = by("end_to_end_p99_vs_rabbitmq");
        assert_eq!((latency.aqs, latency.baseline_value, latency.ratio), (Some(6.0), Some(3.0), Some(2.0)));
        assert_eq!(latency.met(), Some(false));
        assert_eq!(by("end_to_end_p99_same_rate_vs_rabbitmq").ratio, Some(3.0));
        assert_eq!(by("end_to_end_p99_same_rate_vs_rabbitmq").met(), None);
        assert_eq!(by("memory_per_message_vs_rabbitmq").ratio, Some(0.5));
        assert_eq!(by("publish_single_vs_rabbitmq").met(), None);
        assert!(rows.iter().all(|r| r.scenario != "end_to_end_p50_vs_rabbitmq"), "RabbitMQ's p50 is no target");

        // JetStream: batched publish must lead by a tenth, and the p50 is held too.
        let jetstream = Peer { key: "jetstream", label: "jetstream", settings: String::new(), targets: JETSTREAM };
        let theirs = SideFigures { publish_batch: Some(140_000.0), end_to_end: Some(e2e(3.0)), ..theirs };
        let rows = super::rows(&jetstream, &aqs, &theirs, &Scale::full());
        let by = |name: &str| rows.iter().find(|r| r.scenario == name).unwrap();
        let batch = by("publish_batch_100_vs_jetstream");
        assert!(batch.ratio.unwrap() > 1.0 && batch.met() == Some(false), "{:?}", batch.ratio);
        let p50 = by("end_to_end_p50_vs_jetstream");
        assert_eq!((p50.aqs, p50.baseline_value, p50.ratio, p50.met()), (Some(1.0), Some(1.0), Some(1.0), Some(true)));
    }

    #[test]
    fn a_missing_figure_gives_no_ratio() {
        let aqs = SideFigures { publish_batch: Some(1.0), ..SideFigures::default() };
        let rows = rows(&peer(), &aqs, &SideFigures::default(), &Scale::full());
        let batch = rows.iter().find(|r| r.scenario == "publish_batch_100_vs_rabbitmq").unwrap();
        assert_eq!((batch.aqs, batch.ratio, batch.met()), (Some(1.0), None, None));
        let single = rows.iter().find(|r| r.scenario == "publish_single_vs_rabbitmq").unwrap();
        assert_eq!((single.aqs, single.ratio), (None, None));
    }

    #[test]
    fn failures_become_error_rows() {
        let rows = error_rows("jetstream", &[("consume_ack_100".into(), anyhow::anyhow!("pull: timed out"))]);
        assert_eq!(rows[0].scenario, "jetstream_consume_ack_100");
        assert_eq!(rows[0].error.as_deref(), Some("pull: timed out"));
    }
}
