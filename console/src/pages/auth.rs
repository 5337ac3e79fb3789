//! Sign up, log in, log out and log out everywhere. The session is the control plane's session JWT in an HttpOnly
//! cookie; before logging in, the anonymous cookie gives the forms their CSRF token. Logging in or
//! signing up lands on the page that sent the visitor to the form (`next`), when that is a page of
//! this site.

use super::INVALID;
use crate::cookies;
use crate::csrf;
use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData, Visitor};
use crate::fields::FieldErrors;
use crate::flash;
use crate::layout::Chrome;
use crate::next;
use crate::state::ConsoleState;
use aqs_control_plane::sessions::Origin;
use aqs_control_plane::{Credentials, auth};
use aqs_core::ApiError;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::http::HeaderValue;
use axum::http::StatusCode;
use axum::http::header::{RETRY_AFTER, SET_COOKIE};
use axum::response::{IntoResponse, Response};

#[derive(Template, WebTemplate)]
#[template(path = "auth.html")]
struct AuthPage {
    chrome: Chrome,
    signup: bool,
    /// Where to go after logging in (already checked by `next::safe`); empty for the queue list.
    next: String,
    /// The other form (log in ⇄ sign up), with `next`.
    switch_url: String,
    email: String,
    errors: FieldErrors,
    min_password: usize,
}

#[derive(serde::Deserialize)]
pub(crate) struct NextQuery {
    #[serde(default)]
    next: String,
}

pub(crate) async fn signup_form(
    State(state): State<ConsoleState>,
    visitor: Visitor,
    Query(query): Query<NextQuery>,
) -> Response {
    guest_page(&state, visitor, true, &query.next, String::new(), FieldErrors::default(), StatusCode::OK).await
}

pub(crate) async fn login_form(
    State(state): State<ConsoleState>,
    visitor: Visitor,
    Query(query): Query<NextQuery>,
) -> Response {
    guest_page(&state, visitor, false, &query.next, String::new(), FieldErrors::default(), StatusCode::OK).await
}

/// The page to land on after logging in or signing up: a safe `next`, else the queue list.
fn landing(next: &str) -> &str {
    next::safe(next).unwrap_or("/")
}

/// Renders the sign-up or log-in form. A member who is already logged in goes to their queues; a
/// stale session cookie is dropped so that the form's token is bound to the anonymous id, which is
/// what the POST will carry.
async fn guest_page(
    state: &ConsoleState,
    visitor: Visitor,
    signup: bool,
    next: &str,
    email: String,
    errors: FieldErrors,
    status: StatusCode,
) -> Response {
    let mut set_cookies = Vec::new();
    if let Some(session) = visitor.cookies.get(cookies::SESSION) {
        if auth::verify_session(state.control(), session).await.is_ok() {
            return flash::see_other(landing(next));
        }
        set_cookies.push(cookies::clear(cookies::SESSION, visitor.secure));
    }
    let anon = match visitor.cookies.get(cookies::ANON) {
        Some(anon) => anon.to_owned(),
        None => {
            let anon = hex::encode(rand::random::<[u8; 16]>());
            set_cookies.push(cookies::set(cookies::ANON, &anon, cookies::ANON_MAX_AGE_SECS, visitor.secure));
            anon
        }
    };
    let title = if signup { "Sign up" } else { "Log in" };
    let page = AuthPage {
        chrome: Chrome::new(title, None, csrf::token(state, &anon), visitor.flash),
        signup,
        next: next::safe(next).unwrap_or_default().to_owned(),
        switch_url: next::form_url(if signup { "/login" } else { "/signup" }, next),
        email,
        errors,
        min_password: auth::PASSWORD_MIN_CHARS,
    };
    let mut response = (status, page).into_response();
    for cookie in set_cookies {
        response.headers_mut().append(SET_COOKIE, cookie);
    }
    response
}

pub(crate) async fn signup(
    State(state): State<ConsoleState>,
    origin: Origin,
    visitor: Visitor,
    form: FormData,
) -> PageResult {
    let email = form.get("email").trim().to_owned();
    let next = form.get("next");
    let credentials = Credentials { email: email.clone(), password: form.get("password").to_owned() };
    // Every field's problem at once: the control plane names its first, the checks add the rest.
    let all_problems = |mut errors: FieldErrors| {
        crate::checks::signup(&mut errors, &email, form.get("password"));
        errors
    };
    match auth::signup_from(state.control(), credentials, origin).await {
        Ok(signed_in) => Ok(signed_in_response(&state, &visitor, &signed_in.session, landing(next), "Welcome to AQS.")),
        Err(ApiError::Conflict(_)) => {
            let mut errors = FieldErrors::default();
            errors.add("email", "an account with this email already exists; log in instead");
            let errors = all_problems(errors);
            Ok(guest_page(&state, visitor, true, next, email, errors, INVALID).await)
        }
        Err(err @ ApiError::ServiceUnavailable { .. }) => Ok(try_later(&state, visitor, true, next, email, err).await),
        Err(err) => {
            let errors = all_problems(FieldErrors::from_api(err, &["email", "password"])?);
            Ok(guest_page(&state, visitor, true, next, email, errors, INVALID).await)
        }
    }
}

