//! The operator page `/admin/hosts`: every member's custom hosts, errors first, with their
//! reasons, filtered by status, and a re-check button per host. Only operators reach it
//! ([`CurrentOperator`]); everyone else gets the 404 page.

use crate::error::PageResult;
use crate::extract::CurrentOperator;
use crate::flash;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use aqs_control_plane::hosts::{self, AdminHost};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use serde::Deserialize;
use uuid::Uuid;

#[derive(Template, WebTemplate)]
#[template(path = "admin_hosts.html")]
pub(crate) struct AdminHostsPage {
    chrome: Chrome,
    status: String,
    hosts: Vec<AdminHost>,
}

impl AdminHostsPage {
    fn status_of(&self, host: &AdminHost) -> &'static str {
        super::hosts::status_text(&host.host)
    }
}

#[derive(Deserialize)]
pub(crate) struct Filter {
    #[serde(default)]
    status: String,
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    Query(filter): Query<Filter>,
) -> PageResult<AdminHostsPage> {
    let status = Some(filter.status.as_str()).filter(|s| ["setting_up", "active", "error"].contains(s));
    let hosts = hosts::admin_list(state.control(), &op.operator, status).await?;
    Ok(AdminHostsPage { chrome: op.member.chrome("All hosts"), status: status.unwrap_or_default().to_owned(), hosts })
}

pub(crate) async fn check(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    Path(id): Path<Uuid>,
) -> PageResult<Response> {
    let host = hosts::admin_check(state.control(), &op.operator, id).await?;
    let message = format!("Checking {} now.", host.host.hostname);
    Ok(flash::redirect(&state, op.member.secure, "/admin/hosts", &message))
}
