//! The reconciler's decisions as pure steps a test drives without DNS or ACME: [`decide`] takes a
//! host as stored and what DNS says now and returns what to do; [`after_order`] turns the outcome
//! of a certificate order into what to record. Every outcome names when to look again, so the
//! loop never spins: failures back off exponentially, an active host is looked at when its
//! periodic re-check or its renewal falls due.

use super::dns::CnameCheck;
use chrono::{DateTime, Utc};
use std::time::Duration;

/// The first retry after a failure; doubles per consecutive failure.
const BACKOFF_BASE: Duration = Duration::from_secs(10);
/// The longest wait between retries of a failing host.
const BACKOFF_MAX: Duration = Duration::from_secs(3600);
/// The longest wait while a host waits for its CNAME (the member is probably creating it now).
const WAITING_MAX: Duration = Duration::from_secs(300);
/// The shortest wait between two looks at a healthy host, whatever the renewal setting says.
const MIN_GAP: Duration = Duration::from_secs(2);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    WaitingForDns,
    IssuingCertificate,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    SettingUp(Stage),
    Active,
    Error,
}

impl Status {
    pub fn parse(status: &str, stage: Option<&str>) -> Self {
        match (status, stage) {
            ("active", _) => Self::Active,
            ("error", _) => Self::Error,
            (_, Some("issuing_certificate")) => Self::SettingUp(Stage::IssuingCertificate),
            _ => Self::SettingUp(Stage::WaitingForDns),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SettingUp(_) => "setting_up",
            Self::Active => "active",
            Self::Error => "error",
        }
    }

    pub fn stage(self) -> Option<&'static str> {
        match self {
            Self::SettingUp(Stage::WaitingForDns) => Some("waiting_for_dns"),
            Self::SettingUp(Stage::IssuingCertificate) => Some("issuing_certificate"),
            _ => None,
        }
    }
}

/// A host as the reconciler sees it.
#[derive(Clone, Debug)]
pub struct HostView {
    pub hostname: String,
    pub status: Status,
    pub reason: Option<String>,
    /// The validity of the certificate held, if any.
    pub cert: Option<(DateTime<Utc>, DateTime<Utc>)>,
    pub failures: u32,
}

/// The settings the decisions depend on.
#[derive(Clone, Debug)]
pub struct Policy {
    pub edge_hostname: String,
    pub renew_fraction: f64,
    pub recheck: Duration,
    pub acme_configured: bool,
}

/// What to write down: the new status and reason, whether this look failed (it then counts
/// towards the backoff), and when to look again.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub status: Status,
    pub reason: Option<String>,
    pub failed: bool,
    pub next_in: Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Record(Record),
    /// Order a certificate (a first one, or a renewal), then apply [`after_order`].
    Order,
}

/// What to do with `host` given its CNAME now.
pub fn decide(host: &HostView, cname: &CnameCheck, now: DateTime<Utc>, policy: &Policy) -> Action {
    let name = &host.hostname;
    let edge = &policy.edge_hostname;
    let serving = host.cert.is_some_and(|(_, not_after)| not_after > now);
    let keeps = if serving { "; the current certificate keeps serving until it expires" } else { "" };
    let failing = |status, reason: String| {
        Action::Record(Record {
            status,
            reason: Some(reason),
            failed: true,
            next_in: backoff(host.failures, BACKOFF_MAX),
        })
    };
    match cname {
        CnameCheck::LookupFailed(err) => failing(host.status, format!("the DNS lookup of {name} failed: {err}")),
        CnameCheck::WrongTarget(target) => {
            failing(Status::Error, format!("the CNAME of {name} points to {target}, not {edge}{keeps}"))
        }
        CnameCheck::AddressesInstead => failing(
            Status::Error,
            format!(
                "{name} has no CNAME record; it resolves to A records, so the record may be proxied: \
                 make it DNS-only (a CNAME to {edge}){keeps}"
            ),
        ),
        CnameCheck::Missing if serving || host.status == Status::Active => {
            failing(Status::Error, format!("{name} has no CNAME record to {edge} any more{keeps}"))
        }
        CnameCheck::Missing => Action::Record(Record {
            status: Status::SettingUp(Stage::WaitingForDns),
            reason: Some(format!("waiting for the CNAME record {name} → {edge}")),
            failed: true,
            next_in: backoff(host.failures, WAITING_MAX),
        }),
        CnameCheck::PointsAtEdge if !policy.acme_configured => {
            let status = if serving { Status::Active } else { Status::SettingUp(Stage::IssuingCertificate) };
            failing(
                status,
                "no ACME directory is configured (AQS_ACME_DIRECTORY_URL), so no certificate can be issued".into(),
            )
        }
        CnameCheck::PointsAtEdge => match host.cert {
            Some(cert) if !renewal_due(cert, now, policy.renew_fraction) => Action::Record(healthy(cert, now, policy)),
            _ => Action::Order,
        },
    }
}