pub(crate) async fn login(
    State(state): State<ConsoleState>,
    origin: Origin,
    visitor: Visitor,
    form: FormData,
) -> PageResult {
    let email = form.get("email").trim().to_owned();
    let next = form.get("next");
    let credentials = Credentials { email: email.clone(), password: form.get("password").to_owned() };
    match auth::login(state.control(), credentials, origin).await {
        Ok(signed_in) => {
            Ok(signed_in_response(&state, &visitor, &signed_in.session, landing(next), "You are logged in."))
        }
        Err(ApiError::Unauthorized(_)) => {
            let mut errors = FieldErrors::default();
            errors.set_form("wrong email or password");
            Ok(guest_page(&state, visitor, false, next, email, errors, INVALID).await)
        }
        Err(err @ (ApiError::InvalidRequest(_) | ApiError::InvalidField { .. })) => {
            let errors = FieldErrors::from_api(err, &["email"])?;
            Ok(guest_page(&state, visitor, false, next, email, errors, INVALID).await)
        }
        Err(err @ (ApiError::RateLimited { .. } | ApiError::ServiceUnavailable { .. })) => {
            Ok(try_later(&state, visitor, false, next, email, err).await)
        }
        Err(err) => Err(ConsoleError::from(err)),
    }
}

/// The form again, saying when to try again: too many failed log-ins (429), or too many password
/// checks at once (503). The status and `Retry-After` are the API's.
async fn try_later(
    state: &ConsoleState,
    visitor: Visitor,
    signup: bool,
    next: &str,
    email: String,
    err: ApiError,
) -> Response {
    let (message, retry_after) = match &err {
        ApiError::RateLimited { retry_after_secs, .. } => (
            format!(
                "Too many failed log-ins. For your account's safety, try again in {}.",
                aqs_control_plane::login_throttle::wait_in_words(*retry_after_secs)
            ),
            *retry_after_secs,
        ),
        ApiError::ServiceUnavailable { retry_after_secs, .. } => {
            ("The service is busy checking other passwords; try again in a few seconds.".to_owned(), *retry_after_secs)
        }
        _ => (err.to_string(), 1),
    };
    let mut errors = FieldErrors::default();
    errors.set_form(message);
    let mut response = guest_page(state, visitor, signup, next, email, errors, err.status()).await;
    response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(retry_after));
    response
}

fn signed_in_response(
    state: &ConsoleState,
    visitor: &Visitor,
    session: &str,
    location: &str,
    message: &str,
) -> Response {
    let mut response = flash::redirect(state, visitor.secure, location, message);
    let cookie = cookies::set(cookies::SESSION, session, cookies::SESSION_MAX_AGE_SECS, visitor.secure);
    response.headers_mut().append(SET_COOKIE, cookie);
    response
}

/// Ends the session on the server (a copy of the cookie opens nothing afterwards) and drops the
/// cookie. A session that had already ended is logged out all the same.
pub(crate) async fn logout(State(state): State<ConsoleState>, visitor: Visitor) -> PageResult {
    if let Some(session) = visitor.cookies.get(cookies::SESSION) {
        match auth::logout(state.control(), session).await {
            Ok(()) | Err(ApiError::Unauthorized(_)) => {}
            Err(err) => return Err(ConsoleError::from(err)),
        }
    }
    Ok(logged_out(&state, visitor.secure, "You are logged out."))
}

/// Ends every session of the member, on every browser and API client, this one included.
pub(crate) async fn logout_all(State(state): State<ConsoleState>, member: CurrentMember) -> PageResult {
    auth::logout_everywhere(state.control(), member.id).await?;
    Ok(logged_out(&state, member.secure, "You are logged out everywhere."))
}

pub(crate) fn logged_out(state: &ConsoleState, secure: bool, message: &str) -> Response {
    let mut response = flash::redirect(state, secure, "/login", message);
    response.headers_mut().append(SET_COOKIE, cookies::clear(cookies::SESSION, secure));
    response
}
