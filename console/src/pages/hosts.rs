//! The Hosts page `/hosts` (Networking → Hosts): the member's root domains with the TXT record
//! that proves each and a verify button, their custom hosts with the CNAME record to create, the
//! live status and its reason, a re-check and a remove button, and the forms that add both.
//! Everything goes through the control plane's `domains` and `hosts` service functions. Every
//! form carries its own one-time id (`once`): a replay is answered with the page, not done again.

use super::INVALID;
use crate::error::PageResult;
use crate::extract::{CurrentMember, FormData};
use crate::fields::FieldErrors;
use crate::flash;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use aqs_control_plane::domains::{self, Domain, NewDomain};
use aqs_control_plane::hosts::{self, Host, NewHost};
use aqs_control_plane::queues;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
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
        domains: domains::list(control, member.id).await?,
        hosts: hosts::list(control, member.id).await?,
        queues: queues::list(control, member.id).await?.into_iter().map(|q| q.slug.to_string()).collect(),
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
    let name = form.get("name").trim().to_owned();
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    match domains::create(state.control(), member.id, NewDomain { name: name.clone() }).await {
        Ok(domain) => {
            claim.done(&state, PATH).await?;
            let message = format!(
                "Added {}. Create the TXT record {} with the value {}, then choose Verify.",
                domain.name, domain.verification.name, domain.verification.value
            );
            Ok(flash::redirect(&state, member.secure, PATH, &message))
        }
        Err(err) => {
            claim.release(&state).await?;
            let inputs = Inputs { domain_name: name, domain_errors: FieldErrors::from_api(err, &["name"])?, ..empty() };
            Ok((INVALID, page(&state, &member, inputs).await?).into_response())
        }
    }
}

pub(crate) async fn verify_domain(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
    form: FormData,
) -> PageResult<Response> {
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    let result = verify_domain_now(&state, &member, id).await;
    finish(&state, claim, result).await
}

async fn verify_domain_now(state: &ConsoleState, member: &CurrentMember, id: Uuid) -> PageResult<Response> {
    let domain = domains::verify(state.control(), member.id, id).await?;
    let message = match (domain.status.as_str(), &domain.reason) {
        ("verified", _) => format!("{} is verified: you can add hosts under it.", domain.name),
        (_, Some(reason)) => format!("{} is not verified yet: {reason}.", domain.name),
        _ => format!("{} is not verified yet.", domain.name),
    };
    Ok(flash::redirect(state, member.secure, PATH, &message))
}

pub(crate) async fn remove_domain(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
    form: FormData,
) -> PageResult<Response> {
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    let result = remove_domain_now(&state, &member, id).await;
    finish(&state, claim, result).await
}

async fn remove_domain_now(state: &ConsoleState, member: &CurrentMember, id: Uuid) -> PageResult<Response> {
    let message = match domains::delete(state.control(), member.id, id).await {
        Ok(()) => "Domain removed.".to_owned(),
        Err(aqs_core::ApiError::Conflict(reason)) => format!("Not removed: {reason}."),
        Err(err) => return Err(err.into()),
    };
    Ok(flash::redirect(state, member.secure, PATH, &message))
}

pub(crate) async fn add_host(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    let hostname = form.get("hostname").trim().to_owned();
    let queue = form.get("queue").trim().to_owned();
    let input = NewHost { hostname: hostname.clone(), queue: queue.clone() };
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    match hosts::create(state.control(), member.id, input).await {
        Ok(host) => {
            claim.done(&state, PATH).await?;
            let message = format!(
                "Added {}. Create the DNS-only CNAME record {} → {}; the certificate follows on its own.",
                host.hostname, host.dns.name, host.dns.value
            );
            Ok(flash::redirect(&state, member.secure, PATH, &message))
        }
        Err(err) => {
            claim.release(&state).await?;
            let host_errors = FieldErrors::from_api(err, &["hostname", "queue"])?;
            let inputs = Inputs { hostname, queue, host_errors, ..empty() };
            Ok((INVALID, page(&state, &member, inputs).await?).into_response())
        }
    }
}

pub(crate) async fn check_host(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
    form: FormData,
) -> PageResult<Response> {
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    let result = check_host_now(&state, &member, id).await;
    finish(&state, claim, result).await
}

async fn check_host_now(state: &ConsoleState, member: &CurrentMember, id: Uuid) -> PageResult<Response> {
    let host = hosts::check(state.control(), member.id, id).await?;
    let message = format!("Checking {} now; its status below follows.", host.hostname);
    Ok(flash::redirect(state, member.secure, PATH, &message))
}

pub(crate) async fn remove_host(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
    form: FormData,
) -> PageResult<Response> {
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    let result = remove_host_now(&state, &member, id).await;
    finish(&state, claim, result).await
}

async fn remove_host_now(state: &ConsoleState, member: &CurrentMember, id: Uuid) -> PageResult<Response> {
    let host = hosts::get(state.control(), member.id, id).await?;
    hosts::delete(state.control(), member.id, id).await?;
    let message = format!(
        "Removed {}: it no longer serves the queue. The queue {}, its messages and its tokens stay.",
        host.hostname, host.queue
    );
    Ok(flash::redirect(state, member.secure, PATH, &message))
}

/// Records where a one-time form's result is shown, or frees its id when nothing was done.
async fn finish(state: &ConsoleState, claim: once::Claim, result: PageResult<Response>) -> PageResult<Response> {
    match result {
        Ok(response) => {
            claim.done(state, PATH).await?;
            Ok(response)
        }
        Err(err) => {
            claim.release(state).await?;
            Err(err)
        }
    }
}
