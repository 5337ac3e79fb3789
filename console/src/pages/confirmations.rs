//! The confirmation pages of the destructive actions outside a queue: removing a custom host or a
//! root domain, and logging out everywhere. Each is a GET page naming what goes, whose form POSTs
//! to the action's own route, like every other destructive action of the console (no JavaScript).

use crate::error::PageResult;
use crate::extract::CurrentMember;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use aqs_control_plane::{domains, hosts};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Path, State};
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
    cancel: &'static str,
    form_id: String,
}

pub(crate) async fn remove_host(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
) -> PageResult<ConfirmPage> {
    let host = hosts::get(state.control(), member.id, id).await?;
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
        cancel: "/hosts",
        form_id: once::new_id(),
    })
}

pub(crate) async fn remove_domain(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Path(id): Path<Uuid>,
) -> PageResult<ConfirmPage> {
    let domain = domains::get(state.control(), member.id, id).await?;
    Ok(ConfirmPage {
        chrome: member.chrome(format!("Remove {}", domain.name)),
        heading: format!("Remove the domain {}?", domain.name),
        text: "Its verification is forgotten: adding it again needs a new TXT record. A domain that still \
               has hosts under it is not removed."
            .to_owned(),
        action: format!("/hosts/domains/{id}/remove"),
        button: "Remove domain",
        cancel: "/hosts",
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
        cancel: "/account",
        form_id: once::new_id(),
    }
}
