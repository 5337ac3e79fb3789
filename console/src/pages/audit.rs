//! The Audit page `/audit`: the team's audit log, newest first, 50 events a page, filtered by
//! action and by actor (an email or an id), with an "Older events" link that continues after the
//! page's last event. Owners and admins read it, as on the API (`GET /api/v1/audit`); a suspended
//! team's too, since reading changes nothing.

use super::INVALID;
use crate::error::PageResult;
use crate::extract::CurrentMember;
use crate::fields::FieldErrors;
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use aqs_control_plane::TeamRole;
use aqs_control_plane::audit::{Event, Filter, RawFilter, team_page};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::IntoResponse;
use serde::Deserialize;

struct EventRow {
    at: format::Instant,
    /// The member's or operator's email, else the kind of actor ("key …", "anonymous").
    who: String,
    actor_kind: String,
    action: String,
    target: String,
    ip: String,
    user_agent: String,
    request_id: String,
}

impl From<Event> for EventRow {
    fn from(event: Event) -> Self {
        let who = match (&event.actor.email, &event.actor.id) {
            (Some(email), _) => email.clone(),
            (None, Some(id)) if event.actor.kind == "key" => format!("key {id}"),
            (None, Some(id)) => format!("{} {id} (erased)", event.actor.kind),
            (None, None) => event.actor.kind.clone(),
        };
        let target = match &event.target.id {
            Some(id) => format!("{} {id}", event.target.kind),
            None => event.target.kind.clone(),
        };
        Self {
            at: format::instant_at(&event.at),
            who,
            actor_kind: event.actor.kind,
            action: event.action,
            target,
            ip: event.ip.unwrap_or_default(),
            user_agent: event.user_agent.unwrap_or_default(),
            request_id: event.request_id.unwrap_or_default(),
        }
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct AuditQuery {
    #[serde(default)]
    action: String,
    #[serde(default)]
    actor: String,
    #[serde(default)]
    before: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "audit.html")]
struct AuditPage {
    chrome: Chrome,
    action: String,
    actor: String,
    rows: Vec<EventRow>,
    /// The next page's address, when there is one.
    older: Option<String>,
    /// Whether this is a later page (a link back to the newest).
    paged: bool,
    errors: FieldErrors,
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Query(query): Query<AuditQuery>,
) -> PageResult {
    member.caller.require(TeamRole::Admin)?;
    let raw = RawFilter {
        action: Some(query.action.clone()),
        actor: Some(query.actor.clone()),
        before: Some(query.before.clone()),
        ..RawFilter::default()
    };
    let mut page = AuditPage {
        chrome: member.chrome("Audit log"),
        paged: !query.before.trim().is_empty(),
        action: query.action.trim().to_owned(),
        actor: query.actor.trim().to_owned(),
        rows: Vec::new(),
        older: None,
        errors: FieldErrors::default(),
    };
    let filter = match Filter::parse(raw) {
        Ok(filter) => filter,
        Err(err) => {
            page.errors = FieldErrors::from_api(err, &["action", "actor", "before"])?;
            return Ok((INVALID, page).into_response());
        }
    };
    let found = team_page(state.control().db(), member.team, &filter).await?;
    page.older = found.next_before.map(|before| {
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in [("action", &page.action), ("actor", &page.actor)] {
            if !value.is_empty() {
                query.append_pair(name, value);
            }
        }
        query.append_pair("before", &before.to_string());
        format!("/audit?{}", query.finish())
    });
    page.rows = found.events.into_iter().map(EventRow::from).collect();
    Ok(page.into_response())
}
