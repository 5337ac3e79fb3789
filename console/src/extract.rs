//! Extractors: who is asking and what they posted.
//!
//! - [`Visitor`]: anyone; their cookies, whether the request came over TLS, and the flash message;
//! - [`CurrentMember`]: a logged-in member (the session cookie verified by the control plane), or
//!   a redirect to the log-in page;
//! - [`CurrentOperator`]: a logged-in operator, or the 404 page for everyone else (logged out
//!   included), so that operator pages do not reveal that they exist;
//! - [`FormData`]: the posted fields, by name, and files (the CSRF guard has already read the body
//!   and checked the token, `posted.rs`);
//! - [`PagePath`]: the path's parameters, a queue's `Slug` parsed here once: a segment that is no
//!   slug is the 404 page.

use crate::cookies::{self, Cookies};
use crate::csrf;
use crate::error::ConsoleError;
use crate::flash;
use crate::layout::{Can, Chrome, TeamChoice};
use crate::posted::{self, Upload};
use crate::state::ConsoleState;
use aqs_control_plane::client_addr::ClientAddr;
use aqs_control_plane::teams::{self, RequestOrigin, TeamRole, TeamSummary};
use aqs_control_plane::{AuthOperator, Caller, Member, MemberId, TeamId, auth};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use std::convert::Infallible;

pub(crate) struct Visitor {
    pub cookies: Cookies,
    pub secure: bool,
    pub flash: Option<String>,
}

impl FromRequestParts<ConsoleState> for Visitor {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &ConsoleState) -> Result<Self, Self::Rejection> {
        let cookies = Cookies::from_headers(&parts.headers);
        let flash = cookies.get(cookies::FLASH).and_then(|value| flash::decode(state, value));
        Ok(Self { secure: cookies::is_secure(state.https(), &parts.headers), cookies, flash })
    }
}

pub(crate) struct CurrentMember {
    pub id: MemberId,
    pub email: String,
    /// The team the pages act on: the one the team switcher chose (its cookie), else the
    /// member's personal team.
    pub team: TeamId,
    /// The member as the caller of that team: their role, the suspension, the request's origin.
    pub caller: Caller,
    /// Every team the member is in, with their role (the switcher, the Team page).
    pub teams: Vec<TeamSummary>,
    /// The member as the control plane knows them (accepting an invite, creating a team).
    pub account: Member,
    /// The session JWT of the cookie (the account page marks and ends sessions by it).
    pub session: String,
    /// The CSRF token of this session, for every form on the page.
    pub csrf: String,
    pub flash: Option<String>,
    pub secure: bool,
    /// The operator proof, for members with the operator role.
    pub operator: Option<AuthOperator>,
}

impl CurrentMember {
    /// The layout of a member page.
    pub(crate) fn chrome(&self, title: impl Into<String>) -> Chrome {
        let mut chrome = Chrome::new(title, Some(self.email.clone()), self.csrf.clone(), self.flash.clone());
        chrome.operator = self.operator.is_some();
        // The banner puts its own full stop after the reason.
        chrome.suspended = self.caller.suspended.as_deref().map(|r| r.trim().trim_end_matches('.').to_owned());
        chrome.can = Can {
            read_bodies: self.caller.require(TeamRole::Developer).is_ok(),
            develop: self.may(TeamRole::Developer),
            administer: self.may(TeamRole::Admin),
            own: self.may(TeamRole::Owner),
        };
        chrome.teams = self
            .teams
            .iter()
            .map(|t| TeamChoice { id: t.id.as_uuid().to_string(), name: t.name.clone(), current: t.id == self.team })
            .collect();
        chrome
    }

    /// Whether a form needing `role` may change the team now (the role, and no suspension).
    pub(crate) fn may(&self, role: TeamRole) -> bool {
        self.caller.require_to_change(role).is_ok()
    }

    /// Before a form changes the team: the 403 page naming the role needed, or saying the team is
    /// suspended.
    pub(crate) fn may_change(&self, role: TeamRole) -> Result<(), ConsoleError> {
        Ok(self.caller.require_to_change(role)?)
    }

    /// Before a page shows message bodies: the 403 page naming the role needed (a suspended team's
    /// members still read theirs).
    pub(crate) fn may_read_bodies(&self) -> Result<(), ConsoleError> {
        Ok(self.caller.require(TeamRole::Developer)?)
    }
}

impl FromRequestParts<ConsoleState> for CurrentMember {
    type Rejection = ConsoleError;

