//! The Team page `/team`: the team the console acts on (its members and their roles, its pending
//! invites, its management keys: the last two in `team_access`), the member's other teams, and
//! the forms that change who is in it: switching teams (the header's switcher posts here too), a
//! new team, a member's role, removing a member, leaving, deleting the team.
//!
//! The team chosen is kept in the `aqs_team` cookie (`cookies::TEAM`); `CurrentMember` reads it
//! and falls back to the personal team when the member is no longer in the chosen one. The rules
//! (a team keeps an owner, a personal team is its member's alone) are the control plane's
//! (`teams::manage`); the page hides what the member's role cannot do and each handler asks again.

use super::team_access::{self, InviteRow, KeyRow};
use crate::cookies;
use crate::error::{ConsoleError, PageResult};
use crate::extract::{CurrentMember, FormData, PagePath};
use crate::fields::FieldErrors;
use crate::flash;
use crate::form::{self, Outcome};
use crate::format;
use crate::layout::Chrome;
use crate::once;
use crate::pages::confirmations::ConfirmPage;
use crate::state::ConsoleState;
use aqs_control_plane::teams::{TeamMember, TeamRole, TeamSummary, manage};
use aqs_core::ApiResult;
use askama::Template;
use askama_web::WebTemplate;
use axum::extract::State;
use axum::http::header::SET_COOKIE;
use axum::response::Response;
use uuid::Uuid;

/// How long the team choice is remembered: a year, like any preference.
const TEAM_COOKIE_MAX_AGE_SECS: u64 = 365 * 24 * 3600;

/// A role in a `<select>`.
pub(crate) struct RoleOption {
    pub value: &'static str,
    pub selected: bool,
}

/// The roles from the most to the least, `selected` marked, those above `highest` left out.
pub(crate) fn role_options(selected: &str, highest: TeamRole) -> Vec<RoleOption> {
    [TeamRole::Owner, TeamRole::Admin, TeamRole::Developer, TeamRole::Viewer]
        .into_iter()
        .filter(|role| *role <= highest)
        .map(|role| RoleOption { value: role.as_str(), selected: role.as_str() == selected })
        .collect()
}

struct MemberRow {
    id: String,
    email: String,
    role: &'static str,
    joined: format::Instant,
    /// The member viewing the page.
    me: bool,
    roles: Vec<RoleOption>,
    /// The one-time id of this row's role form.
    form_id: String,
}

impl MemberRow {
    fn new(member: TeamMember, me: Uuid) -> Self {
        let role = member.role.as_str();
        Self {
            id: member.member_id.to_string(),
            me: member.member_id == me,
            joined: format::instant_at(&member.joined_at),
            roles: role_options(role, TeamRole::Owner),
            form_id: once::new_id(),
            role,
            email: member.email,
        }
    }
}

/// Another team of the member's, with a button that switches to it.
struct OtherTeam {
    id: String,
    name: String,
    role: &'static str,
}

/// What the forms of the page were sent with when one is shown again with its errors.
#[derive(Default)]
pub(crate) struct Drafts {
    pub team_name: String,
    pub invite_email: String,
    pub invite_role: String,
    pub key_name: String,
    pub key_role: String,
    pub errors: FieldErrors,
}

#[derive(Template, WebTemplate)]
#[template(path = "team.html")]
pub(crate) struct TeamPage {
    chrome: Chrome,
    name: String,
    personal: bool,
    role: &'static str,
    /// Owners and admins read the audit log.
    reads_audit: bool,
    members: Vec<MemberRow>,
    others: Vec<OtherTeam>,
    /// `None` when the member's role does not see them (invites: owners; keys: admins).
    invites: Option<Vec<InviteRow>>,
    keys: Option<Vec<KeyRow>>,
    invite_roles: Vec<RoleOption>,
    key_roles: Vec<RoleOption>,
    drafts: Drafts,
    new_team_form: String,
    invite_form: String,
    key_form: String,
}

