//! Create queue: a name (with the address it will get shown before creating: a "Preview address"
//! button without JavaScript, live as you type with it; a taken address is said, with the suffix
//! it gets instead, and a name the member already uses is warned about here and on the "created"
//! page, never refused), the visibility timeout, the maximum attempts and the payload size, or the
//! defaults. On success the form redirects to the "created" page, which shows the first token once
//! (a reload shows it no more; a resubmission creates nothing: see `once`). At the team's queue
//! limit, or to a role below admin, the form is shown disabled with the reason, before anything is
//! typed.

use super::INVALID;
use super::load_queue;
use crate::error::PageResult;
use crate::extract::{CurrentMember, FormData, PagePath};
use crate::fields::{self, FieldErrors};
use crate::form::{self, Outcome};
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use aqs_control_plane::slug::Slug;
use aqs_control_plane::teams::store;
use aqs_control_plane::{NewQueue, QueueChanges, TeamRole, queues, slug};
use aqs_core::limits::{
    MAX_ATTEMPTS_DEFAULT, MAX_ATTEMPTS_MAX, MIB, PAYLOAD_SIZE_DEFAULT, PAYLOAD_SIZES, VISIBILITY_DEFAULT_SECS,
    VISIBILITY_MAX_SECS,
};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use serde::Deserialize;

const FIELDS: [&str; 4] = ["name", "visibility_timeout_seconds", "max_attempts", "payload_size"];

/// One `<option>` of the payload size select.
pub(crate) struct PayloadOption {
    pub value: u64,
    pub label: String,
    pub selected: bool,
}

pub(crate) fn payload_options(selected: u64) -> Vec<PayloadOption> {
    PAYLOAD_SIZES
        .iter()
        .map(|&size| PayloadOption {
            value: size,
            label: if size == PAYLOAD_SIZE_DEFAULT {
                format!("{} MiB (included)", size / MIB)
            } else {
                format!("{} MiB (paid add-on)", size / MIB)
            },
            selected: size == selected,
        })
        .collect()
}

#[derive(Template, WebTemplate)]
#[template(path = "create_queue.html")]
struct CreatePage {
    chrome: Chrome,
    name: String,
    visibility: String,
    attempts: String,
    payload_options: Vec<PayloadOption>,
    /// What the address will be, once previewed.
    preview: Option<String>,
    errors: FieldErrors,
    visibility_max: u32,
    attempts_max: u32,
    form_id: String,
    /// The team has as many queues as allowed: the form is shown disabled, saying why.
    at_limit: bool,
    limit: i64,
    /// The member's role may not create queues (or the team is suspended): the form is shown
    /// disabled, saying why.
    may_create: bool,
}

#[derive(Template, WebTemplate)]
#[template(path = "queue_created.html")]
struct CreatedPage {
    chrome: Chrome,
    name: String,
    slug: String,
    address: String,
    /// The first token's secret, on the first view only.
    secret: Option<String>,
    /// The member's other queues with the same name: (name, address).
    same_name: Vec<(String, String)>,
}

/// The team's queue limit, and whether it has reached it.
pub(crate) async fn queue_limit(state: &ConsoleState, member: &CurrentMember) -> PageResult<(i64, bool)> {
    let limit = store::max_queues(state.control().db(), member.team).await?;
    Ok((limit, queues::list(state.control(), member.team).await?.len() as i64 >= limit))
}

pub(crate) async fn form(State(state): State<ConsoleState>, member: CurrentMember) -> PageResult {
    let (limit, at_limit) = queue_limit(&state, &member).await?;
    Ok(CreatePage {
        chrome: member.chrome("Create queue"),
        name: String::new(),
        visibility: VISIBILITY_DEFAULT_SECS.to_string(),
        attempts: MAX_ATTEMPTS_DEFAULT.to_string(),
        payload_options: payload_options(PAYLOAD_SIZE_DEFAULT),
        preview: None,
        errors: FieldErrors::default(),
        visibility_max: VISIBILITY_MAX_SECS,
        attempts_max: MAX_ATTEMPTS_MAX,
        form_id: once::new_id(),
        at_limit,
        limit,
        may_create: member.may(TeamRole::Admin),
    }
    .into_response())
}

/// The address a queue of this name gets, or why it cannot have one. A slug another queue holds
/// gets a random suffix at create, so the preview says so rather than show an address the queue
/// will not have; a name the member already gave a queue is allowed (names are labels, slugs are
/// unique) and the preview warns about it.
async fn address_preview(
    state: &ConsoleState,
    member: &CurrentMember,
    name: &str,
) -> PageResult<Result<String, &'static str>> {
    let Some(base) = slug::derive(name) else {
        return Ok(Err("include at least one letter a-z or digit; the address is made from them"));
    };
    let root = format!("{}/queue/v1/", state.control().public_url());
    let mut text = if queues::slug_taken(state.control(), &base).await? {
        let sample = slug::with_random_suffix(&base);
        let kept = sample.rsplit_once('-').map_or(sample.as_str(), |(kept, _)| kept);
        format!(
            "{root}{kept}-???? (the address {root}{base} is taken, so four random letters or digits are added, \
             such as {sample})"
        )
    } else {
        format!("{root}{base}")
    };
    if let Some(same) = same_name(state, member, name, None).await?.first() {
        text.push_str(&format!(
            ". You already have a queue named “{}” (at {root}{}): the new one is a separate queue with its own \
             address",
            same.name, same.slug
        ));
    }
    Ok(Ok(text))
}