    async fn from_request_parts(parts: &mut Parts, state: &ConsoleState) -> Result<Self, Self::Rejection> {
        let Ok(visitor) = Visitor::from_request_parts(parts, state).await;
        // A page (not a form's POST, which cannot be replayed by a redirect) is returned to after
        // logging in.
        let login = || match parts.method {
            axum::http::Method::GET => {
                ConsoleError::LoginToReturn(parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_owned())
            }
            _ => ConsoleError::LoginRequired,
        };
        let session = visitor.cookies.get(cookies::SESSION).ok_or_else(login)?;
        let member = match auth::verify_session(state.control(), session).await {
            Ok(member) => member,
            Err(aqs_core::ApiError::Unauthorized(_)) => return Err(login()),
            Err(err) => return Err(err.into()),
        };
        let chosen = visitor.cookies.get(cookies::TEAM).and_then(|id| uuid::Uuid::parse_str(id).ok());
        let Ok(client) = ClientAddr::from_request_parts(parts, state).await;
        let origin = RequestOrigin::of(&parts.headers, client);
        // Every team of the member, once: the switcher lists them and the caller is one of them.
        let memberships = teams::store::memberships(state.control().db(), member.id).await?;
        // A team the member has left (or that was deleted) falls back to their personal one.
        let personal = TeamId::personal(member.id);
        let acting = chosen
            .and_then(|id| memberships.iter().find(|m| m.team.as_uuid() == id))
            .or_else(|| memberships.iter().find(|m| m.team == personal))
            .cloned()
            .ok_or(ConsoleError::NotFound)?;
        // Not refused here when the team is suspended: logging out or changing one's password
        // still work; each form that changes the team asks `Caller::require_to_change`.
        let caller = Caller::of_membership(&member, acting, origin);
        let teams = memberships.into_iter().map(TeamSummary::from).collect();
        Ok(Self {
            id: member.id,
            email: member.email.clone(),
            team: caller.team,
            caller,
            teams,
            account: member.clone(),
            session: session.to_owned(),
            csrf: csrf::token(state, session),
            flash: visitor.flash,
            secure: visitor.secure,
            operator: AuthOperator::from_member(member),
        })
    }
}

pub(crate) struct CurrentOperator {
    pub member: CurrentMember,
    pub operator: AuthOperator,
}

impl FromRequestParts<ConsoleState> for CurrentOperator {
    type Rejection = ConsoleError;

    async fn from_request_parts(parts: &mut Parts, state: &ConsoleState) -> Result<Self, Self::Rejection> {
        let mut member = match CurrentMember::from_request_parts(parts, state).await {
            Ok(member) => member,
            Err(ConsoleError::Unavailable) => return Err(ConsoleError::Unavailable),
            Err(_) => return Err(ConsoleError::NotFound),
        };
        let operator = member.operator.take().ok_or(ConsoleError::NotFound)?;
        Ok(Self { member, operator })
    }
}

/// The fields of a posted form, urlencoded or multipart (`posted.rs`), and a multipart form's
/// files. A missing field reads as empty, so every check is a field error on the page rather than
/// an extractor rejection.
#[derive(Clone)]
pub(crate) struct FormData {
    fields: Vec<(String, String)>,
    files: Vec<Upload>,
}

impl FormData {
    pub(crate) fn new(fields: Vec<(String, String)>, files: Vec<Upload>) -> Self {
        Self { fields, files }
    }

    /// The file chosen in the file input `name`; `None` when none was (a browser sends an empty
    /// part with no file name for an empty file input).
    pub(crate) fn file(&self, name: &str) -> Option<&Upload> {
        self.files.iter().find(|f| f.field == name && !f.file_name.is_empty())
    }

    /// The first value of `name`, or "".
    pub(crate) fn get(&self, name: &str) -> &str {
        self.fields.iter().find(|(n, _)| n == name).map_or("", |(_, v)| v.as_str())
    }

    /// Whether the form sent `name` at all (even empty).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.fields.iter().any(|(n, _)| n == name)
    }

    /// Every value of `name` (checkboxes sharing a name).
    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.fields.iter().filter(|(n, _)| n == name).map(|(_, v)| v.as_str()).collect()
    }
}

impl FromRequest<ConsoleState> for FormData {
    type Rejection = ConsoleError;

    async fn from_request(request: Request, _state: &ConsoleState) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        // Parsed by the CSRF guard, which checked its token.
        if let Some(form) = parts.extensions.remove::<FormData>() {
            return Ok(form);
        }
        let bytes = axum::body::to_bytes(body, csrf::body_limit(parts.uri.path()))
            .await
            .map_err(|_| ConsoleError::BadRequest("The form is too large.".into()))?;
        posted::parse(&parts, bytes).await
    }
}

/// axum's `Path` whose failure (a segment that is no slug, bad percent-encoding) is the 404 page.
pub(crate) struct PagePath<T>(pub T);

impl<T: serde::de::DeserializeOwned + Send> FromRequestParts<ConsoleState> for PagePath<T> {
    type Rejection = ConsoleError;

    async fn from_request_parts(parts: &mut Parts, state: &ConsoleState) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(Self(value)),
            Err(_) => Err(ConsoleError::NotFound),
        }
    }
}
