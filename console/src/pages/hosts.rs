//! The Hosts page `/hosts` (Networking → Hosts): the member's root domains with the TXT record
//! that proves each and a verify button, their custom hosts with the CNAME record to create, the
//! live status and its reason, a re-check and a remove button, and the forms that add both.
//! Everything goes through the control plane's `domains` and `hosts` service functions. Every
//! form carries its own one-time id (`once`): a replay is answered with the page, not done again.

use crate::error::PageResult;
use crate::extract::{CurrentMember, FormData};
use crate::fields::FieldErrors;
use crate::form::{self, Outcome};
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use aqs_control_plane::TeamRole;
use aqs_control_plane::domains::{self, Domain, NewDomain};
use aqs_control_plane::hosts::{self, Host, NewHost};
use aqs_control_plane::queues;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Path, State};
use axum::response::Response;
use uuid::Uuid;

const PATH: &str = "/hosts";

/// What the status column says, in words.
pub(crate) fn status_text(host: &Host) -> &'static str {
    match (host.status, host.stage) {
        ("active", _) => "Active",
        ("error", _) => "Error",
        (_, Some("issuing_certificate")) => "Setting up: issuing the certificate",
        _ => "Setting up: waiting for DNS",
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "hosts.html")]
pub(crate) struct HostsPage {
    chrome: Chrome,
    domains: Vec<Domain>,
    hosts: Vec<Host>,
    queues: Vec<String>,
    domain_name: String,
    hostname: String,
    queue: String,
    domain_errors: FieldErrors,
    host_errors: FieldErrors,
}

impl HostsPage {
    fn status_of(&self, host: &Host) -> &'static str {
        status_text(host)
    }

    /// When a verified domain lost its TXT proof, as pages show instants.
    fn lost_at(&self, domain: &Domain) -> Option<crate::format::Instant> {
        domain.lost_at.map(|at| crate::format::instant(at.timestamp_millis().max(0) as u64))
    }

    /// A fresh one-time id for each form on the page.
    fn form_id(&self) -> String {
        once::new_id()
    }
}

struct Inputs {
    domain_name: String,
    hostname: String,
    queue: String,
    domain_errors: FieldErrors,
    host_errors: FieldErrors,
}

async fn page(state: &ConsoleState, member: &CurrentMember, inputs: Inputs) -> PageResult<HostsPage> {
    let control = state.control();
    Ok(HostsPage {
        chrome: member.chrome("Hosts"),
        domains: domains::list(control, member.team).await?,
        hosts: hosts::list(control, member.team).await?,
        queues: queues::list(control, member.team).await?.into_iter().map(|q| q.slug.to_string()).collect(),
        domain_name: inputs.domain_name,
        hostname: inputs.hostname,
        queue: inputs.queue,
        domain_errors: inputs.domain_errors,
        host_errors: inputs.host_errors,
    })
}

fn empty() -> Inputs {
    Inputs {
        domain_name: String::new(),
        hostname: String::new(),
        queue: String::new(),
        domain_errors: FieldErrors::default(),
        host_errors: FieldErrors::default(),
    }
}

pub(crate) async fn show(State(state): State<ConsoleState>, member: CurrentMember) -> PageResult<HostsPage> {
    page(&state, &member, empty()).await
}

pub(crate) async fn add_domain(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    member.may_change(TeamRole::Admin)?;
    let name = form.get("name").trim().to_owned();
    let act = async {
        match domains::create(state.control(), &member.caller, NewDomain { name: name.clone() }).await {
            Ok(domain) => {
                let message = format!(
                    "Added {}. Create the TXT record {} with the value {}, then choose Verify.",
                    domain.name, domain.verification.name, domain.verification.value
                );
                Ok(Outcome::flash(PATH, message))
            }
            Err(err) => Ok(Outcome::invalid(
                async {
                    let domain_errors = FieldErrors::from_api(err, &["name"])?;
                    page(&state, &member, Inputs { domain_name: name.clone(), domain_errors, ..empty() }).await
                }
                .await,
            )),
        }
    };
    form::run(&state, &member, &form, act).await
}

