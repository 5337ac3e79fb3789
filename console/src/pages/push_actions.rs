//! The Push tab's actions, each after a confirmation page: stopping push, and rotating the signing
//! secret. Also the page that shows a signing secret once: after push is first set (`push::set`)
//! and after a rotation, with the copy button and the "shown once" warning of token secrets.

use super::load_queue;
use super::push::target;
use super::push_log::instant_of;
use crate::error::{ConsoleError, PageResult};
use crate::extract::CurrentMember;
use crate::extract::PagePath;
use crate::flash;
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::Queue;
use aqs_control_plane::push::{self, PushTarget};
use aqs_control_plane::slug::Slug;
use aqs_core::secret::Secret;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

/// The signing secret, shown once.
#[derive(Template, WebTemplate)]
#[template(path = "push_secret.html")]
pub(crate) struct SecretPage {
    chrome: Chrome,
    nav: QueueNav,
    /// True after a rotation, false when push was just turned on.
    rotated: bool,
    handler_url: String,
    secret: String,
    /// Until when the replaced secret still signs (after a rotation).
    previous_until: Option<format::Instant>,
}

impl SecretPage {
    fn new(member: &CurrentMember, queue: &Queue, target: &PushTarget, secret: Secret, rotated: bool) -> Self {
        let nav = QueueNav::new(queue, Tab::Push);
        Self {
            chrome: member.chrome(nav.title(Tab::Push)),
            nav,
            rotated,
            handler_url: target.handler_url.clone(),
            secret: secret.expose().to_owned(),
            previous_until: target.previous_secret_expires_at.as_ref().map(instant_of),
        }
    }

    /// After push was first set on the queue.
    pub(crate) fn created(member: &CurrentMember, queue: &Queue, target: &PushTarget, secret: Secret) -> Self {
        Self::new(member, queue, target, secret, false)
    }
}

/// What a confirmed push action does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Stop,
    RotateSecret,
}

impl Action {
    fn parse(text: &str) -> PageResult<Self> {
        match text {
            "stop" => Ok(Self::Stop),
            "rotate-secret" => Ok(Self::RotateSecret),
            _ => Err(ConsoleError::NotFound),
        }
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "push_confirm.html")]
pub(crate) struct ConfirmPage {
    chrome: Chrome,
    nav: QueueNav,
    /// `stop` or `rotate-secret`: the path segment the form posts to.
    action: &'static str,
    handler_url: String,
}

fn push_off(state: &ConsoleState, member: &CurrentMember, slug: &Slug) -> Response {
    let message = "Push is not set for this queue: there is nothing to stop or rotate.";
    flash::redirect(state, member.secure, &format!("/queues/{slug}/push"), message)
}

pub(crate) async fn confirm(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath((slug, action)): PagePath<(Slug, String)>,
) -> PageResult {
    let action = Action::parse(&action)?;
    let queue = load_queue(&state, &member, &slug).await?;
    let Some(current) = target(&state, &member, &slug).await? else {
        return Ok(push_off(&state, &member, &slug));
    };
    let nav = QueueNav::new(&queue, Tab::Push);
    let (title, action) = match action {
        Action::Stop => ("Stop push", "stop"),
        Action::RotateSecret => ("Rotate the signing secret", "rotate-secret"),
    };
    let page = ConfirmPage { chrome: member.chrome(title), nav, action, handler_url: current.handler_url };
    Ok(page.into_response())
}

pub(crate) async fn act(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath((slug, action)): PagePath<(Slug, String)>,
) -> PageResult {
    let action = Action::parse(&action)?;
    let queue = load_queue(&state, &member, &slug).await?;
    if target(&state, &member, &slug).await?.is_none() {
        return Ok(push_off(&state, &member, &slug));
    }
    match action {
        Action::Stop => {
            push::stop(state.control(), member.id, &slug).await?;
            let message = "Push stopped: the handler gets no more requests. Messages stay in the queue for \
                           consumers, and the signing secret is forgotten.";
            Ok(flash::redirect(&state, member.secure, &format!("/queues/{slug}/push"), message))
        }
        Action::RotateSecret => {
            let set = push::rotate_secret(state.control(), member.id, &slug).await?;
            let secret = set.signing_secret.ok_or_else(|| {
                ConsoleError::Internal(anyhow::anyhow!("the control plane rotated without a new secret"))
            })?;
            Ok(SecretPage::new(&member, &queue, &set.push, secret, true).into_response())
        }
    }
}