pub(crate) async fn page(state: &ConsoleState, member: &CurrentMember, drafts: Drafts) -> PageResult<TeamPage> {
    let current = current(member)?;
    let me = member.id.as_uuid();
    let members =
        manage::members(state.control(), &member.caller).await?.into_iter().map(|m| MemberRow::new(m, me)).collect();
    let (invites, keys) = team_access::lists(state, member, current.personal).await?;
    let role = member.caller.role;
    Ok(TeamPage {
        chrome: member.chrome(format!("Team {}", current.name)),
        name: current.name.clone(),
        personal: current.personal,
        role: role.as_str(),
        reads_audit: role >= TeamRole::Admin,
        members,
        others: member
            .teams
            .iter()
            .filter(|t| t.id != member.team)
            .map(|t| OtherTeam { id: t.id.as_uuid().to_string(), name: t.name.clone(), role: t.role.as_str() })
            .collect(),
        invites,
        keys,
        invite_roles: role_options(if drafts.invite_role.is_empty() { "developer" } else { &drafts.invite_role }, role),
        // A key is never an owner, nor above its creator.
        key_roles: role_options(
            if drafts.key_role.is_empty() { "developer" } else { &drafts.key_role },
            role.min(TeamRole::Admin),
        ),
        drafts,
        new_team_form: once::new_id(),
        invite_form: once::new_id(),
        key_form: once::new_id(),
    })
}

pub(crate) async fn show(State(state): State<ConsoleState>, member: CurrentMember) -> PageResult<TeamPage> {
    page(&state, &member, Drafts::default()).await
}

/// A redirect that also makes `team` the one the pages act on.
pub(crate) fn switch_to(
    state: &ConsoleState,
    member: &CurrentMember,
    team: Uuid,
    location: &str,
    message: &str,
) -> Response {
    let mut response = flash::redirect(state, member.secure, location, message);
    let cookie = cookies::set(cookies::TEAM, &team.to_string(), TEAM_COOKIE_MAX_AGE_SECS, member.secure);
    response.headers_mut().append(SET_COOKIE, cookie);
    response
}

/// `POST /team/switch`: the pages act on the team `team` from now on (one of the member's, else
/// the 404 page). Not a one-time form: switching twice is switching once.
pub(crate) async fn switch(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    let chosen = Uuid::parse_str(form.get("team").trim()).map_err(|_| ConsoleError::NotFound)?;
    let team = member.teams.iter().find(|t| t.id.as_uuid() == chosen).ok_or(ConsoleError::NotFound)?;
    let message = format!("You are now working in {}.", team_label(&team.name, team.personal));
    Ok(switch_to(&state, &member, chosen, "/", &message))
}

/// How a team is named in messages: the personal team says so.
fn team_label(name: &str, personal: bool) -> String {
    if personal { "your personal team".to_owned() } else { format!("the team {name}") }
}

/// `POST /team/new`: a team the member owns, switched to at once.
pub(crate) async fn create(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    let name = form.get("name").trim().to_owned();
    let act = async {
        match manage::create(state.control(), &member.account, member.caller.origin.clone(), name.clone()).await {
            Ok(team) => {
                let message = format!(
                    "Created the team {}; you are its owner and the console now works in it. Invite your \
                     colleagues below.",
                    team.name
                );
                let response = switch_to(&state, &member, team.id.as_uuid(), "/team", &message);
                Ok(Outcome::answer("/team", response))
            }
            Err(err) => Ok(Outcome::invalid(
                async {
                    let errors = FieldErrors::from_api(err, &["name"])?;
                    page(
                        &state,
                        &member,
                        Drafts {
                            team_name: name.clone(),
                            errors: errors.rename("name", "team_name"),
                            ..Drafts::default()
                        },
                    )
                    .await
                }
                .await,
            )),
        }
    };
    form::run(&state, &member, &form, act).await
}

/// The member `id` of the team, or the 404 page.
async fn find_member(state: &ConsoleState, member: &CurrentMember, id: &str) -> PageResult<TeamMember> {
    manage::members(state.control(), &member.caller)
        .await?
        .into_iter()
        .find(|m| m.member_id.to_string() == id)
        .ok_or(ConsoleError::NotFound)
}