pub(crate) async fn verify_domain(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
    form: FormData,
) -> PageResult<Response> {
    member.may_change(TeamRole::Admin)?;
    let act = async { Ok(Outcome::flash_or_refused(PATH, verify_domain_now(&state, &member, id).await)) };
    form::run(&state, &member, &form, act).await
}

async fn verify_domain_now(state: &ConsoleState, member: &CurrentMember, id: Uuid) -> PageResult<String> {
    let domain = match domains::verify(state.control(), &member.caller, id).await {
        Ok(domain) => domain,
        Err(aqs_core::ApiError::Conflict(reason)) => return Ok(format!("Not verified: {reason}.")),
        Err(err) => return Err(err.into()),
    };
    Ok(match (domain.status.as_str(), &domain.reason) {
        ("verified", _) => format!("{} is verified: you can add hosts under it.", domain.name),
        (_, Some(reason)) => format!("{} is not verified yet: {reason}.", domain.name),
        _ => format!("{} is not verified yet.", domain.name),
    })
}

pub(crate) async fn remove_domain(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
    form: FormData,
) -> PageResult<Response> {
    member.may_change(TeamRole::Admin)?;
    let act = async { Ok(Outcome::flash_or_refused(PATH, remove_domain_now(&state, &member, id).await)) };
    form::run(&state, &member, &form, act).await
}

async fn remove_domain_now(state: &ConsoleState, member: &CurrentMember, id: Uuid) -> PageResult<String> {
    match domains::delete(state.control(), &member.caller, id).await {
        Ok(()) => Ok("Domain removed.".to_owned()),
        Err(aqs_core::ApiError::Conflict(reason)) => Ok(format!("Not removed: {reason}.")),
        Err(err) => Err(err.into()),
    }
}

pub(crate) async fn add_host(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    member.may_change(TeamRole::Admin)?;
    let hostname = form.get("hostname").trim().to_owned();
    let queue = form.get("queue").trim().to_owned();
    let input = NewHost { hostname: hostname.clone(), queue: queue.clone() };
    let act = async {
        match hosts::create(state.control(), &member.caller, input).await {
            Ok(host) => {
                let message = format!(
                    "Added {}. Create the DNS-only CNAME record {} → {}; the certificate follows on its own.",
                    host.hostname, host.dns.name, host.dns.value
                );
                Ok(Outcome::flash(PATH, message))
            }
            Err(err) => Ok(Outcome::invalid(
                async {
                    let host_errors = FieldErrors::from_api(err, &["hostname", "queue"])?;
                    let inputs = Inputs { hostname: hostname.clone(), queue: queue.clone(), host_errors, ..empty() };
                    page(&state, &member, inputs).await
                }
                .await,
            )),
        }
    };
    form::run(&state, &member, &form, act).await
}

pub(crate) async fn check_host(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
    form: FormData,
) -> PageResult<Response> {
    member.may_change(TeamRole::Admin)?;
    let act = async { Ok(Outcome::flash_or_refused(PATH, check_host_now(&state, &member, id).await)) };
    form::run(&state, &member, &form, act).await
}

async fn check_host_now(state: &ConsoleState, member: &CurrentMember, id: Uuid) -> PageResult<String> {
    let host = hosts::check(state.control(), &member.caller, id).await?;
    Ok(format!("Checking {} now; its status below follows.", host.hostname))
}

pub(crate) async fn remove_host(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
    form: FormData,
) -> PageResult<Response> {
    member.may_change(TeamRole::Admin)?;
    let act = async { Ok(Outcome::flash_or_refused(PATH, remove_host_now(&state, &member, id).await)) };
    form::run(&state, &member, &form, act).await
}

async fn remove_host_now(state: &ConsoleState, member: &CurrentMember, id: Uuid) -> PageResult<String> {
    let host = hosts::get(state.control(), member.team, id).await?;
    hosts::delete(state.control(), &member.caller, id).await?;
    Ok(format!(
        "Removed {}: it no longer serves the queue. The queue {}, its messages and its tokens stay.",
        host.hostname, host.queue
    ))
}
