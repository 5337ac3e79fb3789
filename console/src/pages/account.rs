//! The Account page `/account`: change the password (every session ends, this browser gets a fresh
//! one), the member's live sessions with "this browser" marked and a button to end any other, log
//! out everywhere, and deleting the account after typing its email. Every form carries a one-time
//! id (`once`) and redirects after acting.

use super::INVALID;
use crate::cookies;
use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData, PagePath};
use crate::fields::FieldErrors;
use crate::flash;
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use aqs_control_plane::account::{self, AccountDeletion};
use aqs_control_plane::{PasswordChange, Session, auth};
use aqs_core::ApiError;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::header::SET_COOKIE;
use axum::response::IntoResponse;
use uuid::Uuid;

const PATH: &str = "/account";

struct SessionRow {
    id: String,
    /// The id's first eight characters: enough to tell sessions apart.
    short: String,
    created: format::Instant,
    expires: format::Instant,
    current: bool,
}

impl From<Session> for SessionRow {
    fn from(session: Session) -> Self {
        let ms = |at: chrono::DateTime<chrono::Utc>| format::instant(at.timestamp_millis().max(0) as u64);
        Self {
            id: session.id.to_string(),
            short: session.id.simple().to_string()[..8].to_owned(),
            created: ms(session.created_at),
            expires: ms(session.expires_at),
            current: session.current,
        }
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "account.html")]
pub(crate) struct AccountPage {
    chrome: Chrome,
    email: String,
    sessions: Vec<SessionRow>,
    min_password: usize,
    password_errors: FieldErrors,
    confirm_email: String,
    delete_errors: FieldErrors,
}

impl AccountPage {
    /// A fresh one-time id for each form on the page (see `once`).
    fn form_id(&self) -> String {
        once::new_id()
    }
}

async fn page(state: &ConsoleState, member: &CurrentMember) -> PageResult<AccountPage> {
    let sessions = auth::sessions(state.control(), &member.session).await?;
    Ok(AccountPage {
        chrome: member.chrome("Account"),
        email: member.email.clone(),
        sessions: sessions.into_iter().map(SessionRow::from).collect(),
        min_password: auth::PASSWORD_MIN_CHARS,
        password_errors: FieldErrors::default(),
        confirm_email: String::new(),
        delete_errors: FieldErrors::default(),
    })
}

pub(crate) async fn show(State(state): State<ConsoleState>, member: CurrentMember) -> PageResult<AccountPage> {
    page(&state, &member).await
}

/// Ends every session of the member and gives this browser a fresh one.
pub(crate) async fn change_password(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    form: FormData,
) -> PageResult {
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    let change = PasswordChange {
        current_password: form.get("current_password").to_owned(),
        new_password: form.get("new_password").to_owned(),
    };
    match auth::change_password(state.control(), member.id, change).await {
        Ok(signed_in) => {
            claim.done(&state, PATH).await?;
            let message = "Password changed. Every other session has ended; this browser stays logged in.";
            let mut response = flash::redirect(&state, member.secure, PATH, message);
            let cookie =
                cookies::set(cookies::SESSION, &signed_in.session, cookies::SESSION_MAX_AGE_SECS, member.secure);
            response.headers_mut().append(SET_COOKIE, cookie);
            Ok(response)
        }
        Err(err) => {
            claim.release(&state).await?;
            let mut page = page(&state, &member).await?;
            page.password_errors = FieldErrors::from_api(err, &["current_password", "new_password"])?;
            Ok((INVALID, page).into_response())
        }
    }
}

/// Ends one session; ending this browser's own is logging out.
pub(crate) async fn end_session(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> PageResult {
    let id = Uuid::try_parse(&id).map_err(|_| ConsoleError::NotFound)?;
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    let current = auth::verify_with_id(state.control(), &member.session).await?.1;
    match auth::end_session(state.control(), member.id, id).await {
        Ok(()) if id == current => {
            claim.done(&state, "/login").await?;
            Ok(super::auth::logged_out(&state, member.secure, "You are logged out."))
        }
        Ok(()) => {
            claim.done(&state, PATH).await?;
            Ok(flash::redirect(&state, member.secure, PATH, "Session ended: it can no longer be used."))
        }
        Err(ApiError::NotFound(_)) => {
            claim.done(&state, PATH).await?;
            Ok(flash::redirect(&state, member.secure, PATH, "That session had already ended."))
        }
        Err(err) => {
            claim.release(&state).await?;
            Err(err.into())
        }
    }
}

/// Deletes the account once its email is typed; the browser is logged out.
pub(crate) async fn delete(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    let claim = match once::claim(&state, &member, &form).await? {
        Ok(claim) => claim,
        Err(replayed) => return Ok(replayed),
    };
    let typed = form.get("confirm_email").trim().to_owned();
    let confirm = AccountDeletion { confirm_email: typed.clone() };
    let found = auth::verify_session(state.control(), &member.session).await?;
    match account::delete(state.control(), &found, confirm).await {
        Ok(()) => {
            claim.done(&state, "/signup").await?;
            let message = "Your account was deleted, with its queues, their messages and tokens, hosts and domains.";
            let mut response = flash::redirect(&state, member.secure, "/signup", message);
            response.headers_mut().append(SET_COOKIE, cookies::clear(cookies::SESSION, member.secure));
            Ok(response)
        }
        Err(err) => {
            claim.release(&state).await?;
            let mut page = page(&state, &member).await?;
            page.confirm_email = typed;
            page.delete_errors = FieldErrors::from_api(err, &["confirm_email"])?;
            Ok((INVALID, page).into_response())
        }
    }
}