/// The member's queues named `name` (ignoring case and outer spaces), but `except`.
async fn same_name(
    state: &ConsoleState,
    member: &CurrentMember,
    name: &str,
    except: Option<&Slug>,
) -> PageResult<Vec<aqs_control_plane::Queue>> {
    let wanted = name.trim().to_lowercase();
    let mut queues = queues::list(state.control(), member.team).await?;
    queues.retain(|q| q.name.trim().to_lowercase() == wanted && Some(&q.slug) != except);
    Ok(queues)
}

pub(crate) async fn submit(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    member.may_change(TeamRole::Admin)?;
    let name = form.get("name").trim().to_owned();
    let mut errors = FieldErrors::default();
    let visibility = fields::number(
        &mut errors,
        "visibility_timeout_seconds",
        form.get("visibility_timeout_seconds"),
        Some(VISIBILITY_DEFAULT_SECS),
    );
    let attempts = fields::number(&mut errors, "max_attempts", form.get("max_attempts"), Some(MAX_ATTEMPTS_DEFAULT));
    let payload = fields::number(&mut errors, "payload_size", form.get("payload_size"), Some(PAYLOAD_SIZE_DEFAULT));
    let preview = match address_preview(&state, &member, &name).await? {
        Ok(address) => Some(address),
        Err(_) if name.is_empty() => {
            errors.add("name", "give the queue a name");
            None
        }
        Err(why) => {
            errors.add("name", why);
            None
        }
    };

    // Every field's range at once, beside each field, rather than the control plane's first refusal.
    let checked = QueueChanges {
        name: (!name.is_empty()).then(|| name.clone()),
        visibility_timeout_seconds: visibility,
        max_attempts: attempts,
        payload_size: payload,
        storage_limit: None,
    };
    errors.add_api(checked.problems(), &FIELDS)?;

    if form.get("intent") != "preview" && errors.is_empty() {
        let input = NewQueue {
            name: name.clone(),
            visibility_timeout_seconds: visibility,
            max_attempts: attempts,
            payload_size: payload,
            storage_limit: None,
        };
        let act = async {
            match queues::create(state.control(), &member.caller, input).await {
                Ok((queue, token)) => {
                    let shown = once::stash_secret(&state, &member, token.secret.expose()).await?;
                    Ok(Outcome::see_other(format!("/queues/{}/created?shown={shown}", queue.slug)))
                }
                Err(err) => Ok(Outcome::invalid(
                    async {
                        let errors = FieldErrors::from_api(err, &FIELDS)?;
                        typed_page(&state, &member, &form, name.clone(), preview.clone(), errors, payload).await
                    }
                    .await,
                )),
            }
        };
        return form::run(&state, &member, &form, act).await;
    }
    let status = if errors.is_empty() { axum::http::StatusCode::OK } else { INVALID };
    Ok((status, typed_page(&state, &member, &form, name, preview, errors, payload).await?).into_response())
}

/// The form again as it was sent, with its errors (or its address preview).
async fn typed_page(
    state: &ConsoleState,
    member: &CurrentMember,
    form: &FormData,
    name: String,
    preview: Option<String>,
    errors: FieldErrors,
    payload: Option<u64>,
) -> PageResult<CreatePage> {
    let (limit, at_limit) = queue_limit(state, member).await?;
    Ok(CreatePage {
        chrome: member.chrome("Create queue"),
        name,
        visibility: form.get("visibility_timeout_seconds").trim().to_owned(),
        attempts: form.get("max_attempts").trim().to_owned(),
        payload_options: payload_options(payload.unwrap_or(PAYLOAD_SIZE_DEFAULT)),
        preview,
        errors,
        visibility_max: VISIBILITY_MAX_SECS,
        attempts_max: MAX_ATTEMPTS_MAX,
        form_id: once::new_id(),
        at_limit,
        limit,
        may_create: member.may(TeamRole::Admin),
    })
}

#[derive(Deserialize)]
pub(crate) struct ShownQuery {
    #[serde(default)]
    shown: String,
}

impl ShownQuery {
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }
}

/// Where creating a queue lands: its address and, on the first view only, its first token.
pub(crate) async fn created(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    Query(query): Query<ShownQuery>,
) -> PageResult {
    let queue = load_queue(&state, &member, &slug).await?;
    let secret = once::take_secret(&state, &member, &query.shown).await?;
    let same_name = same_name(&state, &member, &queue.name, Some(&queue.slug))
        .await?
        .into_iter()
        .map(|q| (q.name, q.address))
        .collect();
    let page = CreatedPage {
        same_name,
        chrome: member.chrome(format!("Created {}", queue.name)),
        name: queue.name,
        slug: queue.slug.to_string(),
        address: queue.address,
        secret,
    };
    Ok(page.into_response())
}

#[derive(Deserialize)]
pub(crate) struct SlugQuery {
    #[serde(default)]
    name: String,
}

/// The live preview behind the name field: the address as plain text (empty for an empty name).
pub(crate) async fn slug_preview(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Query(query): Query<SlugQuery>,
) -> PageResult {
    let text = match address_preview(&state, &member, query.name.trim()).await? {
        Ok(address) => address,
        Err(_) if query.name.trim().is_empty() => String::new(),
        Err(why) => format!("No address yet: {why}."),
    };
    Ok(([(CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}