/// What to record when the host's domain is not verified (never was, or lost its proof): an error
/// that orders nothing; a certificate still valid keeps serving.
pub fn unproven(host: &HostView, reason: &str, now: DateTime<Utc>) -> Record {
    failed(host, reason, now)
}

/// An error with `reason`, retried with backoff; says so when a certificate still valid keeps
/// serving meanwhile.
fn failed(host: &HostView, reason: &str, now: DateTime<Utc>) -> Record {
    let serving = host.cert.is_some_and(|(_, not_after)| not_after > now);
    let keeps = if serving { "; the current certificate keeps serving until it expires" } else { "" };
    Record {
        status: Status::Error,
        reason: Some(format!("{reason}{keeps}")),
        failed: true,
        next_in: backoff(host.failures, BACKOFF_MAX),
    }
}

/// What to record after an order: active with the new certificate, or an error with the ACME
/// server's reason (a certificate still valid keeps serving).
pub fn after_order(
    host: &HostView,
    outcome: Result<(DateTime<Utc>, DateTime<Utc>), &str>,
    now: DateTime<Utc>,
    policy: &Policy,
) -> Record {
    match outcome {
        Ok(cert) => healthy(cert, now, policy),
        Err(reason) => failed(host, reason, now),
    }
}

fn healthy(cert: (DateTime<Utc>, DateTime<Utc>), now: DateTime<Utc>, policy: &Policy) -> Record {
    let until_renewal = (renew_at(cert, policy.renew_fraction) - now).to_std().unwrap_or_default();
    Record {
        status: Status::Active,
        reason: None,
        failed: false,
        next_in: until_renewal.min(policy.recheck).max(MIN_GAP),
    }
}

/// When a third (or the configured fraction) of the certificate's lifetime remains.
fn renew_at((not_before, not_after): (DateTime<Utc>, DateTime<Utc>), fraction: f64) -> DateTime<Utc> {
    let lifetime = (not_after - not_before).num_seconds().max(0) as f64;
    not_after - chrono::Duration::seconds((lifetime * fraction).round() as i64)
}

fn renewal_due(cert: (DateTime<Utc>, DateTime<Utc>), now: DateTime<Utc>, fraction: f64) -> bool {
    now >= renew_at(cert, fraction)
}

