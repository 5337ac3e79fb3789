//! The console's pages: one module per page or queue tab. Handlers load what they show through the
//! control plane's service functions (member id first) and the engine (queue id, which they only
//! learn from a queue the member owns), then render a template.

pub(crate) mod account;
pub(crate) mod activity;
pub(crate) mod admin_hosts;
pub(crate) mod admin_teams;
pub(crate) mod audit;
pub(crate) mod auth;
pub(crate) mod billing;
pub(crate) mod billing_admin;
pub(crate) mod callback_urls;
pub(crate) mod confirmations;
pub(crate) mod connect;
pub(crate) mod consumers;
pub(crate) mod create_queue;
pub(crate) mod dead_letters;
pub(crate) mod hosts;
pub(crate) mod invite;
pub(crate) mod message_delete;
pub(crate) mod message_view;
pub(crate) mod messages;
pub(crate) mod overview;
pub(crate) mod push;
pub(crate) mod push_actions;
pub(crate) mod push_log;
pub(crate) mod queue_list;
pub(crate) mod settings;
pub(crate) mod team;
pub(crate) mod team_access;
pub(crate) mod tokens;
pub(crate) mod try_out;

use crate::error::PageResult;
use crate::extract::CurrentMember;
use crate::state::ConsoleState;
use aqs_control_plane::slug::Slug;
use aqs_control_plane::{Queue, queues};
use axum::http::StatusCode;

/// The member's queue `slug`: another member's queue, or none, is the 404 page.
pub(crate) async fn load_queue(state: &ConsoleState, member: &CurrentMember, slug: &Slug) -> PageResult<Queue> {
    Ok(queues::get(state.control(), member.team, slug).await?)
}

/// The status of a form shown again with errors.
pub(crate) const INVALID: StatusCode = StatusCode::UNPROCESSABLE_ENTITY;
