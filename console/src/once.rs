//! Forms that are safe to resubmit. Every state-changing form carries a one-time id (the hidden
//! `form_id` field); the first submission claims it (a short-lived value the engine keeps, `scratch.rs`) and records where its result is
//! shown, so a reload, a Back-and-resubmit or a double click is answered with a redirect to that
//! result and never acts twice. A secret the action produced is kept (briefly, in Redis only) for
//! the page the form redirects to, which takes it once: a reload of that page shows it no more.
//! Handlers claim through `form::run`, which finishes or frees the claim for them.

use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData};
use crate::flash;
use crate::state::ConsoleState;
use axum::response::Response;
use std::time::Duration;

/// The hidden field of every state-changing form.
pub(crate) const FIELD: &str = "form_id";
/// How long a submitted form id is remembered: longer than anyone keeps a tab open to resubmit.
const FORM_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a secret waits for its page: the redirect follows at once.
const SECRET_TTL: Duration = Duration::from_secs(300);
/// How long a resubmission waits for the first submission to finish acting.
const FIRST_RESULT_WAIT: Duration = Duration::from_secs(5);
const FIRST_RESULT_POLL: Duration = Duration::from_millis(50);

/// A fresh id for a form about to be rendered.
pub(crate) fn new_id() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// The first submission of a form: finish it with [`Claim::done`], or [`Claim::release`] it when
/// the form is shown again with errors, so the corrected form can be sent with the same id.
pub(crate) struct Claim {
    key: String,
}

/// Claims the form's id. `Err(response)`: the form was submitted before, and the response sends
/// the browser to what that submission did.
pub(crate) async fn claim(
    state: &ConsoleState,
    member: &CurrentMember,
    form: &FormData,
) -> PageResult<Result<Claim, Response>> {
    let id = form.get(FIELD);
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ConsoleError::BadRequest("This form is out of date: reload the page and send it again.".into()));
    }
    let key = state.control().keys().console_form(&member.id.as_uuid().to_string(), id);
    if state.engine().put_new(&key, "", FORM_TTL).await? {
        return Ok(Ok(Claim { key }));
    }
    let location = first_result(state, &key).await?.unwrap_or_else(|| "/".to_owned());
    let message = "This form was already sent; it was done once and not again.";
    Ok(Err(flash::redirect(state, member.secure, &location, message)))
}

/// Where the first submission of the form claimed as `key` shows its result. A double click
/// sends the second submission while the first is still acting, so its result is waited for
/// (up to [`FIRST_RESULT_WAIT`]) rather than sending the browser away from the token it made.
/// `None`: the first submission has not finished (or failed without saying where to look).
async fn first_result(state: &ConsoleState, key: &str) -> PageResult<Option<String>> {
    let deadline = tokio::time::Instant::now() + FIRST_RESULT_WAIT;
    loop {
        let location = state.engine().value(key).await?.filter(|l| !l.is_empty());
        if location.is_some() || tokio::time::Instant::now() >= deadline {
            return Ok(location);
        }
        tokio::time::sleep(FIRST_RESULT_POLL).await;
    }
}

impl Claim {
    /// Records where the result is shown; replays are sent there.
    pub(crate) async fn done(self, state: &ConsoleState, location: &str) -> PageResult<()> {
        Ok(state.engine().replace_kept(&self.key, location).await?)
    }

    /// Forgets the claim: nothing was done.
    pub(crate) async fn release(self, state: &ConsoleState) -> PageResult<()> {
        Ok(state.engine().remove(&self.key).await?)
    }
}

/// Keeps `secret` for the member's next page; returns the id that page takes it by.
pub(crate) async fn stash_secret(state: &ConsoleState, member: &CurrentMember, secret: &str) -> PageResult<String> {
    let id = new_id();
    let key = state.control().keys().console_secret(&member.id.as_uuid().to_string(), &id);
    state.engine().put(&key, secret, SECRET_TTL).await?;
    Ok(id)
}

/// The stashed secret `id`, once: the second call (a reload) gets `None`.
pub(crate) async fn take_secret(state: &ConsoleState, member: &CurrentMember, id: &str) -> PageResult<Option<String>> {
    if id.is_empty() {
        return Ok(None);
    }
    let key = state.control().keys().console_secret(&member.id.as_uuid().to_string(), id);
    Ok(state.engine().take(&key).await?)
}

/// Keeps `parts` for the member's next page, like [`stash_secret`]: a secret with what its page
/// says of it. Only the last part may hold a newline (a name the member typed).
pub(crate) async fn stash_parts(state: &ConsoleState, member: &CurrentMember, parts: &[&str]) -> PageResult<String> {
    stash_secret(state, member, &parts.join("\n")).await
}

/// The `N` parts stashed as `id`, once (see [`take_secret`]); a missing part reads as empty.
pub(crate) async fn take_parts<const N: usize>(
    state: &ConsoleState,
    member: &CurrentMember,
    id: &str,
) -> PageResult<Option<[String; N]>> {
    let Some(text) = take_secret(state, member, id).await? else { return Ok(None) };
    let mut parts = text.splitn(N, '\n');
    Ok(Some(std::array::from_fn(|_| parts.next().unwrap_or_default().to_owned())))
}