/// The wait after `failures` consecutive failures (before this one): 10 s, 20 s, 40 s… up to `max`.
pub fn backoff(failures: u32, max: Duration) -> Duration {
    BACKOFF_BASE.saturating_mul(1u32 << failures.min(16)).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            edge_hostname: "edge.aqs.test".into(),
            renew_fraction: 1.0 / 3.0,
            recheck: Duration::from_secs(3600),
            acme_configured: true,
        }
    }

    fn host(status: Status, cert: Option<(i64, i64)>) -> HostView {
        let at = |days: i64| DateTime::<Utc>::from_timestamp(0, 0).unwrap() + chrono::Duration::days(days);
        HostView {
            hostname: "queue.example.com".into(),
            status,
            reason: None,
            cert: cert.map(|(from, to)| (at(from), at(to))),
            failures: 0,
        }
    }

    fn day(n: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(0, 0).unwrap() + chrono::Duration::days(n)
    }

    fn record(action: Action) -> Record {
        match action {
            Action::Record(record) => record,
            Action::Order => panic!("expected a record, got an order"),
        }
    }

    #[test]
    fn a_host_pointing_at_the_edge_without_a_certificate_orders_one() {
        let new = host(Status::SettingUp(Stage::WaitingForDns), None);
        assert_eq!(decide(&new, &CnameCheck::PointsAtEdge, day(0), &policy()), Action::Order);
    }

    #[test]
    fn renewal_comes_when_a_third_of_the_lifetime_remains() {
        let active = host(Status::Active, Some((0, 90)));
        let early = record(decide(&active, &CnameCheck::PointsAtEdge, day(59), &policy()));
        assert_eq!(early.status, Status::Active);
        assert!(early.next_in <= Duration::from_secs(86_400), "looks again by the renewal: {early:?}");
        assert_eq!(decide(&active, &CnameCheck::PointsAtEdge, day(60), &policy()), Action::Order);
        let always = Policy { renew_fraction: 1.0, ..policy() };
        assert_eq!(decide(&active, &CnameCheck::PointsAtEdge, day(1), &always), Action::Order);
    }

    #[test]
    fn dns_problems_have_reasons_a_person_can_act_on() {
        let new = host(Status::SettingUp(Stage::WaitingForDns), None);
        let proxied = record(decide(&new, &CnameCheck::AddressesInstead, day(0), &policy()));
        assert_eq!(proxied.status, Status::Error);
        assert!(proxied.reason.unwrap().contains("make it DNS-only"));
        let wrong = record(decide(&new, &CnameCheck::WrongTarget("x.example.net".into()), day(0), &policy()));
        assert!(wrong.reason.unwrap().contains("points to x.example.net, not edge.aqs.test"));
        let missing = record(decide(&new, &CnameCheck::Missing, day(0), &policy()));
        assert_eq!(missing.status, Status::SettingUp(Stage::WaitingForDns));
    }

    #[test]
    fn an_active_host_whose_cname_disappears_is_an_error_that_keeps_serving() {
        let active = host(Status::Active, Some((0, 90)));
        let gone = record(decide(&active, &CnameCheck::Missing, day(10), &policy()));
        assert_eq!(gone.status, Status::Error);
        assert!(gone.reason.unwrap().contains("keeps serving until it expires"));
    }

    #[test]
    fn a_host_under_an_unverified_domain_is_an_error_that_keeps_serving() {
        let active = host(Status::Active, Some((0, 90)));
        let lost = unproven(&active, "the domain example.com is not verified", day(10));
        assert_eq!(lost.status, Status::Error);
        assert!(lost.failed);
        assert!(lost.reason.unwrap().ends_with("keeps serving until it expires"));
        let expired = unproven(&active, "the domain example.com is not verified", day(91));
        assert_eq!(expired.reason.as_deref(), Some("the domain example.com is not verified"));
    }

    #[test]
    fn failures_back_off_and_never_spin() {
        assert_eq!(backoff(0, BACKOFF_MAX), Duration::from_secs(10));
        assert_eq!(backoff(3, BACKOFF_MAX), Duration::from_secs(80));
        assert_eq!(backoff(40, BACKOFF_MAX), BACKOFF_MAX);
        let mut failing = host(Status::Error, None);
        failing.failures = 2;
        let after = after_order(&failing, Err("the ACME server refused: no"), day(0), &policy());
        assert_eq!((after.status, after.next_in), (Status::Error, Duration::from_secs(40)));
        let fine = after_order(&failing, Ok((day(0), day(90))), day(0), &Policy { renew_fraction: 1.0, ..policy() });
        assert!(fine.next_in >= MIN_GAP, "a forced renewal still waits: {fine:?}");
    }
}
