//! `ConsoleError`: what can go wrong on a console page, rendered once as an HTML error page (or,
//! for a logged-out visitor, a redirect to log in). Server faults are logged here and shown as an
//! opaque message; the control plane's error text is shown only for client mistakes. The 404 page
//! and the refused-form pages of a logged-in member keep the account menu ([`error_pages_with_menu`]).

use crate::flash;
use crate::layout::Chrome;
use aqs_core::ApiError;
use askama::Template;
use askama_web::WebTemplate;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

#[derive(Debug)]
pub(crate) enum ConsoleError {
    /// Not logged in, or the session expired: go to the log-in page.
    LoginRequired,
    /// The same, on a page worth coming back to: log in, then return to this path (and query).
    LoginToReturn(String),
    /// No such page, or a queue or token of another member (never revealed).
    NotFound,
    /// A POST without a valid CSRF token.
    Csrf,
    /// The member's role in the team is too low for this (the message names the role needed), or
    /// the team is suspended and its forms are refused: a 403 page.
    Forbidden {
        heading: &'static str,
        message: String,
    },
    BadRequest(String),
    Unavailable,
    Internal(anyhow::Error),
}

pub(crate) type PageResult<T = Response> = Result<T, ConsoleError>;

/// The `Retry-After` of a 503 page.
const RETRY_AFTER_SECS: u64 = 1;

/// Layer on the pages: while PostgreSQL is down they answer the 503 page at once, without waiting
/// for a connection. Static assets need no database and pass.
pub(crate) async fn require_database(
    axum::extract::State(state): axum::extract::State<crate::state::ConsoleState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if !state.control().database_is_up() && !request.uri().path().starts_with("/static/") {
        return ConsoleError::Unavailable.into_response();
    }
    next.run(request).await
}

/// A storage failure is answered as the API would answer it (unavailable: the 503 page).
impl From<aqs_engine::StorageError> for ConsoleError {
    fn from(err: aqs_engine::StorageError) -> Self {
        Self::from(ApiError::from(err))
    }
}

impl From<ApiError> for ConsoleError {
    fn from(err: ApiError) -> Self {
        match err {
            ApiError::Unauthorized(_) => Self::LoginRequired,
            ApiError::NotFound(_) => Self::NotFound,
            ApiError::Forbidden(message) => {
                Self::Forbidden { heading: "Your role does not allow this", message: crate::fields::sentence(&message) }
            }
            ApiError::TeamSuspended(message) => Self::Forbidden {
                heading: "This team is suspended",
                message: format!("{} Its pages are read-only.", crate::fields::sentence(&message)),
            },
            ApiError::ServiceUnavailable { .. } => Self::Unavailable,
            ApiError::Internal(err) => Self::Internal(err),
            other if other.status().is_client_error() => Self::BadRequest(other.to_string()),
            other => Self::Internal(anyhow::Error::new(other)),
        }
    }
}

#[derive(Template, WebTemplate)]
#[template(path = "error.html")]
struct ErrorPage {
    chrome: Chrome,
    heading: &'static str,
    message: String,
}

impl IntoResponse for ConsoleError {
    fn into_response(self) -> Response {
        let (status, heading, message) = match self {
            Self::LoginRequired => return flash::see_other("/login"),
            Self::LoginToReturn(path) => return flash::see_other(&crate::next::login_url(&path)),
            Self::NotFound => {
                (StatusCode::NOT_FOUND, "Not found", "There is nothing here, or it is not yours to see.".to_owned())
            }
            Self::Csrf => (
                StatusCode::FORBIDDEN,
                "The form has expired",
                "This form was not sent from a page of this console, or your session changed since it was \
                 shown. Go back, reload the page and try again."
                    .to_owned(),
            ),
            Self::Forbidden { heading, message } => (StatusCode::FORBIDDEN, heading, message),
            Self::BadRequest(message) => (StatusCode::BAD_REQUEST, "That did not work", message),
            Self::Unavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                "Temporarily unavailable",
                "The service cannot reach its storage right now. Try again in a few seconds.".to_owned(),
            ),
            Self::Internal(err) => {
                tracing::error!(error = ?err, "console: internal error");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Something went wrong",
                    "An internal error occurred; it has been logged. Try again shortly.".to_owned(),
                )
            }
        };
        let page = ErrorPage { chrome: Chrome::bare(heading), heading, message: message.clone() };
        let mut response = (status, page).into_response();
        if matches!(status, StatusCode::NOT_FOUND | StatusCode::BAD_REQUEST | StatusCode::FORBIDDEN) {
            response.extensions_mut().insert(PageWithoutMenu { heading, message });
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            // As on the APIs: a browser or a script may come back after this many seconds.
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        response
    }
}

/// Marks an error page a member may land on (404, a refused form, an expired form), so that
/// [`error_pages_with_menu`] can render it again with the account menu.
#[derive(Clone)]
struct PageWithoutMenu {
    heading: &'static str,
    message: String,
}

/// Layer on the pages: an error page, rendered without knowing who asked, is rendered again with
/// the account menu when the request carries a live session, so a member is never left without
/// navigation. Only those error pages pay for the lookup.
pub(crate) async fn error_pages_with_menu(
    axum::extract::State(state): axum::extract::State<crate::state::ConsoleState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let cookies = crate::cookies::Cookies::from_headers(request.headers());
    let session = cookies.get(crate::cookies::SESSION).map(str::to_owned);
    let response = next.run(request).await;
    let (Some(session), Some(page)) = (session, response.extensions().get::<PageWithoutMenu>().cloned()) else {
        return response;
    };
    let Ok(member) = aqs_control_plane::auth::verify_session(state.control(), &session).await else {
        return response;
    };
    let mut chrome = Chrome::new(page.heading, Some(member.email.clone()), crate::csrf::token(&state, &session), None);
    chrome.operator = aqs_control_plane::AuthOperator::from_member(member).is_some();
    let status = response.status();
    (status, ErrorPage { chrome, heading: page.heading, message: page.message }).into_response()
}
