//! Who is asking, for which team, with which role: the [`Caller`] every team route of `/api/v1`
//! takes, and [`need`], the least role a route declares beside it in the route table
//! (`routes/mod.rs`), as the data plane's routes declare their scope.
//!
//! The checks, in this order: a credential (a session JWT or a management key `acm_…`, else 401);
//! the team (the `AQS-Team` header, else the member's personal team or the key's own; a team the
//! caller is not in is 404, so a team's existence is not revealed); a suspended team (403
//! `team_suspended` for keys on every request, for members on every request that changes state);
//! the role (403 `forbidden` naming the role needed).

use super::store::{self, Membership};
use super::{TeamId, TeamRole};
use crate::auth;
use crate::client_addr::ClientAddr;
use crate::keys;
use crate::members::{Member, MemberId};
use crate::state::ControlPlane;
use aqs_core::{ApiError, ApiResult};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, header};
use uuid::Uuid;

/// The header that names the team a request acts on.
pub const TEAM_HEADER: &str = "aqs-team";

/// The least role a route needs, declared in the route table with [`need`].
#[derive(Clone, Copy, Debug)]
pub struct Need(pub TeamRole);

/// The layer that declares the least role of one route: `get(list).layer(need(TeamRole::Viewer))`.
pub fn need(role: TeamRole) -> axum::Extension<Need> {
    axum::Extension(Need(role))
}

/// Who acts: a member with a session, or a management key.
#[derive(Clone, Debug)]
pub enum Actor {
    Member { id: MemberId, email: String },
    Key { id: Uuid, name: String },
}

/// Where a request came from, as the audit log keeps it.
#[derive(Clone, Debug, Default)]
pub struct RequestOrigin {
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub request_id: Option<String>,
}

/// The longest user agent the audit log keeps, in characters.
const USER_AGENT_MAX_CHARS: usize = 512;

impl RequestOrigin {
    /// The client address, user agent and request id of a request's head.
    pub fn of(headers: &HeaderMap, client: ClientAddr) -> Self {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let user_agent = text(header::USER_AGENT.as_str())
            .map(|ua| ua.chars().filter(|c| !c.is_control()).take(USER_AGENT_MAX_CHARS).collect::<String>())
            .filter(|ua| !ua.trim().is_empty());
        Self { ip: client.shown(), user_agent, request_id: text("x-request-id") }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for RequestOrigin {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Ok(client) = ClientAddr::from_request_parts(parts, state).await;
        Ok(Self::of(&parts.headers, client))
    }
}

/// A checked caller of one team: the team, the caller's role in it, who they are and where the
/// request came from. Holding one means the credential, the membership and the suspension were
/// checked; the role is checked against the route's [`Need`] by the extractor, or by
/// [`Caller::require`] where a service decides (the console's forms).
#[derive(Clone, Debug)]
pub struct Caller {
    pub team: TeamId,
    pub role: TeamRole,
    pub actor: Actor,
    /// The reason an operator gave, while the team is suspended (only ever set for a member
    /// reading: everything else of a suspended team was refused).
    pub suspended: Option<String>,
    pub origin: RequestOrigin,
}

impl Caller {
    /// `member` acting on `team` (their personal team when `None`): 404 when they are not in it,
    /// 403 `team_suspended` when the team is suspended and the request `writes`.
    pub async fn of_member(
        cp: &ControlPlane,
        member: &Member,
        team: Option<Uuid>,
        writes: bool,
        origin: RequestOrigin,
    ) -> ApiResult<Self> {
        let team = team.unwrap_or(member.id.as_uuid());
        let membership = store::membership(cp.db(), team, member.id).await?.ok_or_else(no_such_team)?;
        if let (Some(reason), true) = (&membership.suspended, writes) {
            return Err(suspended(reason));
        }
        Ok(Self::of_membership(member, membership, origin))
    }

    /// `member` acting on the team of `membership`, already read (the console reads all of a
    /// member's memberships once per page, for its team switcher). Nothing is refused here: the
    /// suspension and the role are asked by [`Caller::require_to_change`] and [`Caller::require`].
    pub fn of_membership(member: &Member, membership: Membership, origin: RequestOrigin) -> Self {
        Self {
            team: membership.team,
            role: membership.role,
            actor: Actor::Member { id: member.id, email: member.email.clone() },
            suspended: membership.suspended,
            origin,
        }
    }

    /// 403 `forbidden` naming the role needed, unless the caller's role is `needed` or above.
    pub fn require(&self, needed: TeamRole) -> ApiResult<()> {
        if self.role >= needed {
            return Ok(());
        }
        Err(ApiError::Forbidden(format!("this needs the {needed} role or higher in the team; yours is {}", self.role)))
    }

    /// [`Caller::require`] for a change: first 403 `team_suspended` while the team is suspended
    /// (the console reads a suspended team's pages and refuses its forms with this).
    pub fn require_to_change(&self, needed: TeamRole) -> ApiResult<()> {
        if let Some(reason) = &self.suspended {
            return Err(suspended(reason));
        }
        self.require(needed)
    }

    /// The member acting, when it is a member and not a key.
    pub fn member(&self) -> Option<MemberId> {
        match &self.actor {
            Actor::Member { id, .. } => Some(*id),
            Actor::Key { .. } => None,
        }
    }
}

impl FromRequestParts<ControlPlane> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, cp: &ControlPlane) -> Result<Self, Self::Rejection> {
        let Some(Need(needed)) = parts.extensions.get::<Need>().copied() else {
            return Err(ApiError::Internal(anyhow::anyhow!("route {} declares no team role", parts.uri.path())));
        };
        let Ok(client) = ClientAddr::from_request_parts(parts, cp).await;
        let origin = RequestOrigin::of(&parts.headers, client);
        let team = team_header(&parts.headers)?;
        let credential = auth::bearer(&parts.headers)?;
        let caller = if keys::is_key(credential) {
            let key = keys::authenticate(cp, credential).await?;
            if team.is_some_and(|team| team != key.team.as_uuid()) {
                return Err(no_such_team());
            }
            if let Some(reason) = store::suspension(cp.db(), key.team).await? {
                return Err(suspended(&reason));
            }
            Caller {
                team: key.team,
                role: key.role,
                actor: Actor::Key { id: key.id, name: key.name },
                suspended: None,
                origin,
            }
        } else {
            let member = auth::verify_session(cp, credential).await?;
            let writes = !matches!(parts.method, Method::GET | Method::HEAD);
            Caller::of_member(cp, &member, team, writes, origin).await?
        };
        caller.require(needed)?;
        Ok(caller)
    }
}

/// The team the `AQS-Team` header names, if any; a value that is no team id names no team of the
/// caller's: 404.
fn team_header(headers: &HeaderMap) -> ApiResult<Option<Uuid>> {
    let Some(value) = headers.get(TEAM_HEADER) else { return Ok(None) };
    let id = value.to_str().ok().and_then(|text| Uuid::parse_str(text.trim()).ok());
    id.map(Some).ok_or_else(no_such_team)
}

fn no_such_team() -> ApiError {
    ApiError::not_found("no team with this id that you are in (AQS-Team)")
}

fn suspended(reason: &str) -> ApiError {
    ApiError::TeamSuspended(format!("an operator suspended this team: {reason}"))
}
