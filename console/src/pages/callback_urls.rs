//! The operator page `/admin/callback-urls`: find a member by email, then list, authorise and
//! withdraw the callback URL prefixes their push handler URLs must lie under. Withdrawing one
//! stops push on the member's queues that no remaining prefix covers; the flash names them.
//!
//! Only operators reach it ([`CurrentOperator`]); everyone else, logged out included, gets the
//! 404 page, as the operator API answers 404 to everyone else.

use super::INVALID;
use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentOperator, FormData};
use crate::fields::FieldErrors;
use crate::flash;
use crate::format;
use crate::layout::Chrome;
use crate::state::ConsoleState;
use aqs_control_plane::admin::{self, CallbackUrl};
use aqs_control_plane::{AuthOperator, Member};
use aqs_core::ApiError;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

const PATH: &str = "/admin/callback-urls";

struct PrefixRow {
    id: String,
    prefix: String,
    added: format::Instant,
}

impl From<CallbackUrl> for PrefixRow {
    fn from(url: CallbackUrl) -> Self {
        Self { id: url.id.to_string(), added: format::instant_at(&url.created_at), prefix: url.prefix }
    }
}

/// The member found by email, with their prefixes.
struct Found {
    email: String,
    /// The email as a query parameter, for links back to this member.
    query: String,
    rows: Vec<PrefixRow>,
}

#[derive(Template, WebTemplate)]
#[template(path = "callback_urls.html")]
pub(crate) struct CallbackUrlsPage {
    chrome: Chrome,
    email: String,
    found: Option<Found>,
    prefix: String,
    errors: FieldErrors,
}

#[derive(Template, WebTemplate)]
#[template(path = "callback_url_remove.html")]
pub(crate) struct RemovePage {
    chrome: Chrome,
    email: String,
    query: String,
    row: PrefixRow,
}

#[derive(Deserialize)]
pub(crate) struct Search {
    #[serde(default)]
    email: String,
}

#[derive(Deserialize)]
pub(crate) struct RemoveQuery {
    #[serde(default)]
    email: String,
    #[serde(default)]
    id: String,
}

fn email_query(email: &str) -> String {
    form_urlencoded::Serializer::new(String::new()).append_pair("email", email).finish()
}

fn member_key(member: &Member) -> String {
    member.id.as_uuid().to_string()
}

/// The member with `email`; "no such member" is an error beside the email field.
async fn find(
    state: &ConsoleState,
    op: &AuthOperator,
    email: &str,
    errors: &mut FieldErrors,
) -> PageResult<Option<Member>> {
    if email.trim().is_empty() {
        return Ok(None);
    }
    match admin::find_member(state.control(), op, email).await {
        Ok(member) => Ok(Some(member)),
        Err(ApiError::NotFound(message)) => {
            errors.add("email", message);
            Ok(None)
        }
        Err(ApiError::InvalidField { message, .. } | ApiError::InvalidRequest(message)) => {
            errors.add("email", message);
            Ok(None)
        }
        Err(err) => Err(err.into()),
    }
}

async fn page(
    state: &ConsoleState,
    op: &CurrentOperator,
    email: &str,
    prefix: String,
    mut errors: FieldErrors,
) -> PageResult<CallbackUrlsPage> {
    let found = match find(state, &op.operator, email, &mut errors).await? {
        Some(member) => {
            let urls = admin::list_callback_urls(state.control(), &op.operator, &member_key(&member)).await?;
            Some(Found {
                query: email_query(&member.email),
                email: member.email,
                rows: urls.into_iter().map(PrefixRow::from).collect(),
            })
        }
        None => None,
    };
    Ok(CallbackUrlsPage {
        chrome: op.member.chrome("Callback URLs"),
        email: email.trim().to_owned(),
        found,
        prefix,
        errors,
    })
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    Query(search): Query<Search>,
) -> PageResult<CallbackUrlsPage> {
    page(&state, &op, &search.email, String::new(), FieldErrors::default()).await
}

pub(crate) async fn add(State(state): State<ConsoleState>, op: CurrentOperator, form: FormData) -> PageResult {
    let email = form.get("email").trim();
    let prefix = form.get("prefix").trim();
    let mut errors = FieldErrors::default();
    if let Some(member) = find(&state, &op.operator, email, &mut errors).await? {
        match admin::add_callback_url(
            state.control(),
            &op.operator,
            &op.member.caller.origin,
            &member_key(&member),
            prefix,
        )
        .await
        {
            Ok(added) => {
                let message = format!("Authorised {} for {}.", added.prefix, member.email);
                let location = format!("{PATH}?{}", email_query(&member.email));
                return Ok(flash::redirect(&state, op.member.secure, &location, &message));
            }
            Err(err) => errors = FieldErrors::from_api(err, &["prefix"])?,
        }
    } else if errors.is_empty() {
        errors.add("email", "enter the member's email");
    }
    let page = page(&state, &op, email, prefix.to_owned(), errors).await?;
    Ok((INVALID, page).into_response())
}

/// The prefix `id` of the member with `email`, or the 404 page.
async fn find_row(state: &ConsoleState, op: &AuthOperator, email: &str, id: &str) -> PageResult<(Member, PrefixRow)> {
    let member = admin::find_member(state.control(), op, email).await?;
    let row = admin::list_callback_urls(state.control(), op, &member_key(&member))
        .await?
        .into_iter()
        .find(|url| url.id.to_string() == id)
        .ok_or(ConsoleError::NotFound)?;
    Ok((member, row.into()))
}

pub(crate) async fn confirm_remove(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    Query(query): Query<RemoveQuery>,
) -> PageResult<RemovePage> {
    let (member, row) = find_row(&state, &op.operator, &query.email, &query.id).await?;
    Ok(RemovePage {
        chrome: op.member.chrome(format!("Withdraw {}", row.prefix)),
        query: email_query(&member.email),
        email: member.email,
        row,
    })
}

pub(crate) async fn remove(
    State(state): State<ConsoleState>,
    op: CurrentOperator,
    form: FormData,
) -> PageResult<Response> {
    let (member, row) = find_row(&state, &op.operator, form.get("email"), form.get("id")).await?;
    let stopped = admin::remove_callback_url(
        state.control(),
        &op.operator,
        &op.member.caller.origin,
        &member_key(&member),
        &row.id,
    )
    .await?;
    let mut message = format!("Withdrew {} from {}.", row.prefix, member.email);
    if stopped.is_empty() {
        message.push_str(" No queue's push was affected.");
    } else {
        message.push_str(&format!(" Push stopped on: {}.", stopped.join(", ")));
    }
    let location = format!("{PATH}?{}", email_query(&member.email));
    Ok(flash::redirect(&state, op.member.secure, &location, &message))
}