/// `POST /team/members/{id}/role` (owners).
pub(crate) async fn change_role(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> PageResult {
    let target = find_member(&state, &member, &id).await?;
    member.may_change(TeamRole::Owner)?;
    let role = TeamRole::parse(form.get("role").trim())
        .ok_or_else(|| ConsoleError::BadRequest("Choose owner, admin, developer or viewer.".into()))?;
    let act = async {
        let result = manage::change_role(state.control(), &member.caller, target.member_id, role)
            .await
            .map(|changed| format!("{} is now {} of this team.", changed.email, article(changed.role)))
            .map_err(ConsoleError::from);
        Ok(Outcome::flash_or_refused("/team", result))
    };
    form::run(&state, &member, &form, act).await
}

/// "an owner", "a developer"…
fn article(role: TeamRole) -> String {
    let name = role.as_str();
    if name.starts_with(['a', 'e', 'i', 'o', 'u']) { format!("an {name}") } else { format!("a {name}") }
}

fn confirm(member: &CurrentMember, heading: String, text: String, action: String, button: &'static str) -> ConfirmPage {
    ConfirmPage::new(member.chrome(heading.clone()), heading, text, action, button, "/team".to_owned())
}

/// The confirmation of removing a member (owners), or of leaving when it is the member themself.
pub(crate) async fn confirm_remove(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(id): PagePath<String>,
) -> PageResult<ConfirmPage> {
    let target = find_member(&state, &member, &id).await?;
    if target.member_id == member.id.as_uuid() {
        return confirm_leave(State(state), member).await;
    }
    member.may_change(TeamRole::Owner)?;
    let name = current(&member)?.name.clone();
    Ok(confirm(
        &member,
        format!("Remove {} from {name}?", target.email),
        format!(
            "{} loses access to this team's queues, tokens, hosts and billing at once. Management keys they \
             created keep working until an admin revokes them. Invite them again to bring them back.",
            target.email
        ),
        format!("/team/members/{id}/remove"),
        "Remove member",
    ))
}

pub(crate) async fn remove(
    State(state): State<ConsoleState>,
    member: CurrentMember,
    PagePath(id): PagePath<String>,
    form: FormData,
) -> PageResult {
    let target = find_member(&state, &member, &id).await?;
    if target.member_id == member.id.as_uuid() {
        return leave(State(state), member, form).await;
    }
    member.may_change(TeamRole::Owner)?;
    let act = async {
        let result = manage::remove(state.control(), &member.caller, target.member_id)
            .await
            .map(|()| format!("Removed {} from the team.", target.email))
            .map_err(ConsoleError::from);
        Ok(Outcome::flash_or_refused("/team", result))
    };
    form::run(&state, &member, &form, act).await
}

/// The team the pages act on, as the member's list of teams has it.
fn current(member: &CurrentMember) -> PageResult<&TeamSummary> {
    member.teams.iter().find(|t| t.id == member.team).ok_or(ConsoleError::NotFound)
}

pub(crate) async fn confirm_leave(
    State(_state): State<ConsoleState>,
    member: CurrentMember,
) -> PageResult<ConfirmPage> {
    if current(&member)?.personal {
        return Err(ConsoleError::BadRequest("Your personal team is yours alone: it goes with your account.".into()));
    }
    member.may_change(TeamRole::Viewer)?;
    let name = current(&member)?.name.clone();
    Ok(confirm(
        &member,
        format!("Leave {name}?"),
        "You lose access to this team's queues at once; the console goes back to your personal team. An owner \
         can invite you again."
            .to_owned(),
        "/team/leave".to_owned(),
        "Leave team",
    ))
}

/// `POST /team/leave`: the member leaves the team; the console goes back to their personal team.
pub(crate) async fn leave(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    member.may_change(TeamRole::Viewer)?;
    let name = current(&member)?.name.clone();
    let act = async {
        let left = manage::remove(state.control(), &member.caller, member.id.as_uuid()).await;
        Ok(back_to_personal(&state, &member, left, format!("You left {name}.")))
    };
    form::run(&state, &member, &form, act).await
}

/// After leaving or deleting the team: done, and the console goes back to the personal team.
fn back_to_personal(state: &ConsoleState, member: &CurrentMember, done: ApiResult<()>, message: String) -> Outcome {
    match done {
        Ok(()) => Outcome::answer("/", switch_to(state, member, member.id.as_uuid(), "/", &message)),
        Err(err) => Outcome::refused(err),
    }
}

pub(crate) async fn confirm_delete(
    State(_state): State<ConsoleState>,
    member: CurrentMember,
) -> PageResult<ConfirmPage> {
    if current(&member)?.personal {
        return Err(ConsoleError::BadRequest(
            "Your personal team is deleted with your account, not on its own.".into(),
        ));
    }
    member.may_change(TeamRole::Owner)?;
    let name = current(&member)?.name.clone();
    Ok(confirm(
        &member,
        format!("Delete the team {name}?"),
        "Its members lose access, its management keys are revoked and its pending invites withdrawn. A team \
         that still has queues, hosts or domains cannot be deleted: delete them first."
            .to_owned(),
        "/team/delete".to_owned(),
        "Delete team",
    ))
}

/// `POST /team/delete` (owners): an empty shared team goes; the console returns to the personal team.
pub(crate) async fn delete(State(state): State<ConsoleState>, member: CurrentMember, form: FormData) -> PageResult {
    member.may_change(TeamRole::Owner)?;
    let name = current(&member)?.name.clone();
    let act = async {
        let deleted = manage::delete_team(state.control(), &member.caller).await;
        Ok(back_to_personal(&state, &member, deleted, format!("Deleted the team {name}.")))
    };
    form::run(&state, &member, &form, act).await
}
