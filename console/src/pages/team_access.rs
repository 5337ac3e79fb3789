//! Who else gets into the team, on the Team page: invite links (owners; a link is shown once, on
//! the page the form redirects to, and single use) and management keys (admins and owners; the
//! `acm_…` secret is shown once the same way). Both are withdrawn with a one-time form. The
//! rules live in the control plane (`teams::invites`, `keys`); the holder's side of a link is
//! `invite`.

use super::create_queue::ShownQuery;
use super::team::{self, Drafts};
use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData, PagePath};
use crate::fields::FieldErrors;
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::pages::confirmations::ConfirmPage;
use crate::state::ConsoleState;
use aqs_control_plane::teams::{Invite, NewInvite, TeamRole, invites};
use aqs_control_plane::{ManagementKey, NewKey, keys};
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::{Query, State};
use axum::response::IntoResponse;
use uuid::Uuid;

pub(crate) struct InviteRow {
    pub(crate) id: String,
    pub(crate) email: String,
    pub(crate) role: &'static str,
    pub(crate) invited_by: String,
    pub(crate) expires: format::Instant,
    pub(crate) form_id: String,
}

impl From<Invite> for InviteRow {
    fn from(invite: Invite) -> Self {
        Self {
            id: invite.id.to_string(),
            role: invite.role.as_str(),
            invited_by: invite.invited_by_email.unwrap_or_else(|| "a former member".to_owned()),
            expires: format::instant_at(&invite.expires_at),
            form_id: once::new_id(),
            email: invite.email,
        }
    }
}

pub(crate) struct KeyRow {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) role: &'static str,
    pub(crate) last_four: String,
    pub(crate) created_by: String,
    pub(crate) created: format::Instant,
    pub(crate) last_used: Option<format::Instant>,
    pub(crate) revoked: Option<format::Instant>,
}

impl From<ManagementKey> for KeyRow {
    fn from(key: ManagementKey) -> Self {
        Self {
            id: key.id.to_string(),
            role: key.role.as_str(),
            last_four: key.last_four,
            created_by: key.created_by_email.unwrap_or_else(|| "a former member".to_owned()),
            created: format::instant_at(&key.created_at),
            last_used: key.last_used_at.as_ref().map(format::instant_at),
            revoked: key.revoked_at.as_ref().map(format::instant_at),
            name: key.name,
        }
    }
}

/// The team's pending invites (owners of a shared team) and keys (admins and owners); `None` for
/// what the member's role does not see.
pub(crate) async fn lists(
    state: &ConsoleState,
    member: &CurrentMember,
    personal: bool,
) -> PageResult<(Option<Vec<InviteRow>>, Option<Vec<KeyRow>>)> {
    let role = member.caller.role;
    let invites = if role >= TeamRole::Owner && !personal {
        Some(invites::pending(state.control(), &member.caller).await?.into_iter().map(InviteRow::from).collect())
    } else {
        None
    };
    let keys = if role >= TeamRole::Admin {
        Some(keys::list(state.control(), &member.caller).await?.into_iter().map(KeyRow::from).collect())
    } else {
        None
    };
    Ok((invites, keys))
}

/// What the page after an invite or key form shows, once.
struct Shown {
    /// An invite link; else a management key.
    invite: bool,
    /// The invite's email or the key's name.
    label: String,
    role: String,
    secret: String,
}

/// The page a created invite or key lands on: its link or secret, once.
#[derive(Template, WebTemplate)]
#[template(path = "team_secret.html")]
struct ShownPage {
    chrome: Chrome,
    /// `None` once shown.
    shown: Option<Shown>,
}

/// `GET /team/shown?shown=…`: what the invite or key form stashed, on the first view only.
pub(crate) async fn shown(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    Query(query): Query<ShownQuery>,
) -> PageResult {
    let shown = once::take_parts(&state, &member, query.shown()).await?.map(|[kind, role, secret, label]| Shown {
        invite: kind == "invite",
        label,
        role,
        secret,
    });
    let title = match &shown {
        Some(Shown { invite: true, .. }) => "Invite link",
        Some(_) => "Management key",
        None => "Shown once",
    };
    Ok(ShownPage { chrome: member.chrome(title), shown }.into_response())
}

