//! Sending and receiving in the browser, done by the server (no token reaches the page): send a
//! test message (body, content type, attributes, group, delay), receive one under a lease, then
//! acknowledge it or return it (nack, with a delay and an error). A received delivery's receipt is
//! kept on the server, under the member, for as long as a receipt would be valid; its page shows
//! the lease deadline as it stands (an extend through the API moves it) and the two actions, each a
//! one-time form, so a reload or a double click never acks or nacks twice.

use super::{INVALID, load_queue};
use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData, PagePath};
use crate::fields::FieldErrors;
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::state::ConsoleState;
use crate::tabs::{QueueNav, Tab};
use aqs_control_plane::TeamRole;
use aqs_control_plane::slug::Slug;
use aqs_core::ids::QueueId;
use aqs_core::limits;
use aqs_core::receipt::{AckHint, Receipt, expiry_ms};
use aqs_core::time::now_ms;
use aqs_engine::{ConsumeOutcome, MessageKey, MessageRef, NackResult, NewMessage, PublishOutcome};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use std::time::Duration;

/// The longest nack error kept (the API keeps 1 KiB too).
const ERROR_MAX_BYTES: usize = 1024;
/// The send form's file input: a chosen file is the body, byte for byte.
const BODY_FILE: &str = "body_file";
/// A file's content type when its part has none.
const OCTET_STREAM: &str = "application/octet-stream";

#[derive(Template, WebTemplate)]
#[template(path = "send_message.html")]
struct SendPage {
    chrome: Chrome,
    nav: QueueNav,
    form_id: String,
    body: String,
    content_type: String,
    attributes: String,
    group_id: String,
    delay_seconds: String,
    /// The body field holds base64 (a binary body), not the text to send.
    base64: bool,
    errors: FieldErrors,
    payload_limit: String,
}

pub(crate) async fn send_form(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
) -> PageResult<impl IntoResponse> {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Developer)?;
    let nav = QueueNav::new(&queue, Tab::Messages);
    Ok(SendPage {
        chrome: member.chrome(format!("Send a message · {}", queue.name)),
        nav,
        form_id: once::new_id(),
        body: "{\"hello\":\"world\"}".into(),
        content_type: "application/json".into(),
        attributes: String::new(),
        group_id: String::new(),
        delay_seconds: "0".into(),
        base64: false,
        errors: FieldErrors::default(),
        payload_limit: format::bytes(queue.payload_size),
    })
}

/// Checks the form as the API checks a publish; every field's problem at once.
fn new_message(form: &FormData, payload_limit: u64) -> Result<NewMessage, FieldErrors> {
    let mut errors = FieldErrors::default();
    let file = form.file(BODY_FILE);
    // A chosen file is the body byte for byte; else a binary body is typed (or pasted) as base64,
    // as the message page shows one.
    let body = if let Some(file) = file {
        file.bytes.to_vec()
    } else if form.get("body_encoding") == "base64" {
        let text: String = form.get("body").split_whitespace().collect();
        base64::engine::general_purpose::STANDARD.decode(text).unwrap_or_else(|_| {
            errors.add("body", "this is not base64; untick “The body is base64” to send the text as typed");
            Vec::new()
        })
    } else {
        form.get("body").as_bytes().to_vec()
    };
    if body.len() as u64 > payload_limit {
        let (field, what) = if file.is_some() { (BODY_FILE, "file") } else { ("body", "body") };
        errors.add(
            field,
            format!(
                "the {what} is {}; this queue accepts up to {} (a larger payload size is in Settings)",
                format::bytes(body.len() as u64),
                format::bytes(payload_limit)
            ),
        );
    }
    let mut content_type = form.get("content_type").trim().to_owned();
    // A file left with an empty content type is sent as what the browser says it is.
    if let Some(file) = file.filter(|_| content_type.is_empty()) {
        content_type =
            file.content_type.clone().filter(|t| !t.trim().is_empty()).unwrap_or_else(|| OCTET_STREAM.into());
    }
    if content_type.is_empty() || content_type.len() > limits::CONTENT_TYPE_MAX_LEN {
        errors.add("content_type", format!("give a content type of 1 to {} bytes", limits::CONTENT_TYPE_MAX_LEN));
    }
    let attributes = match form.get("attributes").trim() {
        "" => String::new(),
        text => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) if map.is_empty() => String::new(),
            Ok(value @ serde_json::Value::Object(_)) => value.to_string(),
            _ => {
                errors.add("attributes", "attributes must be a JSON object, such as {\"kind\": \"test\"}");
                String::new()
            }
        },
    };
    if attributes.len() > limits::ATTRIBUTES_MAX_BYTES {
        errors.add("attributes", format!("attributes are limited to {} bytes", limits::ATTRIBUTES_MAX_BYTES));
    }
    let group_id = Some(form.get("group_id").trim().to_owned()).filter(|g| !g.is_empty());
    if group_id.as_ref().is_some_and(|g| g.len() > limits::GROUP_ID_MAX_LEN) {
        errors.add("group_id", format!("a group id is limited to {} bytes", limits::GROUP_ID_MAX_LEN));
    }
    let delay = match form.get("delay_seconds").trim() {
        "" => 0,
        text => match text.parse::<u64>() {
            Ok(n) if n <= limits::DELAY_MAX_SECS => n,
            _ => {
                errors.add("delay_seconds", format!("the delay is 0 to {} seconds", limits::DELAY_MAX_SECS));
                0
            }
        },
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(NewMessage { body, content_type, attributes, group_id, idempotency_key: None, delay_ms: delay * 1000 })
}

