//! Deleting one message from its detail page, after the confirmation page
//! (`confirmations::delete_message`): a ready, retrying or delayed message goes for good through
//! the engine (`Engine::delete_message`). A message under a live lease is not deleted: its consumer
//! holds a receipt and may be half-way through its work, so deleting it would turn their ack into
//! an unexplained `lease_lost`; the page says so and when the lease ends. Dead letters have their
//! own purge on the Dead letters tab.

use super::load_queue;
use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData, PagePath};
use crate::form::{self, Outcome};
use crate::format;
use crate::state::ConsoleState;
use aqs_control_plane::TeamRole;
use aqs_control_plane::audit::{self, Target};
use aqs_control_plane::slug::Slug;
use aqs_core::ids::MessageId;
use aqs_core::receipt::StreamId;
use aqs_core::time::now_ms;
use aqs_engine::{Deleted, MessageRef};
use axum::extract::{Query, State};
use axum::response::Response;
use serde::Deserialize;

/// Which message: `entry=<stream id>` or `delayed=<message id>`, as the detail page names it.
#[derive(Deserialize)]
pub(crate) struct DeleteQuery {
    entry: Option<String>,
    delayed: Option<String>,
}

impl DeleteQuery {
    pub(crate) fn reference(&self) -> PageResult<MessageRef> {
        match (&self.entry, &self.delayed) {
            (Some(sid), None) => {
                Ok(MessageRef::Stream(StreamId::parse(sid).ok_or(ConsoleError::NotFound)?.to_string()))
            }
            (None, Some(id)) => {
                Ok(MessageRef::Delayed(MessageId::parse(id).ok_or(ConsoleError::NotFound)?.to_string()))
            }
            _ => Err(ConsoleError::NotFound),
        }
    }
}

/// Where the confirmation form posts.
pub(crate) fn action_href(slug: &str, reference: &MessageRef) -> String {
    match reference {
        MessageRef::Stream(sid) => format!("/queues/{slug}/messages/delete?entry={sid}"),
        MessageRef::Delayed(id) => format!("/queues/{slug}/messages/delete?delayed={id}"),
        MessageRef::Dead(id) => format!("/queues/{slug}/dead-letters/purge?id={id}"),
    }
}

pub(crate) async fn delete(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(slug): PagePath<Slug>,
    Query(query): Query<DeleteQuery>,
    form: FormData,
) -> PageResult<Response> {
    let queue = load_queue(&state, &member, &slug).await?;
    member.may_change(TeamRole::Admin)?;
    let reference = query.reference()?;
    let list = format!("/queues/{slug}/messages");
    let detail = super::messages::detail_href(&slug.to_string(), &reference);
    let act = async {
        let deleted = state.engine().delete_message(queue.id, &reference, now_ms()).await?;
        Ok(match deleted.ok_or(ConsoleError::NotFound)? {
            Deleted::Deleted(id) => {
                audit::record_after_redis(
                    state.control(),
                    &member.caller,
                    "message.deleted",
                    Target::new("queue", queue.id),
                )
                .await?;
                Outcome::flash(list, format!("Deleted message {id}."))
            }
            Deleted::Leased(until) => Outcome::flash(
                detail,
                format!(
                    "Not deleted: a consumer holds this message under a lease until {}. Delete it once the lease \
                     ends, or let the consumer acknowledge it.",
                    format::instant(until).human
                ),
            ),
            Deleted::Gone => Outcome::flash(list, "This message was no longer there; nothing was deleted."),
        })
    };
    form::run(&state, &member, &form, act).await
}