/// Stashes what the page after a form shows once; the label last, as it may hold any character.
async fn stash(
    state: &ConsoleState,
    member: &CurrentMember,
    kind: &str,
    role: TeamRole,
    secret: &str,
    label: &str,
) -> PageResult<Outcome> {
    let id = once::stash_parts(state, member, &[kind, role.as_str(), secret, label]).await?;
    Ok(Outcome::see_other(format!("/team/shown?shown={id}")))
}

/// `POST /team/invites` (owners of a shared team).
pub(crate) async fn invite(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    member.may_change(TeamRole::Owner)?;
    let email = form.get("email").trim().to_owned();
    let role = form.get("role").trim().to_owned();
    let act = async {
        let input = NewInvite { email: email.clone(), role: role.clone() };
        match invites::create(state.control(), &member.caller, input).await {
            Ok(created) => {
                stash(&state, &member, "invite", created.invite.role, &created.url, &created.invite.email).await
            }
            Err(err) => Ok(Outcome::invalid(
                async {
                    let errors = FieldErrors::from_api(err, &["email", "role"])?.rename("role", "invite_role");
                    let drafts =
                        Drafts { invite_email: email.clone(), invite_role: role.clone(), errors, ..Drafts::default() };
                    team::page(&state, &member, drafts).await
                }
                .await,
            )),
        }
    };
    form::run(&state, &member, &form, act).await
}

/// `POST /team/invites/{id}/revoke` (owners): the link answers 404 from now on.
pub(crate) async fn revoke_invite(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(id): PagePath<Uuid>,
    form: FormData,
) -> PageResult {
    member.may_change(TeamRole::Owner)?;
    let act = async {
        let result = invites::revoke(state.control(), &member.caller, id)
            .await
            .map(|()| "Invite withdrawn: its link no longer works.".to_owned())
            .map_err(ConsoleError::from);
        Ok(Outcome::flash_or_refused("/team", result))
    };
    form::run(&state, &member, &form, act).await
}

/// `POST /team/keys` (admins and owners).
pub(crate) async fn create_key(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    member.may_change(TeamRole::Admin)?;
    let name = form.get("name").trim().to_owned();
    let role = form.get("role").trim().to_owned();
    let act = async {
        let input = NewKey { name: name.clone(), role: role.clone() };
        match keys::create(state.control(), &member.caller, input).await {
            Ok(created) => stash(&state, &member, "key", created.key.role, &created.secret, &created.key.name).await,
            Err(err) => Ok(Outcome::invalid(
                async {
                    let errors = FieldErrors::from_api(err, &["name", "role"])?
                        .rename("name", "key_name")
                        .rename("role", "key_role");
                    let drafts = Drafts { key_name: name.clone(), key_role: role.clone(), errors, ..Drafts::default() };
                    team::page(&state, &member, drafts).await
                }
                .await,
            )),
        }
    };
    form::run(&state, &member, &form, act).await
}

/// The team's key `id`, or the 404 page.
async fn find_key(state: &ConsoleState, member: &CurrentMember, id: Uuid) -> PageResult<ManagementKey> {
    keys::list(state.control(), &member.caller).await?.into_iter().find(|k| k.id == id).ok_or(ConsoleError::NotFound)
}

pub(crate) async fn confirm_revoke_key(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(id): PagePath<Uuid>,
) -> PageResult<ConfirmPage> {
    member.may_change(TeamRole::Admin)?;
    let key = find_key(&state, &member, id).await?;
    let heading = format!("Revoke the management key “{}”?", key.name);
    Ok(ConfirmPage::new(
        member.chrome(heading.clone()),
        heading,
        format!(
            "Every request made with acm_…{} is refused from now on (401). Whatever uses it stops working \
             until it is given a new key.",
            key.last_four
        ),
        format!("/team/keys/{id}/revoke"),
        "Revoke key",
        "/team".to_owned(),
    ))
}

pub(crate) async fn revoke_key(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(id): PagePath<Uuid>,
    form: FormData,
) -> PageResult {
    member.may_change(TeamRole::Admin)?;
    let key = find_key(&state, &member, id).await?;
    let act = async {
        let result = keys::revoke(state.control(), &member.caller, id)
            .await
            .map(|()| format!("Management key “{}” (…{}) revoked.", key.name, key.last_four))
            .map_err(ConsoleError::from);
        Ok(Outcome::flash_or_refused("/team", result))
    };
    form::run(&state, &member, &form, act).await
}