pub(crate) async fn send(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    form: FormData,
) -> PageResult<Response> {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Developer)?;
    // The form again as typed, with its errors: nothing typed is lost to a refusal.
    let again = |errors: FieldErrors| SendPage {
        chrome: member.chrome(format!("Send a message · {}", queue.name)),
        nav: QueueNav::new(&queue, Tab::Messages),
        form_id: form.get(once::FIELD).to_owned(),
        body: form.get("body").to_owned(),
        content_type: form.get("content_type").to_owned(),
        attributes: form.get("attributes").to_owned(),
        group_id: form.get("group_id").to_owned(),
        delay_seconds: form.get("delay_seconds").to_owned(),
        base64: form.get("body_encoding") == "base64",
        errors,
        payload_limit: format::bytes(queue.payload_size),
    };
    let message = match new_message(&form, queue.payload_size) {
        Ok(message) => message,
        Err(errors) => return Ok((INVALID, again(errors)).into_response()),
    };
    let act = async {
        let list = format!("/queues/{slug}/messages");
        let (location, text) = match state.engine().publish(queue.id, std::slice::from_ref(&message), now_ms()).await {
            // The sent message's own page, which shows its id; the list if it is already gone.
            Ok(PublishOutcome::Stored(published)) => match published.first() {
                Some(p) if message.delay_ms > 0 => (
                    super::messages::detail_href(&slug.to_string(), &MessageRef::Delayed(p.id.clone())),
                    format!("Sent message {}; it is delayed until {}.", p.id, format::instant(p.available_at_ms).human),
                ),
                Some(p) => {
                    let found = state.engine().find_message(queue.id, MessageKey::Id(&p.id), now_ms()).await;
                    let location = match found {
                        Ok(Some(m)) => super::messages::detail_href(&slug.to_string(), &m.reference()),
                        _ => list,
                    };
                    (location, format!("Sent message {}.", p.id))
                }
                None => (list, "Sent.".to_owned()),
            },
            // Nothing was stored: the same form may be sent again once the queue allows it.
            Ok(refused) => {
                let mut errors = FieldErrors::default();
                match refused {
                    PublishOutcome::Paused => errors.set_form("The queue is paused: resume it to send."),
                    PublishOutcome::StorageFull => {
                        errors.set_form("The queue's storage limit is reached: nothing was sent.")
                    }
                    PublishOutcome::TooLarge { .. } => errors.add("body", "the body is larger than this queue accepts"),
                    _ => errors.set_form("The queue refused the message."),
                };
                return Ok(Outcome::invalid(Ok(again(errors))));
            }
            Err(err) => return Ok(Outcome::refused(err)),
        };
        Ok(Outcome::flash(location, text))
    };
    form::run(&state, &member, &form, act).await
}

/// A held delivery's receipt, if it is still valid and of `queue`. The receipt is kept on the server
/// encoded and tagged as the API hands it out (`aqs_core::receipt`), so its format has one owner
/// and a version.
fn held_receipt(state: &ConsoleState, held: &str, queue: QueueId) -> Option<(Receipt, Option<AckHint>)> {
    let (receipt, hint) = state.receipts().decode_with_hint(held, now_ms()).ok()?;
    (receipt.queue == queue).then_some((receipt, hint))
}

/// The Redis key of a held delivery: under the member, like a form's stashed secret.
fn held_key(state: &ConsoleState, member: &CurrentMember, id: &str) -> String {
    state.control().keys().console_secret(&member.id.as_uuid().to_string(), &format!("delivery-{id}"))
}

async fn load_held(state: &ConsoleState, member: &CurrentMember, id: &str) -> PageResult<Option<String>> {
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ConsoleError::NotFound);
    }
    Ok(state.engine().value(&held_key(state, member, id)).await?)
}

async fn forget_held(state: &ConsoleState, member: &CurrentMember, id: &str) -> PageResult<()> {
    Ok(state.engine().remove(&held_key(state, member, id)).await?)
}

