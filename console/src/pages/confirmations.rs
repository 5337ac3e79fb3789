//! The confirmation pages of destructive actions: removing a custom host or a root domain, logging
//! out everywhere, and deleting one message from its detail page. Each is a GET page naming what
//! goes, whose form POSTs to the action's own route, like every other destructive action of the
//! console (no JavaScript).

use crate::error::PageResult;
use crate::extract::CurrentMember;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use aqs_control_plane::TeamRole;
use aqs_control_plane::slug::Slug;
use aqs_control_plane::{domains, hosts};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Path, Query, State};
use uuid::Uuid;

#[derive(Template, WebTemplate)]
#[template(path = "confirm.html")]
pub(crate) struct ConfirmPage {
    chrome: Chrome,
    heading: String,
    text: String,
    /// Where the form POSTs.
    action: String,
    button: &'static str,
    cancel: String,
    form_id: String,
}

impl ConfirmPage {
    pub(crate) fn new(
        chrome: Chrome,
        heading: String,
        text: String,
        action: String,
        button: &'static str,
        cancel: String,
    ) -> Self {
        Self { chrome, heading, text, action, button, cancel, form_id: once::new_id() }
    }
}

pub(crate) async fn remove_host(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
) -> PageResult<ConfirmPage> {
    let host = hosts::get(state.control(), member.team, id).await?;
    member.may_change(TeamRole::Admin)?;
    Ok(ConfirmPage {
        chrome: member.chrome(format!("Remove {}", host.hostname)),
        heading: format!("Remove the host {}?", host.hostname),
        text: format!(
            "Requests to https://{}/ stop reaching the queue {} at once, and its certificate is no longer \
             renewed. The queue, its messages and its tokens stay; add the host again to serve it.",
            host.hostname, host.queue
        ),
        action: format!("/hosts/{id}/remove"),
        button: "Remove host",
        cancel: "/hosts".to_owned(),
        form_id: once::new_id(),
    })
}

pub(crate) async fn remove_domain(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
) -> PageResult<ConfirmPage> {
    let domain = domains::get(state.control(), member.team, id).await?;
    member.may_change(TeamRole::Admin)?;
    Ok(ConfirmPage {
        chrome: member.chrome(format!("Remove {}", domain.name)),
        heading: format!("Remove the domain {}?", domain.name),
        text: "Its verification is forgotten: adding it again needs a new TXT record. A domain that still \
               has hosts under it is not removed."
            .to_owned(),
        action: format!("/hosts/domains/{id}/remove"),
        button: "Remove domain",
        cancel: "/hosts".to_owned(),
        form_id: once::new_id(),
    })
}

pub(crate) async fn logout_all(member: CurrentMember) -> ConfirmPage {
    ConfirmPage {
        chrome: member.chrome("Log out everywhere"),
        heading: "Log out everywhere?".to_owned(),
        text: "Every session of this account ends, on every browser, this one included; you log in again \
               to continue."
            .to_owned(),
        action: "/logout-all".to_owned(),
        button: "Log out everywhere",
        cancel: "/account".to_owned(),
        form_id: once::new_id(),
    }
}

/// Deleting one message (`?entry=<stream id>` or `?delayed=<message id>`, as its detail page links
/// it). The page names the message and its state; a leased one is refused when posted
/// (`message_delete`), since its state may change before then.
pub(crate) async fn delete_message(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    crate::extract::PagePath(slug): crate::extract::PagePath<Slug>,
    Query(query): Query<super::message_delete::DeleteQuery>,
) -> PageResult<ConfirmPage> {
    let queue = super::load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let reference = query.reference()?;
    let found = state.engine().message(queue.id, &reference, aqs_core::time::now_ms()).await?;
    let message = found.ok_or(crate::error::ConsoleError::NotFound)?;
    let (state_text, _, _) = super::messages::state_words(message.state);
    let detail = super::messages::detail_href(&slug.to_string(), &reference);
    Ok(ConfirmPage {
        chrome: member.chrome(format!("Delete message · {}", queue.name)),
        heading: format!("Delete message {}?", message.id),
        text: format!(
            "It is {} and is deleted for good, with its body and attributes, from the queue {}; no consumer will \
             receive it. A message a consumer holds under a lease is not deleted. This cannot be undone.",
            state_text.to_lowercase(),
            queue.name
        ),
        action: super::message_delete::action_href(&slug.to_string(), &reference),
        button: "Delete message",
        cancel: detail,
        form_id: once::new_id(),
    })
}
