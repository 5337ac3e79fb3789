//! Teams: who owns queues, tokens, hosts, domains, push settings and billing, and the role each
//! member has in each team (`docs/teams.md`). A member's personal team has the member's own id, so
//! what a member owned before teams existed is their personal team's without a row rewritten.
//!
//! - [`TeamId`], [`TeamRole`]: the ids and roles every service function is given;
//! - `caller`: [`Caller`], who is asking for which team with which role (the extractor every
//!   team route takes), and [`need`], the minimum role a route declares in the route table;
//! - `store`: team rows, memberships, suspension and limits;
//! - `manage`: the teams a member is in, a new team, members, roles, leaving, deleting a team;
//! - `invites`: invite links, previewed by anyone holding one and accepted by a signed-in member.
//! - `admin`: operators' suspensions and limits, and their projection into Redis.

pub mod admin;
mod caller;
pub mod invites;
pub mod manage;
pub mod store;

pub use caller::{Actor, Caller, Need, RequestOrigin, need};
pub use invites::{CreatedInvite, Invite, InvitePreview, NewInvite};
pub use manage::{TeamMember, TeamSummary};

use crate::members::MemberId;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A team's id. Held by a [`Caller`] only after the membership (or key) was checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct TeamId(Uuid);

impl TeamId {
    pub fn as_uuid(self) -> Uuid {
        self.0
    }

    /// The personal team of `member`: the same id.
    pub fn personal(member: MemberId) -> Self {
        Self(member.as_uuid())
    }

    /// An id read back from one of our own tables (a queue's owner, a Stripe customer's team).
    pub(crate) fn from_stored(id: Uuid) -> Self {
        Self(id)
    }
}

impl std::fmt::Display for TeamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A member's (or a management key's) role in a team, from least to most allowed: each role may do
/// everything the ones before it may (DESIGN.md's table; `docs/teams.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TeamRole {
    /// Reads everything but message bodies and secrets.
    Viewer,
    /// Reads everything; sends, receives and browses messages in the console; mints and revokes
    /// tokens without `manage`.
    Developer,
    /// Queues, settings, tokens, push, hosts and domains, dead-letter actions.
    Admin,
    /// Everything, including billing, members and roles, deleting the team.
    Owner,
}

impl TeamRole {
    pub const ALL: [TeamRole; 4] = [TeamRole::Viewer, TeamRole::Developer, TeamRole::Admin, TeamRole::Owner];

    pub fn as_str(self) -> &'static str {
        match self {
            TeamRole::Viewer => "viewer",
            TeamRole::Developer => "developer",
            TeamRole::Admin => "admin",
            TeamRole::Owner => "owner",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.as_str() == text)
    }
}

impl std::fmt::Display for TeamRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_from_least_to_most_allowed() {
        assert!(TeamRole::Viewer < TeamRole::Developer);
        assert!(TeamRole::Developer < TeamRole::Admin);
        assert!(TeamRole::Admin < TeamRole::Owner);
        for role in TeamRole::ALL {
            assert_eq!(TeamRole::parse(role.as_str()), Some(role));
        }
        assert_eq!(TeamRole::parse("operator"), None);
    }
}
