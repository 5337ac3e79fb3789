//! The one flow of every state-changing form: claim the form's one-time id (`once`), act, then
//! either record where the result is shown and send the browser there, or, when nothing was done,
//! free the id and answer with the form again (with its errors) or an error page. A handler keeps
//! only what is its own: reading and checking its fields, the action, and its page.
//!
//! The CSRF token is not checked here: `csrf::guard` checks it on every POST before any handler
//! runs, one-time form or not.
//!
//! A fault the action returns with `?` keeps the claim: the action may have happened (a queue
//! created, then its token's secret not stashed), so a resend is answered as a replay rather than
//! risk acting twice. An action that knows it did nothing says so with [`Outcome::NotDone`].

use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData};
use crate::flash;
use crate::once;
use crate::pages::INVALID;
use crate::state::ConsoleState;
use axum::response::{IntoResponse, Response};

/// What a claimed form's action came to.
pub(crate) enum Outcome {
    /// Done: the browser is sent to `location` (a 303), with `message` shown there when given. A
    /// replay of the form is sent there too.
    Redirect { location: String, message: Option<String> },
    /// Done, answered by `response` (one that also sets a cookie, or leaves for another site); a
    /// replay of the form is sent to `replay_to`.
    Answer { replay_to: String, response: Response },
    /// Nothing was done: the claim is freed, so the corrected form can be sent with the same id,
    /// and this is the answer (the form again with its errors, or an error page).
    NotDone(PageResult),
}

impl Outcome {
    /// Done; the page at `location` shows `message`.
    pub(crate) fn flash(location: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Redirect { location: location.into(), message: Some(message.into()) }
    }

    /// Done; the browser goes to `location` with no message (the page says what happened).
    pub(crate) fn see_other(location: impl Into<String>) -> Self {
        Self::Redirect { location: location.into(), message: None }
    }

    /// Done, answered by `response`; a replay goes to `replay_to`.
    pub(crate) fn answer(replay_to: impl Into<String>, response: Response) -> Self {
        Self::Answer { replay_to: replay_to.into(), response }
    }

    /// Nothing was done: the form is shown again, with its errors, as a 422 (or the error page,
    /// when the form could not be shown).
    pub(crate) fn invalid(page: PageResult<impl IntoResponse>) -> Self {
        Self::NotDone(page.map(|page| (INVALID, page).into_response()))
    }

    /// Nothing was done: the error page.
    pub(crate) fn refused(err: impl Into<ConsoleError>) -> Self {
        Self::NotDone(Err(err.into()))
    }

    /// Done when `result` is a flash message for `location`; not done when it is an error.
    pub(crate) fn flash_or_refused(location: &str, result: PageResult<String>) -> Self {
        match result {
            Ok(message) => Self::flash(location, message),
            Err(err) => Self::refused(err),
        }
    }
}

/// Runs `act` once per form: a form sent again (a reload, Back and resend, a double click) is
/// answered with a redirect to what its first sending did, and `act` is not run.
pub(crate) async fn run(
    state: &ConsoleState,
    member: &CurrentMember,
    form: &FormData,
    act: impl Future<Output = PageResult<Outcome>>,
) -> PageResult {
    let claim = match once::claim(state, member, form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    match act.await? {
        Outcome::Redirect { location, message } => {
            claim.done(state, &location).await?;
            Ok(match message {
                Some(message) => flash::redirect(state, member.secure, &location, &message),
                None => flash::see_other(&location),
            })
        }
        Outcome::Answer { replay_to, response } => {
            claim.done(state, &replay_to).await?;
            Ok(response)
        }
        Outcome::NotDone(answer) => {
            claim.release(state).await?;
            answer
        }
    }
}