/// Receives one message under a lease of `visibility_seconds` and shows it with its actions.
pub(crate) async fn receive(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    form: FormData,
) -> PageResult<Response> {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Developer)?;
    let visibility = match form.get("visibility_seconds").trim() {
        "" => limits::VISIBILITY_DEFAULT_SECS,
        text => text
            .parse::<u32>()
            .ok()
            .filter(|s| (limits::VISIBILITY_MIN_SECS..=limits::VISIBILITY_MAX_SECS).contains(s))
            .ok_or_else(|| {
                ConsoleError::BadRequest(format!(
                    "The lease is {} to {} seconds.",
                    limits::VISIBILITY_MIN_SECS,
                    limits::VISIBILITY_MAX_SECS
                ))
            })?,
    };
    // A resubmitted receive would lease a second message: answered with the first one's page.
    let act = async {
        let now = now_ms();
        let lease_ms = u64::from(visibility) * 1000;
        let delivery = match state.engine().consume(queue.id, 1, lease_ms, now, 0).await {
            Ok(ConsumeOutcome::Delivered { mut deliveries, .. }) => deliveries.pop(),
            Ok(ConsumeOutcome::Paused) => {
                return Ok(Outcome::refused(ConsoleError::BadRequest(
                    "The queue is paused: resume it to receive.".into(),
                )));
            }
            Ok(ConsumeOutcome::QueueMissing) => return Ok(Outcome::refused(ConsoleError::NotFound)),
            Err(err) => return Ok(Outcome::refused(err)),
        };
        let Some(delivery) = delivery else {
            return Ok(Outcome::flash(format!("/queues/{slug}/messages"), "No message was ready to receive."));
        };
        let expires_at_ms = expiry_ms(now, lease_ms);
        let receipt = delivery.receipt(queue.id, expires_at_ms);
        let id = once::new_id();
        let encoded = state.receipts().encode_with(&receipt, Some(delivery.hint));
        let lease_left = Duration::from_millis(expires_at_ms - now);
        state.engine().put(&held_key(&state, &member, &id), &encoded, lease_left).await?;
        Ok(Outcome::see_other(format!("/queues/{slug}/messages/received/{id}")))
    };
    form::run(&state, &member, &form, act).await
}

#[derive(Template, WebTemplate)]
#[template(path = "received.html")]
struct ReceivedPage {
    chrome: Chrome,
    nav: QueueNav,
    held_id: String,
    /// `None`: the delivery is over (acked, returned, or its receipt expired).
    message: Option<super::message_view::Detail>,
    delivery: u32,
    ack_form_id: String,
    nack_form_id: String,
}

pub(crate) async fn received(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath((slug, held_id)): PagePath<(Slug, String)>,
) -> PageResult<Response> {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_read_bodies()?;
    let held = load_held(&state, &member, &held_id).await?;
    let mut delivery = 0;
    let mut message = None;
    if let Some((receipt, _)) = held.and_then(|h| held_receipt(&state, &h, queue.id)) {
        delivery = receipt.delivery;
        let reference = MessageRef::Stream(receipt.stream_id.to_string());
        message = state
            .engine()
            .message(queue.id, &reference, now_ms())
            .await?
            .map(|m| super::message_view::detail(m, false));
    }
    let nav = QueueNav::new(&queue, Tab::Messages);
    let page = ReceivedPage {
        chrome: member.chrome(format!("Received · {}", queue.name)),
        nav,
        held_id,
        message,
        delivery,
        ack_form_id: once::new_id(),
        nack_form_id: once::new_id(),
    };
    Ok(page.into_response())
}

/// `ack` or `nack` of a received delivery.
pub(crate) async fn settle(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath((slug, held_id, action)): PagePath<(Slug, String, String)>,
    form: FormData,
) -> PageResult<Response> {
    if action != "ack" && action != "nack" {
        return Err(ConsoleError::NotFound);
    }
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Developer)?;
    let delay_secs = match form.get("delay_seconds").trim() {
        "" => 0,
        text => text.parse::<u64>().ok().filter(|d| *d <= limits::DELAY_MAX_SECS).ok_or_else(|| {
            ConsoleError::BadRequest(format!("The delay is 0 to {} seconds.", limits::DELAY_MAX_SECS))
        })?,
    };
    let error = truncate(form.get("error").trim(), ERROR_MAX_BYTES);
    let act = async {
        let list = format!("/queues/{slug}/messages");
        let held = load_held(&state, &member, &held_id).await?;
        let Some((receipt, hint)) = held.and_then(|h| held_receipt(&state, &h, queue.id)) else {
            return Ok(Outcome::flash(list, "This delivery is over: its receipt has expired."));
        };
        let now = now_ms();
        let id = receipt.message;
        let lost = format!(
            "Message {id} was not settled: this delivery is no longer current (it was acknowledged, returned, \
             redelivered or removed)."
        );
        let text = if action == "ack" {
            match state.engine().ack_hinted(queue.id, &[receipt], &[hint], now).await?.first() {
                Some(true) => format!("Acknowledged message {id}: it is deleted."),
                _ => lost,
            }
        } else {
            match state.engine().nack(queue.id, &[receipt], delay_secs * 1000, error, now).await?.first() {
                Some(NackResult::Returned) if delay_secs > 0 => {
                    format!("Returned message {id}: it is due again in {}.", format::duration_secs(delay_secs))
                }
                Some(NackResult::Returned) => format!("Returned message {id}: it is ready again."),
                Some(NackResult::DeadLettered) => {
                    format!("Message {id} used its last attempt: it is a dead letter now.")
                }
                _ => lost,
            }
        };
        forget_held(&state, &member, &held_id).await?;
        Ok(Outcome::flash(list, text))
    };
    form::run(&state, &member, &form, act).await
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
