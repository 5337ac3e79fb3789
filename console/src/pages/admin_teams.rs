//! The operators' page `/admin/teams`: teams found by a member's email (or the newest), and one
//! team's page with its members, its use against its limits, and the forms that suspend it with a
//! reason, lift the suspension and change its limits. The rules and the audit events are
//! `teams::admin`'s, as on `/api/v1/admin/teams`.
//!
//! Only operators reach it ([`CurrentOperator`]); everyone else, logged out included, gets the
//! 404 page.

use super::INVALID;
use crate::error::PageResult;
use crate::extract::{CurrentOperator, FormData, PagePath};
use crate::fields::{self, FieldErrors};
use crate::flash;
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use aqs_control_plane::teams::admin::{self, AdminTeam, LimitsChange, TeamMemberEntry};
use aqs_core::limits::MIB;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

struct TeamRow {
    id: String,
    name: String,
    personal: bool,
    suspended: Option<String>,
    suspended_at: Option<format::Instant>,
    members: i64,
    queues: String,
    storage: String,
    max_queues: i32,
    /// The storage bound in MiB for the form; empty for none.
    max_storage_mib: String,
}

impl From<AdminTeam> for TeamRow {
    fn from(team: AdminTeam) -> Self {
        let used = format::bytes(team.storage_limits_total.max(0) as u64);
        let storage = match team.max_storage_bytes {
            Some(max) => format!("{used} of {}", format::bytes(max.max(0) as u64)),
            None => format!("{used}, no team bound"),
        };
        Self {
            id: team.id.to_string(),
            personal: team.personal,
            suspended_at: team.suspended_at.as_ref().map(format::instant_at),
            suspended: team.suspended_reason,
            members: team.member_count,
            queues: format!("{} of {}", team.queue_count, team.max_queues),
            storage,
            max_queues: team.max_queues,
            max_storage_mib: team.max_storage_bytes.map(|b| (b as u64 / MIB).to_string()).unwrap_or_default(),
            name: team.name,
        }
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "admin_teams.html")]
struct ListPage {
    chrome: Chrome,
    email: String,
    rows: Vec<TeamRow>,
    errors: FieldErrors,
}

#[derive(Deserialize)]
pub(crate) struct Search {
    #[serde(default)]
    email: String,
}

pub(crate) async fn list(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    Query(search): Query<Search>,
) -> PageResult<Response> {
    let mut page = ListPage {
        chrome: op.member.chrome("Teams"),
        email: search.email.trim().to_owned(),
        rows: Vec::new(),
        errors: FieldErrors::default(),
    };
    match admin::find(state.control(), &op.operator, Some(&page.email)).await {
        Ok(teams) => page.rows = teams.into_iter().map(TeamRow::from).collect(),
        Err(err) => {
            page.errors = FieldErrors::from_api(err, &["email"])?;
            return Ok((INVALID, page).into_response());
        }
    }
    Ok(page.into_response())
}

#[derive(Template, WebTemplate)]
#[template(path = "admin_team.html")]
pub(crate) struct TeamPage {
    chrome: Chrome,
    team: TeamRow,
    members: Vec<TeamMemberEntry>,
    reason: String,
    max_queues: String,
    max_storage_mib: String,
    errors: FieldErrors,
}

async fn team_page(
    state: &ConsoleState,
    op: &CurrentOperator,
    id: &str,
    reason: String,
    limits: Option<(String, String)>,
    errors: FieldErrors,
) -> PageResult<TeamPage> {
    let detail = admin::get(state.control(), &op.operator, id).await?;
    let team = TeamRow::from(detail.team);
    let (max_queues, max_storage_mib) =
        limits.unwrap_or_else(|| (team.max_queues.to_string(), team.max_storage_mib.clone()));
    Ok(TeamPage {
        chrome: op.member.chrome(format!("Team {}", team.name)),
        team,
        members: detail.members,
        reason,
        max_queues,
        max_storage_mib,
        errors,
    })
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    PagePath(id): PagePath<String>,
) -> PageResult<TeamPage> {
    team_page(&state, &op, &id, String::new(), None, FieldErrors::default()).await
}

fn back(id: &str) -> String {
    format!("/admin/teams/{id}")
}

pub(crate) async fn suspend(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> PageResult<Response> {
    let reason = form.get("reason");
    match admin::suspend(state.control(), &op.operator, &op.member.caller.origin, &id, reason).await {
        Ok(team) => {
            let message =
                format!("Suspended {}: its tokens and keys are refused, its console is read-only.", team.name);
            Ok(flash::redirect(&state, op.member.secure, &back(&id), &message))
        }
        Err(err) => {
            let errors = FieldErrors::from_api(err, &["reason"])?;
            let page = team_page(&state, &op, &id, reason.to_owned(), None, errors).await?;
            Ok((INVALID, page).into_response())
        }
    }
}

pub(crate) async fn unsuspend(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    PagePath(id): PagePath<String>,
) -> PageResult<Response> {
    let team = admin::unsuspend(state.control(), &op.operator, &op.member.caller.origin, &id).await?;
    let message = format!("Lifted the suspension of {}.", team.name);
    Ok(flash::redirect(&state, op.member.secure, &back(&id), &message))
}

pub(crate) async fn limits(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> PageResult<Response> {
    let mut errors = FieldErrors::default();
    let max_queues = fields::number::<u32>(&mut errors, "max_queues", form.get("max_queues"), None);
    let storage_text = form.get("max_storage_mib").trim();
    // Empty: no bound across the team (each queue keeps its own storage limit).
    let max_storage = match storage_text {
        "" => Some(None),
        text => {
            fields::number::<u64>(&mut errors, "max_storage_mib", text, None).map(|mib| Some(mib.saturating_mul(MIB)))
        }
    };
    if let (Some(max_queues), Some(max_storage_bytes), true) = (max_queues, max_storage, errors.is_empty()) {
        let change = LimitsChange { max_queues: Some(max_queues), max_storage_bytes: Some(max_storage_bytes) };
        match admin::set_limits(state.control(), &op.operator, &op.member.caller.origin, &id, change).await {
            Ok(team) => {
                let message = format!("Limits of {} changed.", team.name);
                return Ok(flash::redirect(&state, op.member.secure, &back(&id), &message));
            }
            Err(err) => {
                errors = FieldErrors::from_api(err, &["max_queues", "max_storage_bytes"])?
                    .rename("max_storage_bytes", "max_storage_mib");
            }
        }
    }
    let limits = Some((form.get("max_queues").to_owned(), storage_text.to_owned()));
    let page = team_page(&state, &op, &id, String::new(), limits, errors).await?;
    Ok((INVALID, page).into_response())
}
