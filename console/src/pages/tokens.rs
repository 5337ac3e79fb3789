//! The Tokens tab: the queue's tokens (name, scopes, last four, created, last used), minting one
//! (the form redirects to a page that shows its secret once; a resubmission mints nothing: see
//! `once`) and revoking one after a confirmation page (whose form is one-time too).

use super::load_queue;
use crate::error::{ConsoleError, PageResult};
use crate::extract::PagePath;
use crate::extract::{CurrentMember, FormData};
use crate::fields::FieldErrors;
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::slug::Slug;
use aqs_control_plane::{NewToken, TeamRole, Token, tokens};
use aqs_core::token::Scope;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};

struct Row {
    id: String,
    name: String,
    scopes: String,
    last_four: String,
    created: format::Instant,
    last_used: Option<format::Instant>,
    revoked: Option<format::Instant>,
    /// Has the `manage` scope: only an admin revokes it.
    manage: bool,
}

fn scopes_text(scopes: &[Scope]) -> String {
    scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

impl From<Token> for Row {
    fn from(token: Token) -> Self {
        Self {
            id: token.id.to_string(),
            scopes: scopes_text(&token.scopes),
            last_four: token.last_four,
            created: format::instant_at(&token.created_at),
            last_used: token.last_used_at.as_ref().map(format::instant_at),
            revoked: token.revoked_at.as_ref().map(format::instant_at),
            manage: token.scopes.contains(&Scope::Manage),
            name: token.name,
        }
    }
}

/// The role that mints or revokes a token: a developer's, unless the token has the `manage` scope
/// (payloads, purges, dead letters), which is an admin's.
fn token_role(manage: bool) -> TeamRole {
    if manage { TeamRole::Admin } else { TeamRole::Developer }
}

/// A scope checkbox of the new-token form.
struct ScopeChoice {
    value: &'static str,
    label: &'static str,
    checked: bool,
}

fn scope_choices(checked: &[&str]) -> Vec<ScopeChoice> {
    [
        ("send", "send: publish messages"),
        ("consume", "consume: receive, acknowledge and return messages"),
        ("manage", "manage: read payloads, purge, handle dead letters"),
    ]
    .into_iter()
    .map(|(value, label)| ScopeChoice { value, label, checked: checked.contains(&value) })
    .collect()
}

#[derive(Template, WebTemplate)]
#[template(path = "tokens.html")]
pub(crate) struct TokensPage {
    chrome: Chrome,
    nav: QueueNav,
    rows: Vec<Row>,
    name: String,
    scopes: Vec<ScopeChoice>,
    errors: FieldErrors,
    form_id: String,
}

#[derive(Template, WebTemplate)]
#[template(path = "token_created.html")]
struct CreatedPage {
    chrome: Chrome,
    nav: QueueNav,
    name: String,
    scopes: String,
    /// On the first view only.
    secret: Option<String>,
}

#[derive(Template, WebTemplate)]
#[template(path = "token_revoke.html")]
pub(crate) struct RevokePage {
    chrome: Chrome,
    nav: QueueNav,
    token: Row,
    form_id: String,
}

async fn tokens_page(
    state: &ConsoleState,
    member: &CurrentMember,
    slug: &Slug,
    name: String,
    checked: &[&str],
    errors: FieldErrors,
) -> PageResult<TokensPage> {
    let queue = load_queue(state, member, slug).await?;
    let rows = tokens::list(state.control(), member.team, slug).await?.into_iter().map(Row::from).collect();
    let nav = QueueNav::new(&queue, Tab::Tokens);
    Ok(TokensPage {
        chrome: member.chrome(nav.title(Tab::Tokens)),
        nav,
        rows,
        name,
        scopes: scope_choices(checked),
        errors,
        form_id: once::new_id(),
    })
}

pub(crate) async fn show(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<TokensPage> {
    tokens_page(&state, &member, &slug, String::new(), &["send", "consume"], FieldErrors::default()).await
}

pub(crate) async fn create(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    form: FormData,
) -> PageResult {
    let name = form.get("name").trim().to_owned();
    let scopes = form.all("scopes");
    load_queue(&state, &member, &slug).await?;
    member.may_change(token_role(scopes.contains(&"manage")))?;
    let input = NewToken { name: name.clone(), scopes: scopes.iter().map(|s| s.to_string()).collect() };
    let act = async {
        match tokens::mint(state.control(), &member.caller, &slug, input).await {
            Ok(created) => {
                // The name last: it is the one part that may hold any character.
                let scopes = scopes_text(&created.token.scopes);
                let parts = [scopes.as_str(), created.secret.expose(), created.token.name.as_str()];
                let shown = once::stash_parts(&state, &member, &parts).await?;
                Ok(Outcome::see_other(format!("/queues/{slug}/tokens/created?shown={shown}")))
            }
            Err(err) => Ok(Outcome::invalid(
                async {
                    let mut errors = FieldErrors::from_api(err, &["name", "scopes"])?;
                    crate::checks::token(&mut errors, &name, &scopes);
                    tokens_page(&state, &member, &slug, name.clone(), &scopes, errors).await
                }
                .await,
            )),
        }
    };
    form::run(&state, &member, &form, act).await
}

/// Where minting lands: the token's secret on the first view; a reload says it was shown once.
pub(crate) async fn created(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    Query(query): Query<super::create_queue::ShownQuery>,
) -> PageResult {
    let queue = load_queue(&state, &member, &slug).await?;
    let (scopes, secret, name) = match once::take_parts(&state, &member, query.shown()).await? {
        Some([scopes, secret, name]) => (scopes, Some(secret), name),
        None => Default::default(),
    };
    let nav = QueueNav::new(&queue, Tab::Tokens);
    let page = CreatedPage { chrome: member.chrome(nav.title(Tab::Tokens)), nav, name, scopes, secret };
    Ok(page.into_response())
}

/// The member's token `id` of queue `slug`, or the 404 page.
async fn find_token(state: &ConsoleState, member: &CurrentMember, slug: &Slug, id: &str) -> PageResult<Token> {
    tokens::list(state.control(), member.team, slug)
        .await?
        .into_iter()
        .find(|t| t.id.to_string() == id)
        .ok_or(ConsoleError::NotFound)
}

pub(crate) async fn confirm_revoke(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath((slug, id)): PagePath<(Slug, String)>,
) -> PageResult<RevokePage> {
    let queue = load_queue(&state, &member, &slug).await?;
    let token = find_token(&state, &member, &slug, &id).await?;
    member.may_change(token_role(token.scopes.contains(&Scope::Manage)))?;
    let nav = QueueNav::new(&queue, Tab::Tokens);
    Ok(RevokePage {
        chrome: member.chrome(format!("Revoke {}", token.name)),
        nav,
        token: token.into(),
        form_id: once::new_id(),
    })
}

pub(crate) async fn revoke(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath((slug, id)): PagePath<(Slug, String)>,
    form: FormData,
) -> PageResult<Response> {
    let token = find_token(&state, &member, &slug, &id).await?;
    member.may_change(token_role(token.scopes.contains(&Scope::Manage)))?;
    let act = async {
        if let Err(err) = tokens::revoke(state.control(), &member.caller, &slug, &id).await {
            return Ok(Outcome::refused(err));
        }
        let message = format!(
            "Token “{}” (…{}) revoked. Requests using it are refused from now on.",
            token.name, token.last_four
        );
        Ok(Outcome::flash(format!("/queues/{slug}/tokens"), message))
    };
    form::run(&state, &member, &form, act).await
}
