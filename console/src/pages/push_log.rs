//! The Push tab's delivery log: each of the last outcomes the data plane recorded (when, which
//! message or batch, the handler's status, the latency, what became of it and why), as the table
//! rows of `push.html`.

use crate::format;
use aqs_control_plane::push::PushDelivery;
use aqs_core::push::DeliveryOutcome;
use chrono::DateTime;

pub(crate) struct DeliveryRow {
    pub(crate) at: format::Instant,
    pub(crate) message_id: String,
    /// More than one in batch mode.
    pub(crate) messages: u32,
    /// "200", or "No answer" (timeout, connection failure).
    pub(crate) status: String,
    pub(crate) latency: String,
    pub(crate) outcome: &'static str,
    /// The `badge` modifier of the outcome: `ok`, `warn` or `bad`.
    pub(crate) tone: &'static str,
    pub(crate) detail: String,
    /// Where the request went: after a URL change, the old URL's failures are told apart.
    pub(crate) handler_url: String,
}

/// 87 → "87 ms", 1234 → "1.2 s".
fn latency(ms: u64) -> String {
    if ms < 1000 { format!("{ms} ms") } else { format!("{:.1} s", ms as f64 / 1000.0) }
}

fn outcome(outcome: DeliveryOutcome) -> (&'static str, &'static str) {
    match outcome {
        DeliveryOutcome::Acked => ("Acknowledged", "ok"),
        DeliveryOutcome::Retried => ("Retried", "warn"),
        DeliveryOutcome::PartiallyRetried => ("Partly retried", "warn"),
        DeliveryOutcome::LeaseLost => ("Lease ran out", "warn"),
        DeliveryOutcome::DeadLettered => ("Dead-lettered", "bad"),
    }
}

impl From<PushDelivery> for DeliveryRow {
    fn from(d: PushDelivery) -> Self {
        let at = DateTime::parse_from_rfc3339(&d.at)
            .map(|at| format::instant(at.timestamp_millis().max(0) as u64))
            .unwrap_or_else(|_| format::Instant { machine: d.at.clone(), human: d.at.clone() });
        let (outcome, tone) = outcome(d.outcome);
        Self {
            at,
            message_id: d.message_id,
            messages: d.messages,
            status: d.status.map_or_else(|| "No answer".to_owned(), |s| s.to_string()),
            latency: latency(d.latency_ms),
            outcome,
            tone,
            detail: d.detail,
            handler_url: d.handler_url,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_well() {
        let row = DeliveryRow::from(PushDelivery {
            at: "2026-11-03T12:00:00.250Z".into(),
            message_id: "m1".into(),
            messages: 1,
            status: None,
            latency_ms: 30_000,
            outcome: DeliveryOutcome::Retried,
            detail: "timed out".into(),
            handler_url: "https://app.example.com/hook".into(),
        });
        assert_eq!(row.at.human, "2026-11-03 12:00:00 UTC");
        assert_eq!(row.status, "No answer");
        assert_eq!(row.latency, "30.0 s");
        assert_eq!((row.outcome, row.tone), ("Retried", "warn"));
        assert_eq!(latency(87), "87 ms");
    }
}
