//! The Push tab's actions, each after a confirmation page: stopping push, and rotating the signing
//! secret. Also the page that shows a signing secret once: after push is first set (`push::set`)
//! and after a rotation, with the copy button and the "shown once" warning of token secrets. The
//! forms redirect to it, and a resubmitted rotation rotates nothing (see `once`).

use super::load_queue;
use super::push::target;
use crate::error::{ConsoleError, PageResult};
use crate::extract::PagePath;
use crate::extract::{CurrentMember, FormData};
use crate::flash;
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::Queue;
use aqs_control_plane::TeamRole;
use aqs_control_plane::push::{self, PushTarget};
use aqs_control_plane::slug::Slug;
use aqs_core::secret::Secret;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
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
    /// On the first view only.
    secret: Option<String>,
    /// Until when the replaced secret still signs (after a rotation).
    previous_until: Option<format::Instant>,
}

impl SecretPage {
    fn new(member: &CurrentMember, queue: &Queue, target: &PushTarget, secret: Option<String>, rotated: bool) -> Self {
        let nav = QueueNav::new(queue, Tab::Push);
        Self {
            chrome: member.chrome(nav.title(Tab::Push)),
            nav,
            rotated,
            handler_url: target.handler_url.clone(),
            secret,
            previous_until: target.previous_secret_expires_at.as_ref().map(format::instant_at),
        }
    }
}

/// Finishes a form that produced a signing secret: keeps it for the page the browser is sent to.
pub(crate) async fn shown_secret(
    state: &ConsoleState,
    member: &CurrentMember,
    slug: &Slug,
    secret: &Secret,
    rotated: bool,
) -> PageResult<Outcome> {
    let shown = once::stash_secret(state, member, secret.expose()).await?;
    Ok(Outcome::see_other(format!("/queues/{slug}/push/secret?shown={shown}&rotated={rotated}")))
}

#[derive(serde::Deserialize)]
pub(crate) struct SecretQuery {
    #[serde(default)]
    shown: String,
    #[serde(default)]
    rotated: bool,
}

/// The signing secret after push was set or rotated, on the first view only.
pub(crate) async fn secret(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    Query(query): Query<SecretQuery>,
) -> PageResult {
    let queue = load_queue(&state, &member, &slug).await?;
    let Some(current) = target(&state, &member, &slug).await? else {
        return Ok(push_off(&state, &member, &slug));
    };
    let secret = once::take_secret(&state, &member, &query.shown).await?;
    Ok(SecretPage::new(&member, &queue, &current, secret, query.rotated).into_response())
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
    form_id: String,
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
    member.may_change(TeamRole::Admin)?;
    let Some(current) = target(&state, &member, &slug).await? else {
        return Ok(push_off(&state, &member, &slug));
    };
    let nav = QueueNav::new(&queue, Tab::Push);
    let (title, action) = match action {
        Action::Stop => ("Stop push", "stop"),
        Action::RotateSecret => ("Rotate the signing secret", "rotate-secret"),
    };
    let page = ConfirmPage {
        chrome: member.chrome(title),
        nav,
        action,
        handler_url: current.handler_url,
        form_id: once::new_id(),
    };
    Ok(page.into_response())
}

pub(crate) async fn act(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath((slug, action)): PagePath<(Slug, String)>,
    form: FormData,
) -> PageResult {
    let action = Action::parse(&action)?;
    load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let act = async {
        if target(&state, &member, &slug).await?.is_none() {
            return Ok(Outcome::NotDone(Ok(push_off(&state, &member, &slug))));
        }
        match action {
            Action::Stop => {
                push::stop(state.control(), &member.caller, &slug).await?;
                let message = "Push stopped: the handler gets no more requests. Messages stay in the queue for \
                               consumers, and the signing secret is forgotten.";
                Ok(Outcome::flash(format!("/queues/{slug}/push"), message))
            }
            Action::RotateSecret => {
                let set = push::rotate_secret(state.control(), &member.caller, &slug).await?;
                let secret = set.signing_secret.ok_or_else(|| {
                    ConsoleError::Internal(anyhow::anyhow!("the control plane rotated without a new secret"))
                })?;
                shown_secret(&state, &member, &slug, &secret, true).await
            }
        }
    };
    form::run(&state, &member, &form, act).await
}
