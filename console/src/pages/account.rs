//! The Account page `/account`: change the password (every session ends, this browser gets a fresh
//! one), the member's live sessions with "this browser" marked and a button to end any other, log
//! out everywhere, and deleting the account after typing its email. Every form carries a one-time
//! id (`once`) and redirects after acting.

use crate::cookies;
use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData, PagePath};
use crate::fields::FieldErrors;
use crate::flash;
use crate::form::{self, Outcome};
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
use uuid::Uuid;

const PATH: &str = "/account";

struct SessionRow {
    id: String,
    /// The id's first eight characters: enough to tell sessions apart.
    short: String,
    created: format::Instant,
    expires: format::Instant,
    current: bool,
    /// The browser and system it logged in with ("Firefox on Linux"), and the full user agent.
    device: String,
    user_agent: String,
    /// The client address it logged in from, or "".
    address: String,
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
            device: crate::device::describe(session.user_agent.as_deref()),
            user_agent: session.user_agent.unwrap_or_default(),
            address: session.address.unwrap_or_default(),
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
    origin: aqs_control_plane::sessions::Origin,
    form: FormData,
) -> PageResult {
    let change = PasswordChange {
        current_password: form.get("current_password").to_owned(),
        new_password: form.get("new_password").to_owned(),
    };
    let act = async {
        match auth::change_password(state.control(), member.id, change, origin).await {
            Ok(signed_in) => {
                let message = "Password changed. Every other session has ended; this browser stays logged in.";
                let mut response = flash::redirect(&state, member.secure, PATH, message);
                let cookie =
                    cookies::set(cookies::SESSION, &signed_in.session, cookies::SESSION_MAX_AGE_SECS, member.secure);
                response.headers_mut().append(SET_COOKIE, cookie);
                Ok(Outcome::answer(PATH, response))
            }
            Err(err) => Ok(Outcome::invalid(
                async {
                    let mut page = page(&state, &member).await?;
                    let mut errors = FieldErrors::from_api(err, &["current_password", "new_password"])?;
                    crate::checks::password_change(&mut errors, form.get("current_password"), form.get("new_password"));
                    page.password_errors = errors;
                    Ok::<_, ConsoleError>(page)
                }
                .await,
            )),
        }
    };
    form::run(&state, &member, &form, act).await
}

/// Ends one session; ending this browser's own is logging out.
pub(crate) async fn end_session(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> PageResult {
    let id = Uuid::try_parse(&id).map_err(|_| ConsoleError::NotFound)?;
    let act = async {
        let current = auth::verify_with_id(state.control(), &member.session).await?.1;
        Ok(match auth::end_session(state.control(), member.id, id).await {
            Ok(()) if id == current => {
                Outcome::answer("/login", super::auth::logged_out(&state, member.secure, "You are logged out."))
            }
            Ok(()) => Outcome::flash(PATH, "Session ended: it can no longer be used."),
            Err(ApiError::NotFound(_)) => Outcome::flash(PATH, "That session had already ended."),
            Err(err) => Outcome::refused(err),
        })
    };
    form::run(&state, &member, &form, act).await
}

/// Deletes the account once its email is typed; the browser is logged out.
pub(crate) async fn delete(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    let typed = form.get("confirm_email").trim().to_owned();
    let act = async {
        let confirm = AccountDeletion { confirm_email: typed.clone() };
        let found = auth::verify_session(state.control(), &member.session).await?;
        match account::delete(state.control(), &found, confirm, member.caller.origin.clone()).await {
            Ok(()) => {
                let message =
                    "Your account was deleted, with its queues, their messages and tokens, hosts and domains.";
                let mut response = flash::redirect(&state, member.secure, "/signup", message);
                response.headers_mut().append(SET_COOKIE, cookies::clear(cookies::SESSION, member.secure));
                Ok(Outcome::answer("/signup", response))
            }
            Err(err) => Ok(Outcome::invalid(
                async {
                    let mut page = page(&state, &member).await?;
                    page.confirm_email = typed.clone();
                    page.delete_errors = FieldErrors::from_api(err, &["confirm_email"])?;
                    Ok::<_, ConsoleError>(page)
                }
                .await,
            )),
        }
    };
    form::run(&state, &member, &form, act).await
}
